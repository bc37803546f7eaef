#!/usr/bin/env bash
# Issue 3, unreachable peers: the phone's peers are a store path that does not exist yet (the watch
# has not been set up) and a git:// URL where nothing listens. Status shows reachable false and an
# error naming the URL; `syncagent sync` exits non-zero naming each failed peer; local commits go on.
# Then the watch is set up and started: the phone reaches it (reachable true, no error), the data
# flows both ways and `sync --peer watch` succeeds.
source "$(dirname "$0")/lib.sh"
X="$T/expected"; mkdir -p "$X"

port=$(free_port)
tablet_url="git://127.0.0.1:$port/store.git"
watch_url=$(store_of watch)
init_device phone 50 "watch=$watch_url" "tablet=$tablet_url"
set_peer watch poll_seconds 2    # retries are capped at poll_seconds
set_peer tablet poll_seconds 2
start_device phone

printf 'first, while alone\n' >"$X/a"
cp "$X/a" "$DATA/a.txt"
wait_until head_file_matches a.txt

wait_until peer_is phone watch reachable false
wait_until peer_is phone tablet reachable false
err=$(peer_get phone watch lastError)
assert_contains "$err" "$watch_url" "watch's lastError"
err=$(peer_get phone tablet lastError)
assert_contains "$err" "127.0.0.1:$port" "tablet's lastError"
assert_eq unreachable "$(peer_get phone tablet errorCode)" "tablet's errorCode"
assert_eq null "$(peer_get phone watch lastSync)" "watch's lastSync before any sync"

# `sync` fails and names both peers
if out=$("$SYNCAGENT" sync --config "$CONFIG" 2>&1); then fail "syncagent sync succeeded with unreachable peers: $out"; fi
assert_contains "$out" watch "sync's output"
assert_contains "$out" tablet "sync's output"
if out=$("$SYNCAGENT" sync --peer watch --config "$CONFIG" 2>&1); then fail "syncagent sync --peer watch succeeded with the watch missing: $out"; fi
assert_contains "$out" watch "sync --peer watch's output"

# local work goes on, and the agent is still there
printf 'second, still alone\n' >"$X/b"
cp "$X/b" "$DATA/b.txt"
rm "$DATA/a.txt"
printf 'third\n' >"$X/c"
cp "$X/c" "$DATA/c.txt"
assert_head_matches_data
wait_until pending_is 0
agent_alive || fail "the agent died with unreachable peers"
assert_eq false "$(peer_get phone watch reachable)" "watch's reachable while it is missing"

# ---- the watch appears --------------------------------------------------------------------------------
init_device watch 50 "phone=$(store_of phone)"
start_device watch
wait_until same_file watch b.txt "$X/b"
wait_until same_file watch c.txt "$X/c"
wait_until absent watch a.txt
wait_until peer_is phone watch reachable true
wait_until peer_is phone watch lastError null
assert_ne null "$(peer_get phone watch lastSync)" "watch's lastSync after recovery"
printf 'from the watch\n' >"$X/w"
cp "$X/w" "$(data_of watch)/w.txt"
wait_until same_file phone w.txt "$X/w"
wait_converged
switch_to phone
out=$("$SYNCAGENT" sync --peer watch --config "$CONFIG" 2>&1) || fail "syncagent sync --peer watch failed after recovery: $out"
# the tablet is still missing, and still reported
assert_eq false "$(peer_get phone tablet reachable)" "tablet's reachable"
if out=$("$SYNCAGENT" sync --config "$CONFIG" 2>&1); then fail "syncagent sync succeeded with the tablet unreachable: $out"; fi
assert_contains "$out" tablet "sync's output"
stop_device watch
stop_device phone
