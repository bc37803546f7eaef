#!/usr/bin/env bash
# A burst of 1,000 new files lands in few commits (at most 20), and all 1,000 are in HEAD with
# their bytes.
source "$(dirname "$0")/lib.sh"

start_agent phone
printf 'before the burst\n' >"$DATA/first.txt"
wait_until head_has first.txt
before=$(commit_count)

mkdir -p "$DATA/burst"
for i in $(seq 1 500); do
    printf 'file %d of the burst\n' "$i" >"$DATA/burst/f$i.txt"
done
for i in $(seq 501 1000); do
    printf 'file %d of the burst\n' "$i" >"$DATA/g$i.txt"
done

burst_in_head() { [ "$(head_list | grep -Ec '^(burst/f|g)[0-9]+\.txt$')" = 1000 ]; }
wait_until burst_in_head
assert_head_matches_data
wait_until pending_is 0
commits=$(( $(commit_count) - before ))
log "1,000 files landed in $commits commits"
assert_ge "$commits" 1 "commits for the burst"
assert_le "$commits" 20 "commits for a burst of 1,000 files"
stop_agent
