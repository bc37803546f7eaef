#!/usr/bin/env bash
# Safety hold on mass deletion ([safety] max_delete_percent = 50, min_delete_files = 20, the defaults):
# with 40 tracked files, deleting 5 is an ordinary change (committed and synced at once, no problem);
# deleting 30 at once (more than 50 % and at least 20) is held: no deletion is committed, the watch
# keeps the 30 files, and the phone's `status --json` problems say so and name `syncagent send
# --deletes`. `syncagent send --deletes` then commits the deletion, the problem goes away and the watch
# loses the 30 files. Last, the keys are read from the config: with min_delete_files = 50, deleting
# 30 of 40 is not held.
source "$(dirname "$0")/lib.sh"
X="$T/expected"; mkdir -p "$X"

init_pair 300   # a long quiet period: the 30 deletions below are one batch
mkdir -p "$(data_of phone)/docs"
for i in $(seq -w 1 40); do printf 'file %s\n' "$i" >"$(data_of phone)/docs/f$i.txt"; done
start_device phone
start_device watch
wait_until same_file watch docs/f40.txt "$(data_of phone)/docs/f40.txt"
wait_converged

problems() { on phone status_field problems; }
held_reported() { local p; p=$(problems) && [[ "$p" == *"syncagent send --deletes"* ]]; }
no_problem() { [ "$(problems)" = "[]" ]; }
files_on() { on "$1" data_list | grep -c '^docs/' || true; }
head_count() { on phone head_list | grep -c '^docs/' || true; }

# ---- 5 of 40: not held ------------------------------------------------------------------------------------
rm "$(data_of phone)"/docs/f0[1-5].txt
on phone wait_until head_lacks docs/f05.txt
on phone wait_until head_lacks docs/f01.txt
wait_until absent watch docs/f05.txt
wait_converged
assert_eq 35 "$(files_on watch)" "files on the watch after deleting 5 of 40"
assert_eq "[]" "$(problems)" "the phone's problems after deleting 5 of 40"
# back to 40 tracked files
for i in 01 02 03 04 05; do printf 'file %s again\n' "$i" >"$(data_of phone)/docs/f$i.txt"; done
wait_until same_file watch docs/f05.txt "$(data_of phone)/docs/f05.txt"
wait_converged
assert_eq 40 "$(head_count)" "tracked files before the mass deletion"

# ---- 30 of 40: held ---------------------------------------------------------------------------------------
before=$(main_of phone)
rm "$(data_of phone)"/docs/f0*.txt "$(data_of phone)"/docs/f1*.txt "$(data_of phone)"/docs/f2*.txt "$(data_of phone)"/docs/f30.txt
assert_eq 10 "$(files_on phone)" "files left in the phone's data directory"
wait_until held_reported
p=$(problems)
assert_contains "$p" "delet" "the phone's problems (what is held)"
# nothing was committed: still 40 files in the phone's HEAD, none deleted in its history since, and
# the watch keeps all of them
assert_eq 40 "$(head_count)" "files in the phone's HEAD while the deletion is held"
no_deletions_since phone "$before" "while held"
assert_eq 40 "$(files_on watch)" "files on the watch while the phone's deletion is held"
# the hold is kept, not just late: an unrelated change is committed and synced, the 30 stay
printf 'unrelated\n' >"$X/unrelated"
cp "$X/unrelated" "$(data_of phone)/unrelated.txt"
wait_until same_file watch unrelated.txt "$X/unrelated"
assert_eq 40 "$(files_on watch)" "files on the watch after an unrelated change, the deletion still held"
assert_eq 40 "$(head_count)" "files in the phone's HEAD after an unrelated change, the deletion still held"
held_reported || fail "the hold is no longer reported after an unrelated change: $(problems)"

# ---- send --deletes: the deletion goes through ------------------------------------------------------------
"$SYNCAGENT" send --deletes --config "$T/phone/syncagent.toml" >"$T/send.out" 2>&1 \
    || fail "syncagent send --deletes failed: $(cat "$T/send.out")"
on phone wait_until head_lacks docs/f30.txt
on phone wait_until head_lacks docs/f01.txt
wait_until absent watch docs/f01.txt
WAIT_TIMEOUT=30 wait_converged
assert_eq 10 "$(files_on watch)" "files on the watch after send --deletes"
wait_until no_problem

# ---- the config keys are read: min_delete_files = 50 lets 30 of 40 through ---------------------------------
stop_device phone
switch_to phone
printf '\n[safety]\nmax_delete_percent = 50\nmin_delete_files = 50\n' >>"$CONFIG"
start_device phone
for i in $(seq -w 1 30); do printf 'file %s, round 2\n' "$i" >"$(data_of phone)/docs/f$i.txt"; done
wait_until same_file watch docs/f30.txt "$(data_of phone)/docs/f30.txt"
wait_converged
assert_eq 40 "$(head_count)" "tracked files before deleting 30 with min_delete_files = 50"
rm "$(data_of phone)"/docs/f0*.txt "$(data_of phone)"/docs/f1*.txt "$(data_of phone)"/docs/f2*.txt "$(data_of phone)"/docs/f30.txt
on phone wait_until head_lacks docs/f30.txt
wait_until absent watch docs/f01.txt
WAIT_TIMEOUT=30 wait_converged
assert_eq 10 "$(files_on watch)" "files on the watch after deleting 30 of 40 with min_delete_files = 50"
assert_eq "[]" "$(problems)" "the phone's problems after deleting 30 of 40 with min_delete_files = 50"
stop_device watch
stop_device phone
