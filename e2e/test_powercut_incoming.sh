#!/usr/bin/env bash
# A new file a power cut left empty is held (never sent as it is); when another device's version
# of that path comes, that version goes on disk and the empty file is kept in the store
# (refs/syncagent/kept), with a warning that says where. The phone's power cut is a restart with
# another boot id (SYNCAGENT_BOOT_ID, the agent's stand-in for /proc/sys/kernel/random/boot_id).
source "$(dirname "$0")/lib.sh"

init_pair 50
printf 'base\n' >"$(data_of phone)/base.txt"
SYNCAGENT_BOOT_ID=before-the-cut start_device phone
start_device watch
wait_until test -f "$(data_of watch)/base.txt"

# The power goes: the phone's app had made notes/today.txt and none of its bytes reached the disk.
kill9_device phone
mkdir -p "$(data_of phone)/notes"
: >"$(data_of phone)/notes/today.txt"
# Meanwhile the watch writes its own version of that file.
mkdir -p "$(data_of watch)/notes"
printf 'the watch wrote this note\n' >"$(data_of watch)/notes/today.txt"
switch_to watch
wait_until head_file_matches notes/today.txt

# The phone boots again.
SYNCAGENT_BOOT_ID=after-the-cut start_device phone
wait_until cmp -s "$(data_of phone)/notes/today.txt" "$(data_of watch)/notes/today.txt"
wait_until eval '[ "$(on phone head_oid)" = "$(on watch head_oid)" ]'
assert_eq "the watch wrote this note" "$(cat "$(data_of watch)/notes/today.txt")" "the watch's version stays (the empty file never spread)"
switch_to phone
wait_until grep -q "now hold the version watch brought instead; what the disk held is kept" "$LOG"
line=$(grep "now hold the version watch brought" "$LOG")
assert_contains "$line" "notes/today.txt" "the warning names the file"
kept=$(g rev-parse -q --verify refs/syncagent/kept) || fail "no refs/syncagent/kept on the phone"
assert_contains "$line" "$kept" "the warning names the commit that keeps the disk's bytes"
# the kept commit lists each version it keeps: the empty blob, at notes/today.txt
assert_contains "$(g log -1 --format=%b "$kept")" "$(git hash-object /dev/null) notes/today.txt" "what the cut left (an empty file) is kept in the store"
# Nothing held any more: no power-cut problem, and the phone's file is as main holds it.
wait_until eval '! status_json | grep -q "power-cut"'
head_file_matches notes/today.txt || fail "the phone's notes/today.txt is not as its main holds it"
stop_device phone
stop_device watch
log "ok"
