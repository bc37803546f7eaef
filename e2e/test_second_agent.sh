#!/usr/bin/env bash
# Only one agent runs per state directory: a second `run` on the same state exits non-zero and its
# message names the pid of the agent that holds it; the first agent goes on working.
source "$(dirname "$0")/lib.sh"

start_agent phone
first=$AGENT_PID

second_run() { # CONFIG: run a second agent, at most 30 s; sets rc, out, err
    rc=0
    timeout 30 "$SYNCAGENT" run --config "$1" >"$T/second.out" 2>"$T/second.err" || rc=$?
    out=$(cat "$T/second.out"); err=$(cat "$T/second.err")
    [ "$rc" != 124 ] || fail "a second agent on the same state directory was still running after 30 s"
    [ "$rc" != 0 ] || fail "a second agent on the same state directory exited 0 (stderr: $err)"
    log "second agent: exit $rc: $err"
    [[ "$err" =~ (^|[^0-9])$first([^0-9]|$) ]] || fail "the second agent's stderr does not name pid $first: $err"
}

# the same config
second_run "$CONFIG"

# another config file (another data directory) pointing at the same state directory
other="$T/other.toml"
sed -e "s|^data = .*|data = \"$T/other-data\"|" "$CONFIG" >"$other"
mkdir -p "$T/other-data"
second_run "$other"

# the first agent is still the one running, and still commits
agent_alive || fail "the first agent died when a second one was started"
assert_eq "$first" "$(status_field pid)" "pid in status"
printf 'still here\n' >"$DATA/still.txt"
wait_until head_file_matches still.txt
stop_agent
