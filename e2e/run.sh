#!/usr/bin/env bash
# Runs every e2e/test_*.sh (or the ones named as arguments) one after the other against $SYNCAGENT
# and prints PASS/FAIL for each; a failed test's output follows its FAIL line. The last line is
# "N passed, M failed"; the exit status is non-zero when any test failed.
#   SYNCAGENT=/path/to/syncagent bash e2e/run.sh [test_name...]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)

if [ -z "${SYNCAGENT:-}" ]; then
    echo "set SYNCAGENT to the syncagent binary (make e2e does)" >&2
    exit 2
fi
case "$SYNCAGENT" in /*) ;; *) SYNCAGENT="$PWD/$SYNCAGENT" ;; esac
export SYNCAGENT
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

passed=0 failed=0 failures=()
out=$(mktemp "${TMPDIR:-/tmp}/syncagent-e2e-out.XXXXXX")
trap 'rm -f "$out"' EXIT
start=$(date +%s)
for t in "${tests[@]}"; do
    name=$(basename "$t" .sh)
    t0=$(date +%s%3N)
    # each test gets at most 3 minutes (the convergence replay of every regression seed and the
    # long-run memory check 8), then it
    # counts as failed
    limit=180
    [ "$name" != test_convergence ] || limit=480
    [ "$name" != test_memory_flat ] || limit=480
    timeout --kill-after=10 "$limit" bash "$t" >"$out" 2>&1
    rc=$?
    secs=$(awk -v ms=$(( $(date +%s%3N) - t0 )) 'BEGIN { printf "%.1f", ms / 1000 }')
    if [ "$rc" = 0 ]; then
        passed=$((passed + 1))
        printf 'PASS %s (%ss)\n' "$name" "$secs"
    else
        failed=$((failed + 1))
        failures+=("$name")
        [ "$rc" != 124 ] || echo "[$name] killed after $limit s" >>"$out"
        printf 'FAIL %s (%ss, exit %s)\n' "$name" "$secs" "$rc"
        sed 's/^/    /' "$out"
    fi
done
echo "total $(( $(date +%s) - start ))s${failures[*]:+; failed: ${failures[*]}}"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
