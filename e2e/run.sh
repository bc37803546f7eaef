#!/usr/bin/env bash
# Runs every e2e/test_*.sh (or the ones named as arguments) against $SYNCAGENT, two at a time
# (E2E_JOBS=1 for one after the other), prints a line as each finishes, then PASS/FAIL for each in
# name order; a failed test's output follows its FAIL line. The last line is "N passed, M failed";
# the exit status is non-zero when any test failed.
#   SYNCAGENT=/path/to/syncagent bash e2e/run.sh [test_name...]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)

if [ -z "${SYNCAGENT:-}" ]; then
    echo "set SYNCAGENT to the syncagent binary (make e2e does)" >&2
    exit 2
fi
case "$SYNCAGENT" in /*) ;; *) SYNCAGENT="$PWD/$SYNCAGENT" ;; esac
export SYNCAGENT
# Every commit checks the tree it builds along the changed paths against the whole index (Store+Index).
export SYNCAGENT_VERIFY_TREES="${SYNCAGENT_VERIFY_TREES:-1}"
# A crash's backtrace short enough to survive in a test's message: the crashed thread's frames,
# without the list of loaded images and registers that otherwise fill its end.
export SWIFT_BACKTRACE="${SWIFT_BACKTRACE:-enable=yes,color=no,interactive=no,threads=crashed,registers=none,images=none}"
if [ ! -x "$SYNCAGENT" ]; then
    echo "SYNCAGENT=$SYNCAGENT is not an executable file" >&2
    exit 2
fi

tests=()
if [ "$#" -gt 0 ]; then
    for name in "$@"; do
        name=$(basename "$name" .sh)
        [ -f "$here/$name.sh" ] || { echo "no such test: $here/$name.sh" >&2; exit 2; }
        tests+=("$here/$name.sh")
    done
else
    for t in "$here"/test_*.sh; do tests+=("$t"); done
fi

# Tests run two at a time (E2E_JOBS), each in its own temp dirs with its own ports and agents, so
# they cannot disturb each other beyond the load (which every test must stand anyway: it waits for
# conditions, never for fixed times). These run alone, after the others: test_install runs `make
# install` (a build), test_memory_flat measures memory over minutes, test_transfer_matrix moves ~1 GB.
JOBS=${E2E_JOBS:-2}
SOLO=" test_install test_memory_flat test_transfer_matrix "

results=$(mktemp -d "${TMPDIR:-/tmp}/syncagent-e2e-results.XXXXXX")
trap 'rm -rf "$results"' EXIT
start=$(date +%s)

# run_one TEST: runs it with its time limit; writes <name>.rc, <name>.secs and <name>.out.
run_one() {
    local t=$1 name limit rc t0
    name=$(basename "$t" .sh)
    t0=$(date +%s%3N)
    # each test gets at most 3 minutes (the convergence replay of every regression seed and the
    # long-run memory check 8), then it counts as failed
    limit=180
    [ "$name" != test_convergence ] || limit=480
    [ "$name" != test_memory_flat ] || limit=480
    [ "$name" != test_powercut ] || limit=480
    [ "$name" != test_powercut_b ] || limit=480
    timeout --kill-after=10 "$limit" bash "$t" >"$results/$name.out" 2>&1
    rc=$?
    [ "$rc" != 124 ] || echo "[$name] killed after $limit s" >>"$results/$name.out"
    awk -v ms=$(( $(date +%s%3N) - t0 )) 'BEGIN { printf "%.1f", ms / 1000 }' >"$results/$name.secs"
    echo "$rc" >"$results/$name.rc"
    printf '  done %s %s (%ss)\n' "$([ "$rc" = 0 ] && echo PASS || echo FAIL)" "$name" "$(cat "$results/$name.secs")"
}

report() {
    local name=$1 rc secs
    rc=$(cat "$results/$name.rc") secs=$(cat "$results/$name.secs")
    if [ "$rc" = 0 ]; then
        printf 'PASS %s (%ss)\n' "$name" "$secs"
    else
        printf 'FAIL %s (%ss, exit %s)\n' "$name" "$secs" "$rc"
        sed 's/^/    /' "$results/$name.out"
    fi
}

pool=() solo=()
for t in "${tests[@]}"; do
    case "$SOLO" in *" $(basename "$t" .sh) "*) solo+=("$t") ;; *) pool+=("$t") ;; esac
done
running=0
for t in "${pool[@]}"; do
    if [ "$running" -ge "$JOBS" ]; then wait -n; running=$((running - 1)); fi
    run_one "$t" &
    running=$((running + 1))
done
wait
for t in "${solo[@]}"; do run_one "$t"; done

passed=0 failed=0 failures=()
for t in "${tests[@]}"; do
    name=$(basename "$t" .sh)
    report "$name"
    if [ "$(cat "$results/$name.rc")" = 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); failures+=("$name"); fi
done
echo "total $(( $(date +%s) - start ))s${failures[*]:+; failed: ${failures[*]}}"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
