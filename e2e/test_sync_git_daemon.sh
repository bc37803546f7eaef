#!/usr/bin/env bash
# Issue 3, network peer: the watch's store is served by `git daemon` on loopback and the phone peers
# with git://127.0.0.1:PORT/store.git (polled every second). The phone receives the watch's new files,
# modifications and deletions, and reports the peer reachable; the phone's own changes reach the watch
# through the watch's (path) peer, and both converge.
source "$(dirname "$0")/lib.sh"
X="$T/expected"; mkdir -p "$X"
git daemon --help >/dev/null 2>&1 || fail "git daemon is not available (it ships with git)"

init_device watch 50 "phone=$(store_of phone)"
start_device watch
printf 'on the watch before the phone came\n' >"$X/early"
cp "$X/early" "$DATA/early.txt"
wait_until head_file_matches early.txt

port=$(free_port)
git daemon --reuseaddr --base-path="$T/watch/state" --export-all --port="$port" --listen=127.0.0.1 \
    >"$T/daemon.log" 2>&1 &
daemon_pid=$!
track_pid "$daemon_pid"
url="git://127.0.0.1:$port/store.git"
daemon_up() { git ls-remote "$url" >/dev/null 2>&1; }
wait_until daemon_up

init_device phone 50 "watch=$url"
set_peer watch poll_seconds 1
start_device phone
wait_until same_file phone early.txt "$X/early"
wait_until peer_is phone watch reachable true
assert_eq null "$(peer_get phone watch lastError)" "phone's lastError for the git:// peer"

# new, modified, deleted on the watch
head -c 5000 /dev/urandom >"$X/bin"
cp "$X/bin" "$(data_of watch)/blob.bin"
mkdir -p "$(data_of watch)/sub"
printf 'nested\n' >"$X/nested"
cp "$X/nested" "$(data_of watch)/sub/nested.txt"
wait_until same_file phone blob.bin "$X/bin"
wait_until same_file phone sub/nested.txt "$X/nested"
printf 'changed on the watch\n' >>"$X/early"
cp "$X/early" "$(data_of watch)/early.txt"
wait_until same_file phone early.txt "$X/early"
rm "$(data_of watch)/sub/nested.txt"
wait_until absent phone sub/nested.txt

# the phone's own change goes the other way (the watch pulls the phone's store by path)
printf 'from the phone\n' >"$X/p"
cp "$X/p" "$(data_of phone)/p.txt"
wait_until same_file watch p.txt "$X/p"
wait_converged
assert_eq 0 "$(peer_get phone watch behind)" "phone's behind for the git:// peer"

stop_device phone
stop_device watch
kill -TERM "$daemon_pid"
wait "$daemon_pid" 2>/dev/null || true
