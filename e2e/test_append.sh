#!/usr/bin/env bash
# A file appended to without a pause for 3 s is committed along the way (max_delay_ms caps the wait
# under non-stop writes) and ends committed with exactly its final bytes.
source "$(dirname "$0")/lib.sh"

init_agent phone 100
set_watch max_delay_ms 500
run_agent
before=$(commit_count)

now_ms() { date +%s%3N; }
end=$(( $(now_ms) + 3000 ))
i=0
while [ "$(now_ms)" -lt "$end" ]; do
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        i=$((i + 1))
        printf 'line %06d: the quick brown fox jumps over the lazy dog\n' "$i" >>"$DATA/growing.log"
    done
done
log "appended $i lines ($(stat -c %s "$DATA/growing.log") bytes)"

wait_until head_file_matches growing.log
wait_until pending_is 0
head_file_matches growing.log || fail "HEAD:growing.log is not the file's final bytes"
assert_head_matches_data
commits=$(( $(commit_count) - before ))
log "$commits commits while appending"
# 3 s of non-stop writes with max_delay_ms = 500: the agent did not wait for a quiet moment
assert_ge "$commits" 2 "commits of a file written to non-stop for 3 s with max_delay_ms = 500"
stop_agent
