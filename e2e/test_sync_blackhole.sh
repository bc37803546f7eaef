#!/usr/bin/env bash
# Issue 3, a black-holed network peer: a server on loopback accepts TCP connections and never says a
# word. The phone peers with git://127.0.0.1:PORT/x (polled every second). The agent stays responsive
# all along (`status --json` answers within a few seconds, every time), local changes keep being
# committed, and once the fetch timeout (20 s) has passed, status shows an error saying the peer did not
# answer and the fetch was abandoned; then the fetch is retried (a new connection reaches the server).
# SIGTERM still stops the agent cleanly.
source "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || fail "this test needs python3 for its black-hole server"

# the black hole: accept, never answer, never close; count the connections on which a client sent a
# request (the agent's fetches; its TCP probe connects and closes without a word)
python3 - "$T/blackhole.port" "$T/blackhole.count" <<'PY' >"$T/blackhole.log" 2>&1 &
import os, select, socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(64)
with open(sys.argv[1] + ".tmp", "w") as f: f.write(str(s.getsockname()[1]))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
conns, asked, requests = [], set(), 0
while True:
    ready, _, _ = select.select([s] + conns, [], [])
    for r in ready:
        if r is s:
            conns.append(s.accept()[0])
            continue
        data = r.recv(4096)
        if not data:                      # the client closed: forget it
            conns.remove(r); asked.discard(r); r.close()
        elif r not in asked:              # a request: hold it forever without answering
            asked.add(r); requests += 1
            with open(sys.argv[2], "w") as f: f.write(str(requests))
PY
server_pid=$!
track_pid "$server_pid"
wait_until test -s "$T/blackhole.port"
port=$(cat "$T/blackhole.port")
url="git://127.0.0.1:$port/x"
requests() { cat "$T/blackhole.count" 2>/dev/null || echo 0; }

init_device phone 50 "watch=$url"
set_peer watch poll_seconds 1
start_device phone
wait_until test "$(requests)" -ge 1     # the agent is fetching from the black hole

# responsive_round I: status answers within 5 s, and a new file is committed
responsive_round() {
    local i=$1 js
    js=$(timeout 5 "$SYNCAGENT" status --config "$CONFIG" --json) \
        || fail "status --json did not answer within 5 s (round $i) while a fetch hangs"
    assert_eq true "$(json_get running <<<"$js")" "running (round $i)"
    printf 'local change %s\n' "$i" >"$DATA/f$i.txt"
    wait_until head_file_matches "f$i.txt"
}
abandoned() { peer_get phone watch lastError | grep -Eiq 'no answer|abandon|stuck'; }

start=$(date +%s)
i=0
until abandoned; do
    i=$((i + 1))
    responsive_round "$i"
    [ $(( $(date +%s) - start )) -lt 40 ] || fail "no error about the hanging fetch in status after 40 s; lastError: $(peer_get phone watch lastError)"
    sleep 0.3
done
log "after $(( $(date +%s) - start )) s, $i local commits: lastError = $(peer_get phone watch lastError)"
assert_ge "$i" 5 "local commits made while the fetch hung"
assert_eq false "$(peer_get phone watch reachable)" "reachable of the black-holed peer"
responsive_round after
assert_head_matches_data

# the abandoned fetch is retried: the agent asks again
WAIT_TIMEOUT=10 wait_until test "$(requests)" -ge 2
responsive_round retried

stop_device phone
kill -TERM "$server_pid"
wait "$server_pid" 2>/dev/null || true
