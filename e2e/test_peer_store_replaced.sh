#!/usr/bin/env bash
# A peer's store deleted and put back while both agents run (a device wiped and restored from a
# backup, a store moved to another disk and back): the phone watched the old store's refs, so
# nothing of the new one would ring. The watch says its directory went away; the phone watches the
# new store as soon as it is there and fetches its commits then, not at the hourly safety poll.
source "$(dirname "$0")/lib.sh"
X="$T/expected"; mkdir -p "$X"

init_pair 50
switch_to phone
set_peer watch poll_seconds 1   # a missing store is looked for every second
start_device watch
start_device phone
printf 'first\n' >"$X/first"
cp "$X/first" "$(data_of phone)/first.txt"
wait_until same_file watch first.txt "$X/first"
wait_converged

log "the watch's store is deleted and put back from a copy, with new inodes"
stop_device watch
w=$(store_of watch)
cp -a "$w" "$w.backup"
rm -rf "$w"
switch_to phone
wait_until grep -q "peer watch: .*refs was deleted or moved away; watching it again" "$LOG"
wait_until peer_is phone watch reachable false
mv "$w.backup" "$w"
start_device watch
# The phone's round against the store put back went through: what comes next must ring.
wait_until peer_is phone watch reachable true
printf 'after the restore\n' >"$X/after"
cp "$X/after" "$(data_of watch)/after.txt"
# Well within the safety poll (an hour): a ring from the new store's refs.
WAIT_TIMEOUT=60 wait_until same_file phone after.txt "$X/after"
stop_device phone
stop_device watch
