#!/usr/bin/env bash
# Issue 46.3: `syncagent pause [PEER]` / `resume [PEER]`. While the phone has paused the watch, the
# phone takes nothing from it for 10 s (the watch's new file stays away), while the phone's own
# changes are still committed; `sync` with the paused peer fails saying so; the pause is in
# `status` (text and JSON) and in the events, and outlives a restart of the agent; `resume`
# brings the watch's change at once. Pausing works with no agent running too.
source "$(dirname "$0")/lib.sh"

init_pair 50
start_device watch
start_device phone
printf 'before\n' >"$(data_of watch)/before.txt"
wait_until test -f "$(data_of phone)/before.txt"

switch_to phone
out=$("$SYNCAGENT" pause watch --config "$CONFIG") || fail "pause watch failed: $out"
assert_contains "$out" "paused watch" "what pause says"
assert_eq true "$(status_field peers 0 paused)" "status --json: peers[watch].paused"
assert_contains "$("$SYNCAGENT" status --config "$CONFIG")" "PAUSED" "status text"
js=$("$SYNCAGENT" pause watch --config "$CONFIG" --json) || fail "pause --json failed: $js"
assert_eq '["watch"]' "$(json_get paused <<<"$js")" "pause --json: paused"

# Nothing comes from the watch for 10 s; the phone's own edit is committed meanwhile.
printf 'while paused\n' >"$(data_of watch)/from-watch.txt"
on watch wait_until head_has from-watch.txt
printf 'local\n' >"$(data_of phone)/local.txt"
wait_until head_has local.txt
end=$((SECONDS + 10))
while [ $SECONDS -lt $end ]; do
    [ ! -e "$(data_of phone)/from-watch.txt" ] || fail "the phone took the watch's file while the watch was paused"
    ! head_has from-watch.txt || fail "the phone merged the watch's commit while paused"
    sleep 0.2
done
rc=0; sync_out=$("$SYNCAGENT" sync --peer watch --config "$CONFIG" 2>&1) || rc=$?
[ "$rc" != 0 ] || fail "sync with a paused peer exited 0: $sync_out"
assert_contains "$sync_out" "paused" "sync with a paused peer says why"

# Across a restart: still paused.
stop_device phone
start_device phone
assert_eq true "$(status_field peers 0 paused)" "paused after a restart"
rc=0; sync_out=$("$SYNCAGENT" sync --peer watch --config "$CONFIG" 2>&1) || rc=$?
[ "$rc" != 0 ] || fail "the restarted agent synced with the paused peer: $sync_out"
assert_contains "$sync_out" "paused" "the restarted agent's sync with the paused peer"
[ ! -e "$(data_of phone)/from-watch.txt" ] || fail "the restarted phone took the paused watch's file"

out=$("$SYNCAGENT" resume watch --config "$CONFIG") || fail "resume failed: $out"
assert_contains "$out" "resumed watch" "what resume says"
wait_until test -f "$(data_of phone)/from-watch.txt"
assert_eq false "$(status_field peers 0 paused)" "status after resume"
ev=$("$SYNCAGENT" events --since 0 --config "$CONFIG")
assert_contains "$ev" '"type":"paused"' "a paused event"
assert_contains "$ev" '"type":"resumed"' "a resumed event"

# With no agent running: pause (every peer) and resume go through the lock.
stop_device phone
out=$("$SYNCAGENT" pause --config "$CONFIG") || fail "pause with no agent failed: $out"
assert_contains "$out" "paused every peer" "pause with no agent"
assert_eq '*' "$(cat "$STATE/paused")" "the pause file"
out=$("$SYNCAGENT" resume --config "$CONFIG") || fail "resume with no agent failed: $out"
[ ! -e "$STATE/paused" ] || fail "resume left $STATE/paused"
rc=0; out=$("$SYNCAGENT" pause nosuch --config "$CONFIG" 2>&1) || rc=$?
[ "$rc" != 0 ] || fail "pause of an unknown peer exited 0"
assert_contains "$out" "no peer named 'nosuch'" "an unknown peer"
stop_device watch
log "ok"
