#!/usr/bin/env bash
# `systemctl stop` right after `start`: a SIGTERM (or SIGINT) that arrives while the agent is still
# starting (lock taken, store opening, watches being installed) stops it with exit status 0, not
# with the default action of the signal (exit 143), and loses nothing: the next start commits every
# file. A tree of many directories makes start-up long enough for the signal to land inside it.
# (Found by `make soak SEED=23099`: the agent died of a SIGTERM sent 42 ms after it started.)
source "$(dirname "$0")/lib.sh"

init_agent phone
(cd "$DATA" && seq 1 8000 | sed 's|^|d|' | xargs mkdir -p && for d in d1 d2 d3; do echo "$d" >"$d/file.txt"; done)

during_start=0
for i in 1 2 3 4 5 6; do
    sig=TERM
    [ $((i % 2)) = 0 ] || sig=INT
    RUN_SEQ=$((RUN_SEQ + 1))
    LOG="$DIR/run-$RUN_SEQ.log"
    env --default-signal=INT "$SYNCAGENT" run --config "$CONFIG" --log-level info >"$DIR/run-$RUN_SEQ.out" 2>"$LOG" &
    AGENT_PID=$!
    STARTED_PIDS+=("$AGENT_PID")
    # as soon as it holds the lock (it writes its pid and role into agent.lock: 'PID run'), stop it
    n=0
    until grep -q "^$AGENT_PID " "$STATE/agent.lock" 2>/dev/null; do
        agent_alive || fail "the agent (pid $AGENT_PID) exited before it took its lock; see $LOG"
        n=$((n + 1))
        [ "$n" -lt 10000 ] || fail "the agent did not take its lock"
        sleep 0.001
    done
    stop_agent "$sig"
    : >"$STATE/agent.lock"
    ! grep -q "came while starting" "$LOG" || during_start=$((during_start + 1))
done
log "$during_start of 6 stop signals arrived before the agent finished starting"

# The earliest instant the agent's own code runs (it catches SIGTERM and SIGINT before it parses its
# arguments: seen as the signals' bits in SigCgt of /proc/PID/status): a stop then still exits 0.
# (Before that, the dynamic loader is still mapping libraries: no program can catch a signal there.)
# (The process must be the agent already: before exec it is a copy of this shell, whose handlers
# are not the agent's.)
agent_exe=$(readlink -f "$SYNCAGENT")
caught_term() {
    local m
    [ "$(readlink "/proc/$AGENT_PID/exe" 2>/dev/null)" = "$agent_exe" ] || return 1
    m=$(awk '/^SigCgt:/ {print $2}' "/proc/$AGENT_PID/status" 2>/dev/null) && [ -n "$m" ] && (( (16#$m >> 14) & 1 ))
}
for i in 1 2 3 4; do
    sig=TERM
    [ $((i % 2)) = 0 ] || sig=INT
    RUN_SEQ=$((RUN_SEQ + 1))
    LOG="$DIR/run-$RUN_SEQ.log"
    "$SYNCAGENT" run --config "$CONFIG" --log-level info >"$DIR/run-$RUN_SEQ.out" 2>"$LOG" &
    AGENT_PID=$!
    STARTED_PIDS+=("$AGENT_PID")
    n=0
    until caught_term; do
        agent_alive || fail "the agent (pid $AGENT_PID) exited before it caught SIGTERM; see $LOG"
        n=$((n + 1))
        [ "$n" -lt 20000 ] || fail "the agent never caught SIGTERM"
    done
    stop_agent "$sig"
    : >"$STATE/agent.lock"
done

run_agent
wait_until pending_is 0
wait_until head_matches_data
stop_agent
