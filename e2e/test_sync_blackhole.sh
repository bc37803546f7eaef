#!/usr/bin/env bash
# Issue 3, a black-holed network peer: a server on loopback accepts TCP connections and never says a
# word. The phone peers with git://127.0.0.1:PORT/x (polled every second). The agent stays responsive
# all along (`status --json` answers within 10 s, every time), local changes keep being
# committed, and once the fetch timeout (timeout_seconds, 5 s here) has passed, status shows an error saying the peer did not
# answer and the fetch was abandoned; then the fetch is retried (a new connection reaches the server).
# SIGTERM still stops the agent cleanly.
source "$(dirname "$0")/lib.sh"
start_blackhole
url="git://127.0.0.1:$BLACKHOLE_PORT/x"
# requests_ge N: the server has seen at least N requests (re-read at every poll)
requests_ge() { [ "$(blackhole_requests)" -ge "$1" ]; }

init_device phone 50 "watch=$url"
set_peer watch poll_seconds 1
set_peer watch timeout_seconds 5   # the default, 20 s, is the same mechanism; a short one keeps make test short
start_device phone
WAIT_TIMEOUT=60 wait_until requests_ge 1     # the agent is fetching from the black hole

# responsive_round I: status answers within 10 s, and a new file is committed
responsive_round() {
    local i=$1 js
    js=$(timeout 10 "$SYNCAGENT" status --config "$CONFIG" --json) \
        || fail "status --json did not answer within 10 s (round $i) while a fetch hangs"
    assert_eq true "$(json_get running <<<"$js")" "running (round $i)"
    printf 'local change %s\n' "$i" >"$DATA/f$i.txt"
    WAIT_TIMEOUT=30 wait_until head_file_matches "f$i.txt"
}
abandoned() { peer_get phone watch lastError | grep -Eiq 'no answer|abandon|stuck'; }

start=$(date +%s)
i=0
until abandoned; do
    i=$((i + 1))
    responsive_round "$i"
    [ $(( $(date +%s) - start )) -lt 90 ] || fail "no error about the hanging fetch in status after 90 s; lastError: $(peer_get phone watch lastError)"
    sleep 0.3
done
log "after $(( $(date +%s) - start )) s, $i local commits: lastError = $(peer_get phone watch lastError)"
assert_ge "$i" 2 "local commits made while the fetch hung"
assert_eq false "$(peer_get phone watch reachable)" "reachable of the black-holed peer"
responsive_round after
assert_head_matches_data

# the abandoned fetch is retried: the agent asks again
WAIT_TIMEOUT=90 wait_until requests_ge 2
responsive_round retried

stop_device phone
kill -TERM "$BLACKHOLE_PID"
wait "$BLACKHOLE_PID" 2>/dev/null || true
