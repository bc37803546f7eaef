#!/usr/bin/env bash
# A peer's store on a disk that is unmounted and mounted again while the phone runs (a USB disk, a
# removable card): an unmount drops the phone's inotify watch on the store's refs with no
# IN_DELETE_SELF. The phone says so, finds the store gone (reachable false), and once the disk is
# back watches the store anew: a commit made there reaches the phone at once, not at the hourly
# safety poll of a watched store. Needs root (mount).
source "$(dirname "$0")/lib.sh"
X="$T/expected"; mkdir -p "$X"
[ "$(id -u)" = 0 ] || fail "needs root to mount a tmpfs for the watch's store (running as uid $(id -u)); CI runs as root"

init_pair 50
switch_to phone
set_peer watch poll_seconds 1   # a missing store is looked for every second
W=$(store_of watch)
# The watch's store on a file system of its own, over an empty mount point.
mv "$W" "$W.made"
mkdir "$W"
mount -t tmpfs -o size=64m tmpfs "$W" || fail "mount -t tmpfs on $W failed (as root)"
cp -a "$W.made/." "$W/"
rm -rf "$W.made"
# (lib's exit stops the agents first, then runs this)
at_exit "mountpoint -q '$W' && { umount '$W' || umount -l '$W'; }"

start_device watch
start_device phone
printf 'first\n' >"$X/first"
cp "$X/first" "$(data_of phone)/first.txt"
wait_until same_file watch first.txt "$X/first"
wait_converged

log "the watch's disk is unmounted (its store kept aside), then mounted again"
stop_device watch
mkdir -p "$T/store.saved" && cp -a "$W/." "$T/store.saved/"
umount "$W" || fail "umount $W failed"
switch_to phone
wait_until grep -q "peer watch: .*refs is on a file system that was unmounted; watching it again" "$LOG"
wait_until peer_is phone watch reachable false
mount -t tmpfs -o size=64m tmpfs "$W" || fail "mount -t tmpfs on $W failed again"
cp -a "$T/store.saved/." "$W/"
start_device watch
wait_until peer_is phone watch reachable true
printf 'after the disk came back\n' >"$X/after"
cp "$X/after" "$(data_of watch)/after.txt"
# Well within the safety poll (an hour): a ring from the refs of the store on the new mount.
WAIT_TIMEOUT=60 wait_until same_file phone after.txt "$X/after"
stop_device phone
stop_device watch
