#!/usr/bin/env bash
# A FIFO in the data directory does not hang the agent: later files still commit and status
# answers; the log holds exactly one warning naming the FIFO; the FIFO never reaches HEAD.
# The same for a FIFO that is already there when the agent starts.
source "$(dirname "$0")/lib.sh"

start_agent phone

# warnings_naming NAME: how many warning lines of this run's log name NAME
warnings_naming() { grep -i 'warn' "$LOG" | grep -cF "$1" || true; }

mkfifo "$DATA/pipe"
printf 'next to the pipe\n' >"$DATA/after-fifo.txt"
wait_until head_file_matches after-fifo.txt
# more changes, more commits, the FIFO still there
for i in 1 2 3; do
    printf 'later %d\n' "$i" >"$DATA/later-$i.txt"
    wait_until head_file_matches "later-$i.txt"
done
touch "$DATA/pipe"          # its metadata changes: still no second warning
printf 'last\n' >"$DATA/last.txt"
wait_until head_file_matches last.txt
timeout 20 "$SYNCAGENT" status --config "$CONFIG" --json >"$T/status.json" || fail "status did not answer with a FIFO in the data directory"
assert_eq true "$(json_get running <"$T/status.json")" "running"
head_lacks pipe || fail "the FIFO is in HEAD"
assert_eq 1 "$(warnings_naming pipe)" "warnings naming the FIFO in the log"
stop_agent

# a FIFO already there at start-up, and one inside a new directory
mkfifo "$DATA/pipe2"
run_agent
mkdir -p "$DATA/sub"
mkfifo "$DATA/sub/pipe3"
printf 'in sub\n' >"$DATA/sub/file.txt"
wait_until head_file_matches sub/file.txt
printf 'still alive\n' >"$DATA/alive.txt"
wait_until head_file_matches alive.txt
timeout 20 "$SYNCAGENT" status --config "$CONFIG" --json >/dev/null || fail "status did not answer"
for f in pipe pipe2 sub/pipe3; do head_lacks "$f" || fail "the FIFO $f is in HEAD"; done
assert_eq 1 "$(warnings_naming pipe2)" "warnings naming pipe2 (there at start-up)"
assert_eq 1 "$(warnings_naming sub/pipe3)" "warnings naming sub/pipe3"
assert_eq "" "$(all_committed_paths | grep -E '(^|/)pipe[0-9]*$' || true)" "FIFOs in any commit"
stop_agent
