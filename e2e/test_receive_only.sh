#!/usr/bin/env bash
# Issue 8, mode = "receive-only" on the watch: the phone's changes arrive as usual; the watch's own
# edits are never committed to main nor sent; status counts them (localChanges) and `held` lists them
# (local-change); `syncagent revert PATH` puts the store's version back and keeps the local bytes in
# the store; an incoming change to a locally edited path takes the path, the local bytes kept too.
source "$(dirname "$0")/lib.sh"

init_pair 50
switch_to watch
sed -i 's/^device = "watch"$/device = "watch"\nmode = "receive-only"/' "$CONFIG"
grep -q '^mode = "receive-only"' "$CONFIG" || fail "could not set mode in $CONFIG"
start_device phone
start_device watch
P=$(data_of phone) W=$(data_of watch)
local_changes_is() { [ "$(on watch status_field localChanges)" = "$1" ]; }

echo "settings v1" >"$T/v1"; cp "$T/v1" "$P/settings.txt"
echo "other v1" >"$T/o1"; cp "$T/o1" "$P/other.txt"
wait_until same_file watch settings.txt "$T/v1"
wait_until same_file watch other.txt "$T/o1"
assert_eq receive-only "$(on watch status_field mode)" "status.mode"

log "a local edit on the watch is not committed and not sent"
echo "watch's own edit" >"$T/local"; cp "$T/local" "$W/settings.txt"
echo "watch's new file" >"$W/new.txt"
wait_until local_changes_is 2
on watch head_blob_is settings.txt "$T/v1" || fail "the watch committed its local edit"
on watch head_lacks new.txt || fail "the watch committed a new local file"
echo "marker" >"$T/m"; cp "$T/m" "$P/marker.txt"
wait_until same_file watch marker.txt "$T/m"
same_file phone settings.txt "$T/v1" || fail "the watch's local edit reached the phone"
absent phone new.txt || fail "the watch's new file reached the phone"
held=$(on watch "$SYNCAGENT" held --config "$T/watch/syncagent.toml" --json)
python3 -c 'import json, sys; h = json.loads(sys.argv[1]); sys.exit(0 if {"path": "settings.txt", "reason": "local-change", "bytes": 17} in h else 1)' "$held" \
    || fail "held does not list settings.txt as a local change: $held"
if on watch "$SYNCAGENT" send --config "$T/watch/syncagent.toml" --all 2>"$T/send.err"; then
    fail "send on a receive-only device succeeded"
fi
assert_contains "$(cat "$T/send.err")" "receive-only"

log "revert puts the store's version back and keeps the local bytes"
out=$(on watch "$SYNCAGENT" revert --config "$T/watch/syncagent.toml" settings.txt) || fail "revert failed: $out"
assert_contains "$out" "reverted 1 local change"
wait_until same_file watch settings.txt "$T/v1"
local_blob=$(git hash-object "$T/local")
on watch g cat-file -e "$local_blob" || fail "the reverted bytes are not in the watch's store"
assert_contains "$(on watch g log --format=%B refs/syncagent/kept)" "$local_blob" "refs/syncagent/kept does not name the reverted bytes"
wait_until local_changes_is 1
[ -f "$W/new.txt" ] || fail "revert of one path touched another"

log "an incoming change takes a locally edited path; the local bytes are kept"
echo "watch edits other" >"$T/local2"; cp "$T/local2" "$W/other.txt"
wait_until local_changes_is 2
echo "other v2 from the phone" >"$T/o2"; cp "$T/o2" "$P/other.txt"
wait_until same_file watch other.txt "$T/o2"
local2=$(git hash-object "$T/local2")
on watch g cat-file -e "$local2" || fail "the replaced local bytes are not in the watch's store"
assert_contains "$(on watch g log --format=%B refs/syncagent/kept)" "$local2" "refs/syncagent/kept does not name the replaced bytes"
wait_until local_changes_is 1
log "revert of everything; the stopped agent's status still counts"
stop_device watch
assert_eq 1 "$(on watch status_field localChanges)" "localChanges while stopped"
start_device watch
on watch "$SYNCAGENT" revert --config "$T/watch/syncagent.toml" >/dev/null
wait_until absent watch new.txt
wait_until local_changes_is 0
on watch g cat-file -e "$(echo "watch's new file" | git hash-object --stdin)" || fail "the reverted new file's bytes are not kept"
wait_until converged
