#!/usr/bin/env bash
# Issue 24: SyncAgentKit, used both ways by the sample apps built only on it. The phone app runs the
# agent inside itself (embedded); the watch app is a client of the watch's `syncagent run`.
# - a value set on one shows up in the other's observer, with where it came from;
# - a conflict made on purpose reaches the watch's resolver typed (base, each device's version),
#   and the merged value lands on both devices;
# - a version that is not a Settings (bytes written by hand) reaches the observer and the
#   resolver as raw bytes, never dropped;
# - a resolver that throws leaves the conflict open (`syncagent conflicts` lists it);
# - a slow observer (two seconds per update) still ends on the last value, and its app lives on.
source "$(dirname "$0")/lib.sh"

APPS=$(dirname "$SYNCAGENT")
for app in phone-app watch-app; do [ -x "$APPS/$app" ] || fail "$APPS/$app is not built (make builds it with syncagent)"; done
init_pair 50
cfg() { printf '%s/%s/syncagent.toml\n' "$T" "$1"; }
settings_of() { cat "$(data_of "$1")/settings.json" 2>/dev/null; }
settings_are() { # DEVICE THEME UNITS GOAL: the data directory's settings.json holds these fields
    python3 - "$(data_of "$1")/settings.json" "$2" "$3" "$4" <<'PY' 2>/dev/null
import json, sys
s = json.load(open(sys.argv[1]))
sys.exit(0 if (s["theme"], s["units"], str(s["goalMinutes"])) == tuple(sys.argv[2:5]) else 1)
PY
}
PHONE_APP_PID=""
phone_app() { # run the phone app (embedded agent) in the background, output to $T/phone-app.N.out
    PHONE_RUN=$((${PHONE_RUN:-0} + 1))
    "$APPS/phone-app" --config "$(cfg phone)" "$@" >"$T/phone-app.$PHONE_RUN.out" 2>"$T/phone-app.$PHONE_RUN.err" &
    PHONE_APP_PID=$!
    track_pid $PHONE_APP_PID
}
stop_phone_app() {
    kill -TERM "$PHONE_APP_PID"
    wait "$PHONE_APP_PID" || fail "phone-app exited $? on SIGTERM: $(tail -5 "$T/phone-app.$PHONE_RUN.err")"
}
watch_app() { # NAME ARGS...: a watch app client in the background, output to $T/NAME.out
    local name=$1; shift
    "$APPS/watch-app" --config "$(cfg watch)" "$@" >"$T/$name.out" 2>"$T/$name.err" &
    WATCH_APP_PID=$!
    track_pid $WATCH_APP_PID
}
out_has() { grep -qF -- "$2" "$T/$1.out"; }

log "both ways: the phone embeds the agent, the watch app is a client of the watch's agent"
start_device watch
watch_app watch-app --resolver merge
WATCH_APP=$WATCH_APP_PID
wait_until out_has watch-app "watch sees settings: none (current)"
phone_app --theme dark --workout run:25
wait_until grep -qF "phone set settings: theme=dark units=km goal=30 (commit" "$T/phone-app.1.out"
wait_until out_has watch-app "watch sees settings: theme=dark units=km goal=30 (from phone)"
wait_until grep -qE "watch sees workout workouts/[0-9]+\.json: run 25 min from phone" "$T/watch-app.out"

log "a client's set goes through the running agent and reaches the embedded phone's observer"
"$APPS/watch-app" --config "$(cfg watch)" --goal 45 --once >"$T/watch-set.out" 2>&1 || fail "watch-app --once: $(cat "$T/watch-set.out")"
assert_contains "$(cat "$T/watch-set.out")" "watch set settings: theme=dark units=km goal=45 (commit" "the client's set returns its commit"
wait_until grep -qF "phone sees settings: theme=dark units=km goal=45 (from watch)" "$T/phone-app.1.out"

log "a conflict made on purpose: both change the settings while apart"
stop_phone_app
stop_device watch
"$APPS/phone-app" --config "$(cfg phone)" --units mi --once >"$T/phone-set.out" 2>&1 || fail "phone-app --once: $(cat "$T/phone-set.out")"
"$APPS/watch-app" --config "$(cfg watch)" --theme light --once >"$T/watch-set2.out" 2>&1 || fail "watch-app --once with no agent: $(cat "$T/watch-set2.out")"
assert_contains "$(cat "$T/watch-set2.out")" "(commit" "with no agent running, a client's set is committed under the lock"
start_device watch
phone_app
wait_until out_has watch-app "watch resolver got"
assert_contains "$(grep "watch resolver got" "$T/watch-app.out" | head -1)" \
    "base theme=dark units=km goal=45; phone: theme=dark units=mi goal=45; watch: theme=light units=km goal=45" \
    "the resolver sees the base and each device's version, typed"
