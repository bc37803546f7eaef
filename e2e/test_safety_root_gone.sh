#!/usr/bin/env bash
# Safety hold when the data directory goes away: phone and watch are synced with 30 files.
#  1. The phone's data directory is moved away (`mv`): the phone commits no deletion (its main gains
#     no commit deleting files), the watch keeps all 30 files, and the phone's `status --json`
#     problems carry a message about the data directory naming `syncagent send --deletes`; nothing is
#     made where the directory was. Moved back, the problem goes away, the watch's change made
#     meanwhile arrives, and a file written afterwards syncs.
#  2. Its contents are removed (`rm -rf data/*`: the directory is suddenly empty): held the same way.
#     Put back (copied from a backup), the problem goes away and a new file syncs; nothing was deleted.
source "$(dirname "$0")/lib.sh"
X="$T/expected"; mkdir -p "$X"

# The default quiet period (200 ms): the guard judges a deletion by the batch the debouncer hands on,
# and at 50 ms a loaded machine once paused `rm -rf` long enough to cut it in two (two files deleted
# in a first batch, the rest held): see the note on issue 19.
init_pair 200
mkdir -p "$(data_of phone)/notes" "$(data_of phone)/photos"
for i in $(seq -w 1 15); do
    printf 'note %s\n' "$i" >"$(data_of phone)/notes/n$i.txt"
    head -c 2000 /dev/urandom >"$(data_of phone)/photos/p$i.jpg"
done
start_device phone
start_device watch
wait_until same_file watch photos/p15.jpg "$(data_of phone)/photos/p15.jpg"
wait_converged
cp -a "$(data_of phone)" "$T/backup"

problems() { on phone status_field problems; }
root_hold_reported() {
    local p; p=$(problems) || return 1
    [[ "$p" == *"syncagent send --deletes"* ]] && { [[ "$p" == *"$(data_of phone)"* ]] || [[ "$p" == *"data director"* ]]; }
}
no_problem() { [ "$(problems)" = "[]" ]; }
files_on() { on "$1" data_list | wc -l; }
# nothing_deleted SINCE WHAT: the phone's main has all 30 files and no commit since SINCE deletes one;
# the watch has all 30 files
nothing_deleted() {
    assert_eq 30 "$(on phone head_list | wc -l)" "files in the phone's HEAD ($2)"
    no_deletions_since phone "$1" "$2"
    assert_eq 30 "$(files_on watch)" "files on the watch ($2)"
    diff -r "$T/backup" "$(data_of watch)" >"$T/diff.out" || fail "the watch's files changed ($2): $(head -n 5 "$T/diff.out")"
}

# ---- 1. the directory is moved away ----------------------------------------------------------------------
before=$(main_of phone)
mv "$(data_of phone)" "$T/phone-data.moved"
wait_until root_hold_reported
switch_to phone; agent_alive || fail "the phone's agent died when its data directory was moved away"
nothing_deleted "$before" "data directory moved away"
# still held after a change on the watch, and nothing was made where the data directory was
printf 'from the watch while the phone has no data directory\n' >"$X/w1"
cp "$X/w1" "$(data_of watch)/w1.txt"
on watch wait_until head_has w1.txt
root_hold_reported || fail "the hold is no longer reported: $(problems)"
no_deletions_since phone "$before" "while its data directory is away"
assert_eq 31 "$(files_on watch)" "files on the watch while the phone's data directory is away"
[ ! -e "$(data_of phone)" ] || fail "something was made where the phone's data directory was: $(ls -A "$(data_of phone)" | head -n 5 | tr '\n' ' ')"

mv "$T/phone-data.moved" "$(data_of phone)"
wait_until no_problem
wait_until same_file phone w1.txt "$X/w1"
printf 'after the directory came back\n' >"$X/back1"
cp "$X/back1" "$(data_of phone)/back1.txt"
wait_until same_file watch back1.txt "$X/back1"
WAIT_TIMEOUT=30 wait_converged
assert_eq 32 "$(files_on watch)" "files on the watch after the phone's data directory came back"
no_deletions_since phone "$before" "case 1"

# ---- 2. the directory is emptied --------------------------------------------------------------------------
cp -a "$(data_of phone)/." "$T/backup2"
before=$(main_of phone)
rm -rf "$(data_of phone)"/*
assert_eq 0 "$(files_on phone)" "files left in the emptied data directory"
wait_until root_hold_reported
switch_to phone; agent_alive || fail "the phone's agent died when its data directory was emptied"
assert_eq 32 "$(on phone head_list | wc -l)" "files in the phone's HEAD (data directory emptied)"
no_deletions_since phone "$before" "data directory emptied"
assert_eq 32 "$(files_on watch)" "files on the watch (the phone's data directory emptied)"
diff -r "$T/backup2" "$(data_of watch)" >"$T/diff.out" || fail "the watch's files changed (the phone's data directory emptied): $(head -n 5 "$T/diff.out")"

cp -a "$T/backup2/." "$(data_of phone)/"
wait_until no_problem
printf 'after the files came back\n' >"$X/back2"
cp "$X/back2" "$(data_of phone)/back2.txt"
wait_until same_file watch back2.txt "$X/back2"
WAIT_TIMEOUT=30 wait_converged
assert_eq 33 "$(files_on watch)" "files on the watch at the end"
no_deletions_since phone "$before" "case 2"
stop_device watch
stop_device phone
