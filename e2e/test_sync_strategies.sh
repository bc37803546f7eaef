#!/usr/bin/env bash
# Issue 3, resolution callbacks: [[resolver]] strategies settle conflicts automatically with identical
# bytes on both devices and keep resolved records; a failing `command` leaves the record open; the
# settings-agent sample (a program embedding the agent with a Swift ConflictResolver) merges settings
# files field by field.
source "$(dirname "$0")/lib.sh"

resolvers() {  # resolvers NAME: the same rules on NAME
    cat >>"$T/$1/syncagent.toml" <<'TOML'

[[resolver]]
path = "*.json"
strategy = "json"

[[resolver]]
path = "logs/*.log"
strategy = "union"

[[resolver]]
path = "pinned/*"
strategy = "keep:phone"

[[resolver]]
path = "docs/*"
strategy = "both"

[[resolver]]
path = "latest/*"
strategy = "newest"

[[resolver]]
path = "cmd/*"
strategy = "command"
command = ["sh", "-c", "cat \"$1\" \"$2\" > \"$3\"", "merge", "{ours}", "{theirs}", "{out}"]

[[resolver]]
path = "failing/*"
strategy = "command"
command = ["sh", "-c", "echo merge-tool-refused >&2; exit 4"]
TOML
}

init_pair 50
resolvers phone
resolvers watch
D=$(data_of phone)
mkdir -p "$D/logs" "$D/pinned" "$D/docs" "$D/latest" "$D/cmd" "$D/failing"
printf '{"theme": "light", "volume": 3}\n' >"$D/app.json"
printf 'boot\n' >"$D/logs/app.log"
for f in pinned/p.txt docs/d.txt latest/l.txt cmd/c.txt failing/f.txt; do printf 'base\n' >"$D/$f"; done
start_device phone
start_device watch
wait_converged
stop_device watch

now=$(date +%s)
printf '{"theme": "dark", "volume": 3}\n' | put phone app.json $((now - 30))
printf 'boot\nphone line\n' | put phone logs/app.log $((now - 30))
for f in pinned/p.txt docs/d.txt latest/l.txt cmd/c.txt failing/f.txt; do printf 'phone\n' | put phone "$f" $((now - 30)); done
on phone wait_until pending_is 0
on phone wait_until head_matches_data
printf '{"theme": "light", "volume": 7}\n' | put watch app.json $((now - 10))
printf 'boot\nwatch line\n' | put watch logs/app.log $((now - 10))
for f in pinned/p.txt docs/d.txt latest/l.txt cmd/c.txt failing/f.txt; do printf 'watch\n' | put watch "$f" $((now - 10)); done
start_device watch
wait_converged

W=$(data_of watch)
python3 - "$W/app.json" <<'PY' || fail "json strategy did not merge keys: $(cat "$W/app.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d == {"theme": "dark", "volume": 7}, d
PY
assert_eq "$(printf 'boot\nphone line\nwatch line\n')" "$(cat "$W/logs/app.log")" "union of the log lines"
assert_eq phone "$(cat "$W/pinned/p.txt")" "keep:phone keeps the phone's older version"
assert_eq watch "$(cat "$W/latest/l.txt")" "newest keeps the watch's newer version"
assert_eq watch "$(cat "$W/docs/d.txt")" "both: the newer version keeps the path"
copy=$(cd "$W/docs" && ls d.conflict-phone-*.txt 2>/dev/null || true)
[ -n "$copy" ] || fail "both: no conflict copy of the phone's version in docs/: $(ls "$W/docs")"
assert_eq phone "$(cat "$W/docs/$copy")" "both: the conflict copy holds the other version"
assert_eq "$(printf 'phone\nwatch\n')" "$(cat "$W/cmd/c.txt")" "command: the program's output ({ours} = phone, {theirs} = watch)"
assert_eq watch "$(cat "$W/failing/f.txt")" "a failing command leaves the newer version in place"

# Records: every automatic one resolved with its strategy, the failing command's one open; same on both.
for dev in phone watch; do
    assert_eq json "$(conflict_field $dev app.json resolution strategy)" "$dev: app.json's strategy"
    assert_eq union "$(conflict_field $dev logs/app.log resolution strategy)" "$dev: union record"
    assert_eq keep:phone "$(conflict_field $dev pinned/p.txt resolution strategy)" "$dev: keep record"
    assert_eq both "$(conflict_field $dev docs/d.txt resolution strategy)" "$dev: both record"
    assert_eq command "$(conflict_field $dev cmd/c.txt resolution strategy)" "$dev: command record"
    assert_eq open "$(conflict_field $dev failing/f.txt status)" "$dev: the failing command's record stays open"
done
assert_eq "$(conflicts_json phone --all | python3 -c 'import json,sys; print(sorted(r["id"] for r in json.load(sys.stdin)))')" \
          "$(conflicts_json watch --all | python3 -c 'import json,sys; print(sorted(r["id"] for r in json.load(sys.stdin)))')" "same record ids"
logged_refusal() { cat "${DEVICE_LOG[phone]}" "${DEVICE_LOG[watch]}" | grep -q "merge-tool-refused"; }
poll_until logged_refusal || fail "the failing program's stderr is not in the log"

# ---- the Swift resolver sample -------------------------------------------------------------------
SETTINGS_AGENT=$(dirname "$SYNCAGENT")/settings-agent
[ -x "$SETTINGS_AGENT" ] || fail "settings-agent sample not built at $SETTINGS_AGENT (make build builds it)"
stop_device phone
stop_device watch
printf '{"brightness": 5, "units": "km", "alarm": "7:00"}\n' | put phone prefs.settings.json $((now - 5))
# Sync the base to the watch with `syncagent sync` (no agents running: it takes the lock itself).
"$SYNCAGENT" sync --config "$T/phone/syncagent.toml" >/dev/null || fail "phone sync failed"
"$SYNCAGENT" sync --config "$T/watch/syncagent.toml" >/dev/null || fail "watch sync failed"
same_file watch prefs.settings.json "$D/prefs.settings.json" || fail "the settings base did not reach the watch"
printf '{"brightness": 9, "units": "km", "alarm": "7:00"}\n' | put phone prefs.settings.json $((now - 3))
printf '{"brightness": 5, "units": "miles", "alarm": "6:30"}\n' | put watch prefs.settings.json $((now - 1))
"$SYNCAGENT" sync --config "$T/phone/syncagent.toml" >/dev/null || fail "phone commit failed"
# The watch runs the embedding program: it detects the conflict and its resolver merges the fields.
"$SETTINGS_AGENT" --config "$T/watch/syncagent.toml" >"$T/settings-agent.out" 2>"$T/settings-agent.log" &
SA_PID=$!
track_pid $SA_PID
poll_until python3 - "$W/prefs.settings.json" <<'PY' || fail "settings-agent did not merge field by field: $(cat "$W/prefs.settings.json"); log: $(tail -5 "$T/settings-agent.log")"
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if d == {"brightness": 9, "units": "miles", "alarm": "6:30"} else 1)
PY
poll_until record_status_is watch prefs.settings.json resolved || fail "the sample's resolution is not recorded"
assert_eq settings-fields "$(conflict_field watch prefs.settings.json resolution strategy)" "sample resolver name"
# The sample also listens to the agent's events (AgentService.events()), as an app's UI would.
wait_until grep -q "settings reloaded: prefs.settings.json (from phone" "$T/settings-agent.out"
kill -TERM $SA_PID; wait $SA_PID || fail "settings-agent did not exit 0 on SIGTERM"