wait_until out_has watch-app "watch resolver merged: theme=light units=mi goal=45"
wait_until settings_are watch light mi 45
wait_until settings_are phone light mi 45
wait_until grep -qF "phone sees settings: theme=light units=mi goal=45" "$T/phone-app.$PHONE_RUN.out"
on watch wait_until bash -c "[ \"\$('$SYNCAGENT' conflicts --config '$(cfg watch)' --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')\" = 0 ]"

log "a version that is not a Settings reaches the observer and the resolver as raw bytes"
printf 'not json\n' >"$T/garbage"
cp "$T/garbage" "$(data_of phone)/settings.json"
wait_until out_has watch-app "watch sees settings: undecodable (9 bytes: not json"
wait_until same_file watch settings.json "$T/garbage"
# and inside a conflict: the phone's garbage against a watch edit made while apart
stop_phone_app
stop_device watch
printf '{"theme":"blue","units":"km","goalMinutes":45}\n' >"$(data_of watch)/settings.json"
"$SYNCAGENT" sync --config "$(cfg watch)" >/dev/null 2>&1 || true   # commits it under the lock
printf 'still not json\n' >"$(data_of phone)/settings.json"
"$SYNCAGENT" sync --config "$(cfg phone)" >/dev/null 2>&1 || true   # commits it, then merges the watch's: a conflict
start_device watch
phone_app
wait_until grep -qF "undecodable still not json" "$T/watch-app.out"
wait_until settings_are watch blue km 45
wait_until settings_are phone blue km 45

log "a resolver that throws leaves the conflict open"
kill -TERM $WATCH_APP; wait $WATCH_APP || true
watch_app watch-app-throws --resolver throws
wait_until out_has watch-app-throws "watch sees settings:"
stop_phone_app
stop_device watch
"$APPS/phone-app" --config "$(cfg phone)" --goal 60 --once >/dev/null 2>&1 || fail "phone-app --once"
"$APPS/watch-app" --config "$(cfg watch)" --goal 15 --once >/dev/null 2>&1 || fail "watch-app --once"
start_device watch
phone_app
wait_until out_has watch-app-throws "watch resolver got"
wait_until grep -qF "the app's resolver threw" "$T/watch-app-throws.err"
open=$("$SYNCAGENT" conflicts --config "$(cfg watch)" --json | python3 -c 'import json,sys; print(" ".join(r["path"] for r in json.load(sys.stdin) if r["status"] == "open"))')
assert_eq "settings.json" "$open" "the conflict stays open after the resolver threw"
"$SYNCAGENT" resolve --config "$(cfg watch)" settings.json --keep watch >/dev/null || fail "resolve --keep watch"
wait_until settings_are phone blue km 15

log "a slow observer ends on the last value"
watch_app watch-app-slow --slow
wait_until out_has watch-app-slow "watch sees settings: theme=blue units=km goal=15 (current)"
stop_phone_app
for goal in 61 62 63 64 65; do
    "$APPS/phone-app" --config "$(cfg phone)" --goal $goal --once >/dev/null 2>&1 || fail "phone-app --once --goal $goal"
done
phone_app
wait_until settings_are watch blue km 65
wait_until out_has watch-app-slow "watch sees settings: theme=blue units=km goal=65"
kill -0 $WATCH_APP_PID || fail "the slow observer's app died: $(cat "$T/watch-app-slow.err")"

log "a key's status: synced here, and the phone has this very version"
wait_until bash -c "'$APPS/watch-app' --config '$(cfg watch)' --status --once | grep -qF 'watch status of settings.json: synced; phone: has this version, last sync 2'"
stop_phone_app
printf 'edited on the watch by hand\n' >"$(data_of watch)/settings.json"
wait_until bash -c "'$APPS/watch-app' --config '$(cfg watch)' --status --once | grep -qF 'phone: has another version'"
log "done"
