#!/usr/bin/env bash
# `syncagent sync` with no agent running (it takes the store lock and fetches itself) against a
# black-holed git:// peer (a server that accepts the connection and never answers) gives up: it exits
# non-zero within 60 s (the fetch timeout, timeout_seconds, is 5 s here), naming the peer; it must not hang. A second run
# finds the store lock free (the first left nothing behind) and fails the same way.
source "$(dirname "$0")/lib.sh"

start_blackhole
url="git://127.0.0.1:$BLACKHOLE_PORT/x"
init_device phone 50 "hole=$url"
set_peer hole timeout_seconds 5   # default 20 s; the same mechanism, a shorter wait
printf 'a local change\n' >"$DATA/local.txt"

# run_sync N: `syncagent sync` with no agent; it must fail, within 60 s, naming the peer
run_sync() {
    local n=$1 t0 rc=0 secs
    t0=$(date +%s)
    timeout --kill-after=5 90 "$SYNCAGENT" sync --config "$CONFIG" >"$T/sync$n.out" 2>&1 || rc=$?
    secs=$(( $(date +%s) - t0 ))
    [ "$rc" != 124 ] && [ "$rc" != 137 ] || fail "syncagent sync (run $n, no agent) against a black-holed peer was still running after 90 s (killed by timeout); output: $(head -c 500 "$T/sync$n.out")"
    [ "$rc" != 0 ] || fail "syncagent sync (run $n) succeeded against a black-holed peer: $(head -c 500 "$T/sync$n.out")"
    assert_le "$secs" 60 "seconds syncagent sync (run $n) took to give up on the black-holed peer"
    assert_contains "$(cat "$T/sync$n.out")" hole "sync's output (run $n)"
    log "run $n: exit $rc after ${secs}s: $(head -n 3 "$T/sync$n.out" | tr '\n' ' ')"
}
run_sync 1
test "$(blackhole_requests)" -ge 1 || fail "sync never sent a request to the black-holed peer (it did not try the fetch)"
# the local change was committed all the same, and no agent was ever started
head_has local.txt || fail "sync (no agent) did not commit the local change"
assert_eq false "$(status_field running)" "running"
run_sync 2
