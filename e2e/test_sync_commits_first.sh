#!/usr/bin/env bash
# `syncagent sync` is "commit and sync now" (README, CLI reference): asked of a running agent, what
# the watcher holds back is committed before the rounds, also when every peer is already in step
# (a round that finds nothing to fetch or merge does not wait for the debounce to commit). Here
# the debounce is 10 minutes and a deletion waits for it (the deletion guard sees deletions
# whole): once `sync` returns, the phone's main has the deletion and so does the watch.
source "$(dirname "$0")/lib.sh"

init_pair 600000
on phone set_watch max_delay_ms 600000
on watch set_watch max_delay_ms 600000
printf 'goes away\n' >"$(data_of phone)/old.txt"
printf 'stays\n' >"$(data_of phone)/keep.txt"
start_device phone
start_device watch
wait_converged
absent watch old.txt && fail "the watch never had old.txt"

switch_to phone
rm "$DATA/old.txt"
wait_until pending_is 1
head_has old.txt || fail "the deletion was committed before the debounce: this test proves nothing"
"$SYNCAGENT" sync --config "$CONFIG" >"$T/sync.out" 2>&1 || fail "syncagent sync failed: $(cat "$T/sync.out")"
# No wait: `sync` returned, so the deletion is committed.
head_lacks old.txt || fail "syncagent sync returned with the deletion of old.txt still uncommitted ($(status_field pending) pending)"
head_has keep.txt || fail "keep.txt went from the phone's main"
assert_eq 0 "$(status_field pending)" "changes pending on the phone after sync"
wait_until absent watch old.txt
wait_converged

