#!/usr/bin/env bash
# A long copy reaches the peer in slices while it runs, and a mass deletion is still held whole.
# With a quiet period (3 s) and max delay (10 min) long enough that a copy of 10,000 new files
# would otherwise be one batch, the phone commits the copy in slices of about 4096 files (more
# than one commit, none with all 10,000), and the watch ends up with every file. Then `rm -r` of
# the same 10,000 files is a batch the size cap does not cut (something tracked went away): the
# deletion guard sees it whole and holds it; nothing is deleted on either side.
source "$(dirname "$0")/lib.sh"
N=10000

init_pair 3000
for d in phone watch; do (switch_to "$d"; set_watch max_delay_ms 600000); done
start_device phone
start_device watch
printf 'seed\n' >"$(data_of phone)/seed.txt"
wait_until same_file watch seed.txt "$(data_of phone)/seed.txt"
wait_converged
before=$(main_of phone)

# ---- 10,000 new files in one go: several commits ------------------------------------------------------------
python3 - "$(data_of phone)" "$N" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    d = os.path.join(root, "photos", f"d{i // 100:03d}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"p{i:05d}.jpg"), "wb") as f:
        f.write(f"photo {i}\n".encode() + os.urandom(600))
PY
copied() { [ "$(on "$1" head_list | grep -c '^photos/')" = "$N" ]; }
on phone wait_until copied phone
wait_until copied watch
WAIT_TIMEOUT=60 wait_converged
assert_eq "$N" "$(on watch data_list | grep -c '^photos/')" "files on the watch after the copy"
commits=$(on phone g rev-list --count "$before"..main)
assert_ge "$commits" 2 "the phone's commits for a copy of $N files (one batch would be 1)"
largest=0
for c in $(on phone g rev-list "$before"..main); do
    n=$(on phone g diff-tree --no-commit-id -r --name-only "$c" | grep -c '^photos/' || true)
    [ "$n" -gt "$largest" ] && largest=$n
done
assert_le "$largest" $((N - 1)) "files in the largest commit of the copy"

# ---- rm -r of the same 10,000: held whole -------------------------------------------------------------------
held=$(main_of phone)
rm -r "$(data_of phone)/photos"
held_reported() { local p; p=$(on phone status_field problems) && [[ "$p" == *"syncagent send --deletes"* ]]; }
wait_until held_reported
deleted=$(on phone g log --diff-filter=D --name-only --format= "$held"..main | grep -c '^photos/' || true)
assert_eq 0 "$deleted" "photos deleted by the phone's commits while the deletion is held"
assert_eq "$N" "$(on phone head_list | grep -c '^photos/')" "files in the phone's HEAD while the deletion is held"
assert_eq "$N" "$(on watch data_list | grep -c '^photos/')" "files on the watch while the phone's deletion is held"
stop_device watch
stop_device phone
