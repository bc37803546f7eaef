#!/usr/bin/env bash
# `make demo-apps`: the two sample apps built only on SyncAgentKit. The phone app runs the agent
# inside itself; the watch app is a client of the watch's `syncagent run`. A value set on the phone
# is printed by the watch's observer; a conflict made on purpose reaches the watch's resolver with
# the base and both versions; the merged value lands on both devices.
set -euo pipefail
BUILD=${BUILD:-$(cd "$(dirname "$0")/.." && pwd)/.build/release}
BIN=$BUILD/syncagent
DIR=$(mktemp -d /tmp/syncagent-demo-apps.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$DIR"; }
trap cleanup EXIT
if [ -t 1 ]; then say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }; else say() { printf '\n== %s\n' "$*"; }; fi
run() { printf '$ %s\n' "$*"; "$@"; }
cd "$DIR"
# until CMD...: wait for a condition (at most 30 s), never for a fixed time.
until_() { local i; for i in $(seq 300); do "$@" && return 0; sleep 0.1; done; echo "gave up waiting for: $*" >&2; exit 1; }
shows() { grep -qF -- "$2" "$1"; }
settings() { printf '%s: %s\n' "$1" "$(tr -d ' \n' < "$1/data/settings.json")"; }
start_watch_agent() {
    env --default-signal=INT "$BIN" run --config watch.toml 2>>watch.log & WATCH_PID=$!; PIDS+=($WATCH_PID)
    until_ bash -c "'$BIN' status --config watch.toml --json 2>/dev/null | grep -q '\"running\":true'"
}
start_phone_app() {
    "$BUILD/phone-app" --config phone.toml "$@" >>phone-app.out 2>>phone-app.log & PHONE_PID=$!; PIDS+=($PHONE_PID)
}

say "two devices, each the other's peer; the watch runs syncagent, the phone app embeds the agent"
run "$BIN" init --device phone --data phone/data --state phone/state --config phone.toml --peer watch=watch/state/store.git >/dev/null
run "$BIN" init --device watch --data watch/data --state watch/state --config watch.toml --peer phone=phone/state/store.git >/dev/null
start_watch_agent
"$BUILD/watch-app" --config watch.toml >watch-app.out 2>watch-app.log & PIDS+=($!)
until_ shows watch-app.out "watch sees settings: none (current)"

say "the phone app sets its settings and logs a workout; the watch app's observers print them"
start_phone_app --theme dark --workout run:25
until_ shows watch-app.out "from phone"
until_ shows watch-app.out "watch sees workout"
cat phone-app.out watch-app.out

say "apart, both change the settings: the phone the units, the watch the theme"
kill -TERM $PHONE_PID; wait $PHONE_PID || true
kill -TERM $WATCH_PID; wait $WATCH_PID || true
run "$BUILD/phone-app" --config phone.toml --units mi --once
run "$BUILD/watch-app" --config watch.toml --theme light --once

say "together again: the conflict reaches the watch's resolver, typed; the merged value lands on both"
: >phone-app.out
start_watch_agent
start_phone_app
until_ shows watch-app.out "watch resolver merged"
grep -F "watch resolver" watch-app.out
until_ shows phone-app.out "theme=light units=mi"
until_ bash -c "grep -q light phone/data/settings.json && grep -q mi phone/data/settings.json && cmp -s phone/data/settings.json watch/data/settings.json"
settings phone; settings watch
grep -F "phone sees settings" phone-app.out | tail -1
