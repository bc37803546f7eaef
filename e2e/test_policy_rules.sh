#!/usr/bin/env bash
# Issue 8, per-path rules on a phone <-> watch pair with the same [[rule]]s:
#   - never (cache/**): each device's cache stays its own: never committed, never written by a merge;
#   - manual (drafts/**): kept back (`held` lists it, reason manual; its bytes are in the store) until
#     `syncagent send PATH`; then it reaches the watch and is no longer held; held survives a restart;
#   - auto + max_bytes (media/**, 1000): a small file syncs, a big one is held (max_bytes) and a later
#     small version of the same path syncs normally;
#   - a held local change meets an incoming change to the same path: nothing is lost (the disk keeps
#     the held bytes, the store has the incoming version, the held bytes are in refs/syncagent/kept).
source "$(dirname "$0")/lib.sh"

init_pair 50
for d in phone watch; do
    switch_to "$d"
    cat >>"$CONFIG" <<'EOF'

[[rule]]
path = "cache/**"
sync = "never"

[[rule]]
path = "drafts/"
sync = "manual"

[[rule]]
path = "media/**"
max_bytes = 1000
EOF
done
start_device phone
start_device watch
P=$(data_of phone) W=$(data_of watch)

# marker TEXT: a plain file written on the phone that must reach the watch: after it, everything the
# phone committed before it has been offered to the watch.
marker_n=0
marker() {
    marker_n=$((marker_n + 1))
    printf 'marker %s\n' "$marker_n" >"$T/marker"
    cp "$T/marker" "$P/marker.txt"
    wait_until same_file watch marker.txt "$T/marker"
}
held_json() { on "$1" "$SYNCAGENT" held --config "$T/$1/syncagent.toml" --json; }
held_reason() { # NAME PATH: the reason PATH is held on NAME, or "none"
    held_json "$1" | python3 -c '
import json, sys
r = [h["reason"] for h in json.load(sys.stdin) if h["path"] == sys.argv[1]]
print(r[0] if r else "none")' "$2"
}
held_is() { [ "$(held_reason "$1" "$2")" = "$3" ]; }

log "never: each device's cache stays its own"
mkdir -p "$P/cache" "$W/cache"
echo "phone's cache" >"$P/cache/x"
echo "watch's cache" >"$W/cache/x"
marker
on phone head_lacks cache/x || fail "the phone committed cache/x (sync = never)"
on watch head_lacks cache/x || fail "the watch committed cache/x (sync = never)"
assert_eq "watch's cache" "$(cat "$W/cache/x")" "watch's own cache/x"
assert_eq "phone's cache" "$(cat "$P/cache/x")" "phone's own cache/x"
assert_eq 0 "$(on phone status_field pending)" "phone pending (a never path is not pending)"

log "manual: held until sent"
mkdir -p "$P/drafts"
echo "draft one" >"$T/d1"; cp "$T/d1" "$P/drafts/d1.txt"
wait_until held_is phone drafts/d1.txt manual
marker
absent watch drafts/d1.txt || fail "a manual path reached the watch before it was sent"
on phone head_lacks drafts/d1.txt || fail "a manual path was committed to main"
blob=$(git hash-object "$T/d1")
on phone g cat-file -e "$blob" || fail "the held bytes are not in the phone's store"
assert_ge "$(on phone status_field held)" 1 "status.held on the phone"
log "held survives a restart"
stop_device phone
start_device phone
held_is phone drafts/d1.txt manual || fail "after a restart drafts/d1.txt is no longer held: $(held_json phone)"
marker
absent watch drafts/d1.txt || fail "a manual path reached the watch after a restart"
out=$(on phone "$SYNCAGENT" send --config "$T/phone/syncagent.toml" drafts/d1.txt) || fail "send failed: $out"
assert_contains "$out" "sent 1 held change"
wait_until same_file watch drafts/d1.txt "$T/d1"
held_is phone drafts/d1.txt none || fail "drafts/d1.txt is still held after send"
if on phone "$SYNCAGENT" send --config "$T/phone/syncagent.toml" drafts/nothing.txt 2>"$T/send.err"; then
    fail "send of a path that is not held succeeded"
fi
assert_contains "$(cat "$T/send.err")" "nothing is held at drafts/nothing.txt"

log "max_bytes: big held, small synced"
mkdir -p "$P/media"
head -c 500 /dev/urandom >"$T/small"; cp "$T/small" "$P/media/small.bin"
head -c 5000 /dev/urandom >"$T/big"; cp "$T/big" "$P/media/photo.bin"
wait_until same_file watch media/small.bin "$T/small"
wait_until held_is phone media/photo.bin max_bytes
marker
absent watch media/photo.bin || fail "a file over max_bytes reached the watch"
head -c 100 /dev/urandom >"$T/small2"; cp "$T/small2" "$P/media/photo.bin"
wait_until same_file watch media/photo.bin "$T/small2"
held_is phone media/photo.bin none || fail "a small version of media/photo.bin is still held"

log "a held change meets an incoming one: nothing lost"
echo "phone's held draft" >"$T/held"; cp "$T/held" "$P/drafts/e.txt"
wait_until held_is phone drafts/e.txt manual
mkdir -p "$W/drafts"
echo "watch's draft, sent" >"$T/theirs"; cp "$T/theirs" "$W/drafts/e.txt"
wait_until held_is watch drafts/e.txt manual
on watch "$SYNCAGENT" send --config "$T/watch/syncagent.toml" --all >/dev/null
wait_until on phone head_blob_is drafts/e.txt "$T/theirs"
assert_eq "phone's held draft" "$(cat "$P/drafts/e.txt")" "the phone's disk keeps its held bytes"
held_is phone drafts/e.txt manual || fail "the phone's held drafts/e.txt is no longer listed as held"
kept=$(git hash-object "$T/held")
on phone g cat-file -e "$kept" || fail "the held bytes are not in the phone's store"
assert_contains "$(on phone g log --format=%B refs/syncagent/kept)" "$kept" "refs/syncagent/kept does not name the held bytes"
on watch head_blob_is drafts/e.txt "$T/theirs" || fail "the watch lost its own sent draft"
absent watch drafts/e.txt && fail "the watch's draft vanished"
assert_eq "watch's draft, sent" "$(cat "$W/drafts/e.txt")" "the watch keeps what it sent"
assert_not_contains "$(cat "$(data_of phone)/../run-"*.log)" "Fatal error"
