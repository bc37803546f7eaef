#!/usr/bin/env bash
# Issue 11, systemd's notify protocol, with this test playing systemd's side: a datagram socket at
# $NOTIFY_SOCKET (a path, then an abstract "@name"), WATCHDOG_USEC set. The agent must say READY=1
# once its watches are in place (a file written right after READY=1 is committed), STATUS= with a
# one-line summary (and the start-up commit's progress), WATCHDOG=1 again and again, and STOPPING=1
# on SIGTERM before it exits 0. Without NOTIFY_SOCKET nothing is sent and the agent runs as before.
source "$(dirname "$0")/lib.sh"

init_agent notify 50
python3 - "$DATA" <<'PY'
import os, sys
for i in range(12000):  # a start-up commit big enough to report progress
    d = f"{sys.argv[1]}/start/d{i // 1000:02}"
    os.makedirs(d, exist_ok=True)
    with open(f"{d}/f{i}.txt", "w") as f: f.write(f"{i}\n")
PY

# systemd's side: collect every datagram into $T/notify.<mode>.log, one message per line ("|" for \n)
listen() {
    python3 - "$1" "$2" <<'PY' &
import socket, sys
address, out = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("\0" + address[1:] if address.startswith("@") else address)
open(out + ".ready", "w").close()
with open(out, "a", buffering=1) as f:
    while True:
        data = s.recv(4096)
        f.write(data.decode().replace("\n", "|") + "\n")
PY
    track_pid $!
    wait_until test -e "$2.ready"
}
messages() { cat "$T/notify.$1.log" 2>/dev/null; }
count_of() { messages "$1" | tr '|' '\n' | grep -c "^$2\$" || true; }
watchdogs_at_least() { [ "$(count_of "$1" WATCHDOG=1)" -ge "$2" ]; }

run_with_systemd() { # MODE SOCKET
    local mode=$1 sock=$2
    listen "$sock" "$T/notify.$mode.log"
    NOTIFY_SOCKET=$sock WATCHDOG_USEC=1000000 run_agent
    wait_until grep -q "READY=1" "$T/notify.$mode.log"
    # the watches were in place before READY=1: a file written now is committed
    printf 'after ready (%s)\n' "$mode" >"$DATA/after-ready-$mode.txt"
    wait_until head_file_matches "after-ready-$mode.txt"
    # WATCHDOG=1 keeps coming (every WATCHDOG_USEC/2), and a STATUS= line says what the agent does
    wait_until watchdogs_at_least "$mode" 4
    wait_until grep -q "STATUS=watching $DATA; 0 open conflicts" "$T/notify.$mode.log"
    local pid=$AGENT_PID
    stop_agent TERM
    wait_until grep -q "STOPPING=1" "$T/notify.$mode.log"
    local ready_line stopping_line
    ready_line=$(grep -n "READY=1" "$T/notify.$mode.log" | head -1 | cut -d: -f1)
    stopping_line=$(grep -n "STOPPING=1" "$T/notify.$mode.log" | head -1 | cut -d: -f1)
    assert_le "$ready_line" "$stopping_line" "READY=1 before STOPPING=1 ($mode)"
    assert_contains "$(messages "$mode" | head -1)" "READY=1|STATUS=starting" "the first message ($mode)"
    assert_contains "$(messages "$mode" | head -1)" "MAINPID=$pid" "MAINPID ($mode)"
}

# a path socket; the start-up commit of 12,000 files reports progress through STATUS= and status
run_with_systemd path "$T/notify.sock"
grep -q "STATUS=start-up commit: [0-9]* of 12000" "$T/notify.path.log" \
    || grep -q "STATUS=starting" "$T/notify.path.log" || fail "no start-up STATUS= line: $(head -3 "$T/notify.path.log")"
assert_eq 12000 "$(head_files | tr '\0' '\n' | grep -c '^start/')" "files of the start-up commit"

# an abstract socket name ("@..."), as systemd uses for user services in containers
run_with_systemd abstract "@syncagent-test-$$"

# without NOTIFY_SOCKET: nothing is sent anywhere, the agent runs as always
before=$(wc -l <"$T/notify.path.log")
run_agent
printf 'no systemd\n' >"$DATA/no-systemd.txt"
wait_until head_file_matches no-systemd.txt
stop_agent TERM
assert_eq "$before" "$(wc -l <"$T/notify.path.log")" "datagrams without NOTIFY_SOCKET"
log "systemd notify protocol: ok"
