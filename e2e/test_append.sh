#!/usr/bin/env bash
# A file appended to without a pause for 3 s is committed while it grows (max_delay_ms caps the wait
# under non-stop writes: here 500 ms, six times less than the writing lasts) and ends committed with
# exactly its final bytes. The log starts at 4 MB, as a log that has run for a while would: reading it
# takes long enough that appends land while the agent reads it.
source "$(dirname "$0")/lib.sh"

init_agent phone 100
set_watch max_delay_ms 500
run_agent
{ yes 'an older line of the log, written before the test' || true; } | head -c 4000000 >"$DATA/growing.log"
wait_until head_file_matches growing.log
before=$(commit_count)

now_ms() { date +%s%3N; }
end=$(( $(now_ms) + 3000 ))
i=0
printf 'a quiet file, written once while the log grows\n' >"$DATA/quiet.txt"
while [ "$(now_ms)" -lt "$end" ]; do
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        i=$((i + 1))
        printf 'line %06d: the quick brown fox jumps over the lazy dog\n' "$i" >>"$DATA/growing.log"
    done
done
during=$(( $(commit_count) - before ))
quiet_during=no; head_file_matches quiet.txt && quiet_during=yes
log "appended $i lines ($(stat -c %s "$DATA/growing.log") bytes); $during commits while appending"

wait_until head_file_matches growing.log
wait_until pending_is 0
head_file_matches growing.log || fail "HEAD:growing.log is not the file's final bytes"
assert_head_matches_data
log "$(( $(commit_count) - before )) commits in all"
assert_ge "$during" 1 "commits made during 3 s of non-stop appends with max_delay_ms = 500"
# one busy file does not hold back the others
assert_eq yes "$quiet_during" "quiet.txt (written once at the start) committed while the log was still growing"
stop_agent
