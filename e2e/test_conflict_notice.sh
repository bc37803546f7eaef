#!/usr/bin/env bash
# Issue 46.2: a conflict a person notices. In a desktop session (DISPLAY set, notify-send installed)
# the device that opens a conflict shows a desktop notification naming the path (a notify-send of
# this test's records its arguments); every command that syncs or changes the store then prints a
# line on stderr while the conflict is open, and stops once it is resolved. `notify_conflicts =
# false` turns the notification off.
source "$(dirname "$0")/lib.sh"

mkdir -p "$T/bin"
cat >"$T/bin/notify-send" <<'SH'
#!/bin/sh
printf '%s|' "$@" >>"$NOTIFIED"; printf '\n' >>"$NOTIFIED"
SH
chmod +x "$T/bin/notify-send"
export NOTIFIED="$T/notified"

init_pair 50
printf 'base\n' >"$(data_of phone)/plan.txt"
start_device phone
start_device watch
wait_until test -f "$(data_of watch)/plan.txt"
stop_device watch
stop_device phone
printf 'the phone edits it\n' >"$(data_of phone)/plan.txt"
printf 'the watch edits it\n' >"$(data_of watch)/plan.txt"
# Both agents in a desktop session, the watch's notifications off.
sed -i "s/^# notify_conflicts = true\$/notify_conflicts = false/" "$T/watch/syncagent.toml"
grep -q "^notify_conflicts = false" "$T/watch/syncagent.toml" || fail "could not turn notify_conflicts off on the watch"
PATH="$T/bin:$PATH" DISPLAY=:99 start_device phone
PATH="$T/bin:$PATH" DISPLAY=:99 start_device watch
switch_to phone
wait_until test -s "$NOTIFIED"
# The watch has the record too (it merged, or was told) before its silence counts.
wait_until eval '[ "$(on watch status_field conflicts open)" = 1 ]'
sleep 1
notes=$(cat "$NOTIFIED")
assert_contains "$notes" "conflict on plan.txt" "the notification names the path"
assert_contains "$notes" "syncagent conflicts" "the notification says what to do"
assert_not_contains "$notes" "syncagent (watch)" "the watch's notifications are off"

err=$("$SYNCAGENT" sync --config "$CONFIG" 2>&1 >/dev/null) || fail "sync failed: $err"
assert_contains "$err" "1 conflict open (plan.txt)" "sync's stderr while the conflict is open"
"$SYNCAGENT" resolve --all --keep newest --config "$CONFIG" >/dev/null 2>&1 || fail "resolve failed"
err=$("$SYNCAGENT" sync --config "$CONFIG" 2>&1 >/dev/null) || fail "sync failed: $err"
assert_not_contains "$err" "conflict" "sync's stderr once resolved"
stop_device phone
stop_device watch
log "ok"
