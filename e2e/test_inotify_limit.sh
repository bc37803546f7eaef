#!/usr/bin/env bash
# Out of inotify instances (the 129th agent of one user, or editors and IDEs holding the rest): the
# agent does not start, exits non-zero, and says which limit it hit and the sysctl that raises it, not
# "check that the directory exists". The limit is set to 0 inside a user namespace of this test's
# own (/proc/sys/user/max_inotify_instances), so nothing else on the machine is touched.
source "$(dirname "$0")/lib.sh"

unshare --user --map-root-user true 2>/dev/null || fail "this test needs user namespaces (unshare --user)"
init_agent phone
printf 'kept\n' >"$DATA/a.txt"
rc=0
timeout 60 unshare --user --map-root-user sh -c 'echo 0 >/proc/sys/user/max_inotify_instances && exec "$0" run --config "$1"' \
    "$SYNCAGENT" "$CONFIG" >"$T/run.out" 2>&1 || rc=$?
msg=$(cat "$T/run.out")
log "exit $rc: $msg"
[ "$rc" != 124 ] || fail "the agent kept running without a watch"
[ "$rc" != 0 ] || fail "the agent exited 0 without a watch: $msg"
assert_contains "$msg" "max_user_instances" "the limit it hit"
assert_contains "$msg" "sysctl fs.inotify.max_user_instances=" "the command that raises it"
assert_contains "$msg" "$DATA" "the directory it could not watch"
assert_not_contains "$msg" "Check that the directory exists" "the wrong advice"
log "ok: out of instances, the agent says which limit and how to raise it"

# One instance is all an agent needs (issue 45): its data directory and a path peer's refs share
# it, so a user's 128 instances run 128 agents. With the limit at 1, the laptop's agent starts,
# watches the tv's refs (no "fetched every N s" fallback) and gets the tv's change.
init_device tv 100 "laptop=$(store_of laptop)"
init_device laptop 100 "tv=$(store_of tv)"
start_device tv
switch_to laptop
RUN_SEQ=$((RUN_SEQ + 1))
LOG="$DIR/run-$RUN_SEQ.log"
unshare --user --map-root-user sh -c 'echo 1 >/proc/sys/user/max_inotify_instances && exec "$0" run --config "$1" --log-level info' \
    "$SYNCAGENT" "$CONFIG" >"$DIR/run-$RUN_SEQ.out" 2>"$LOG" &
AGENT_PID=$!
track_pid "$AGENT_PID"
DEVICE_PID[laptop]=$AGENT_PID
DEVICE_LOG[laptop]=$LOG
wait_until agent_reports_running
printf 'from the tv\n' >"$(data_of tv)/show.txt"
wait_until test -f "$(data_of laptop)/show.txt"
assert_eq "from the tv" "$(cat "$(data_of laptop)/show.txt")" "the tv's file on the laptop"
assert_not_contains "$(cat "$LOG")" "max_user_instances" "a watcher of the laptop's agent out of instances"
assert_not_contains "$(cat "$LOG")" "fetched every" "the laptop polling the tv instead of watching its refs"
stop_device laptop
stop_device tv
log "ok: one inotify instance runs an agent with a path peer"
