#!/usr/bin/env bash
# A network peer that is down for a while and then comes back is synced again: the phone's peer is a
# git:// URL where nothing listens (connection refused) for several rounds; then `git daemon` serves
# the watch's store on that port, and the watch's file reaches the phone without a restart.
# (Before the fix, each refused probe counted as a fetch "still stuck" in libgit2; after three, the
# phone stopped trying that peer for good.)
source "$(dirname "$0")/lib.sh"
X="$T/expected"; mkdir -p "$X"
git daemon --help >/dev/null 2>&1 || fail "git daemon is not available (it ships with git)"

init_device watch 50 "phone=$(store_of phone)"
start_device watch
printf 'on the watch\n' >"$X/w"
cp "$X/w" "$DATA/w.txt"
wait_until head_file_matches w.txt

port=$(free_port)
url="git://127.0.0.1:$port/store.git"
init_device phone 50 "watch=$url"
set_peer watch poll_seconds 1
start_device phone
# four rounds that fail with the connection refused (each `sync` waits for a round of its own)
for i in 1 2 3 4; do
    if out=$("$SYNCAGENT" sync --config "$CONFIG" --peer watch 2>&1); then fail "sync with nothing listening succeeded: $out"; fi
    assert_contains "$out" "127.0.0.1:$port" "sync error $i"
done
err=$(peer_get phone watch lastError)
assert_contains "$err" "refused" "phone's lastError while the watch is down"

git daemon --reuseaddr --base-path="$T/watch/state" --export-all --port="$port" --listen=127.0.0.1 \
    >"$T/daemon.log" 2>&1 &
track_pid $!
wait_until same_file phone w.txt "$X/w"
wait_until peer_is phone watch reachable true
assert_eq null "$(peer_get phone watch lastError)" "phone's lastError once the watch is back"
stop_device phone
stop_device watch
