#!/usr/bin/env bash
# kill -9 in the middle of a burst, then restart: nothing is lost (every file in HEAD with its
# bytes) and `git fsck --strict` is clean. Then stale lock files (store.git/index.lock and
# refs/heads/main.lock left by a killed process) are cleared at start-up and commits go on.
source "$(dirname "$0")/lib.sh"

init_agent phone 100
set_watch max_delay_ms 300   # commit often during the burst, so that the kill lands among commits
run_agent

# writer ROUND COUNT: write COUNT files in small batches, modifying earlier rounds' files as it goes
writer() {
    local round=$1 count=$2 i
    mkdir -p "$DATA/r$round"
    for i in $(seq 1 "$count"); do
        printf 'round %d file %d\n%s\n' "$round" "$i" "$RANDOM$RANDOM" >"$DATA/r$round/f$i.txt"
        if [ $((i % 50)) = 0 ]; then
            [ "$round" = 1 ] || printf 'touched in round %d at %d\n' "$round" "$i" >>"$DATA/r1/f$((i / 50)).txt"
            sleep 0.05
        fi
    done
}

for round in 1 2 3; do
    writer "$round" 3000 &
    wpid=$!
    # let the agent commit part of the burst, then kill it while the burst goes on
    partly_committed() { head_list | grep -q "^r$round/"; }
    wait_until partly_committed
    still_writing=no; kill -0 "$wpid" 2>/dev/null && still_writing=yes
    kill9_agent
    wait "$wpid"
    log "round $round: killed with -9 (writer still running: $still_writing); $(head_list | grep -c "^r$round/") of 3000 files committed"
    run_agent
    assert_head_matches_data
    wait_until pending_is 0
    g fsck --strict --no-progress >"$T/fsck.out" 2>&1 || fail "git fsck --strict after kill -9 (round $round): $(cat "$T/fsck.out")"
done

# stale locks, as a process killed in the middle of a commit leaves them
printf 'after the locks\n' >"$DATA/before-kill.txt"
wait_until head_has before-kill.txt
kill9_agent
printf 'stale\n' >"$STORE/index.lock"
printf '%s\n' "$(head_oid)" >"$STORE/refs/heads/main.lock"
printf 'written while killed\n' >"$DATA/while-killed.txt"
run_agent
assert_head_matches_data
printf 'after restart\n' >"$DATA/after-restart.txt"
wait_until head_file_matches after-restart.txt
assert_head_matches_data
[ ! -e "$STORE/index.lock" ] || fail "store.git/index.lock is still there after start-up"
[ ! -e "$STORE/refs/heads/main.lock" ] || fail "store.git/refs/heads/main.lock is still there after start-up"
stop_agent
assert_eq "" "$(find "$STORE" -name '*.lock')" "lock files left in the store after a clean stop"
g fsck --strict --no-progress >"$T/fsck.out" 2>&1 || fail "git fsck --strict at the end: $(cat "$T/fsck.out")"
