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
log "ok"
