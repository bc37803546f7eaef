#!/usr/bin/env bash
# `make demo`: a phone and a watch agent in a temporary directory, syncing, conflicting, settling.
set -euo pipefail
BIN=${SYNCAGENT:-$(cd "$(dirname "$0")/.." && pwd)/.build/release/syncagent}
DIR=$(mktemp -d /tmp/syncagent-demo.XXXXXX)
PHONE_PID= WATCH_PID=
cleanup() { kill $PHONE_PID $WATCH_PID 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$DIR"; }
trap cleanup EXIT
# Bold headings on a terminal only: piped or logged output gets no escape codes.
if [ -t 1 ]; then say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }; else say() { printf '\n== %s\n' "$*"; }; fi
run() { printf '$ %s\n' "$*"; "$@"; }
cd "$DIR"
start() {  # start NAME: run the agent in the background until its status answers
    env --default-signal=INT "$BIN" run --config "$1.toml" 2>> "$1.log" &
    eval "${1^^}_PID=$!"
    until "$BIN" status --config "$1.toml" --json 2>/dev/null | grep -q '"running":true'; do sleep 0.1; done
}
settle() { sleep 1.5; }

say "two devices, each with its own data directory and store, each the other's peer"
run "$BIN" init --device phone --data phone/data --state phone/state --config phone.toml --peer watch=watch/state/store.git
run "$BIN" init --device watch --data watch/data --state watch/state --config watch.toml --peer phone=phone/state/store.git
sed -i 's/^# debounce_ms = 200/debounce_ms = 100/' phone.toml watch.toml
start phone; start watch

say "the phone app writes; the watch has it within a second"
mkdir -p phone/data/notes
echo "buy milk" > phone/data/notes/today.txt
echo '{"steps": 4000}' > phone/data/health.json
settle
run ls -R watch/data
run cat watch/data/notes/today.txt

say "the watch app writes back"
echo "walked 5000 steps" > watch/data/notes/activity.txt
settle
run ls phone/data/notes

say "the watch goes offline; both devices change notes/today.txt"
kill -TERM $WATCH_PID; wait $WATCH_PID || true
echo "buy milk and bread (phone)" > phone/data/notes/today.txt
settle
echo "buy oat milk (watch, later)" > watch/data/notes/today.txt
say "the watch comes back: one conflict record, same id on both; both hold the newer version, no markers"
start watch
settle
run "$BIN" status --config phone.toml
run "$BIN" conflicts --config phone.toml
run "$BIN" conflicts --config watch.toml --json
ID=$("$BIN" conflicts --config phone.toml --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
run cat phone/data/notes/today.txt
run "$BIN" show "$ID" --version phone --config watch.toml

say "settle it on the watch (it did not detect it): keep both versions"
run "$BIN" resolve "$ID" --keep both --config watch.toml
settle
run "$BIN" conflicts --all --config phone.toml
run ls phone/data/notes

say "both devices are identical, and both stores point at the same commit"
run diff -r phone/data watch/data && echo "data directories identical"
run git --git-dir=phone/state/store.git rev-parse main
run git --git-dir=watch/state/store.git rev-parse main
run git --git-dir=phone/state/store.git log --oneline --graph main | head -20

say "every version stays: the history of notes/today.txt (on the phone), and the first one put back on the watch"
run "$BIN" history notes/today.txt --config phone.toml
FIRST=$("$BIN" history notes/today.txt --config phone.toml --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[-1]["commit"])')
run "$BIN" restore notes/today.txt --at "$FIRST" --config watch.toml
settle
run cat phone/data/notes/today.txt
