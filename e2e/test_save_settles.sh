#!/usr/bin/env bash
# However soon after a save the agent commits it (a whole save after a quiet spell goes 5 ms after
# its last file closes, README "What gets committed"), a file still open for writing is never
# committed before its close, and a deletion still waits for the debounce (the deletion guard sees
# deletions whole).
# debounce_ms and max_delay_ms are 10 minutes here, a wait this test never makes: what is committed
# before the agent stops was committed without the debounce.
source "$(dirname "$0")/lib.sh"

init_agent solo
set_watch debounce_ms 600000
set_watch max_delay_ms 600000
printf 'here before the agent\n' >"$DATA/keep.txt"  # (a store left with no file holds its deletions)
run_agent
wait_until head_has keep.txt

# 1. one process writes a file in three pieces, pausing far longer than the settle between them:
#    only the whole file is ever committed
python3 - "$DATA/log.txt" <<'PY'
import sys, time
with open(sys.argv[1], "w") as f:
    for i in range(3):
        f.write(f"piece {i} of a file written slowly\n")
        f.flush()
        time.sleep(0.3)
PY
wait_until head_file_matches log.txt
for c in $(g rev-list main -- log.txt); do
    g cat-file blob "$c:log.txt" | cmp -s - "$DATA/log.txt" || fail "commit $c holds a half-written log.txt: $(g cat-file blob "$c:log.txt" | wc -l) of 3 lines"
done

# 2. a deletion after a quiet spell (a restarted agent has seen no change yet) waits for the debounce:
#    it is still pending when the agent stops, which commits it
stop_agent
run_agent
rm "$DATA/log.txt"
wait_until pending_is 1
head_has log.txt || fail "the deletion of log.txt was committed without the debounce"
stop_agent
head_lacks log.txt || fail "the stop did not commit the deletion of log.txt"
