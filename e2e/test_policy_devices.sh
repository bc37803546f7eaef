#!/usr/bin/env bash
# Issue 8, `devices`: a phone, a watch and a tablet in a star around the phone, all with the rule
# photos/** devices = ["phone", "tablet"]. A photo taken on the tablet reaches the phone through the
# phone (relayed), and the watch keeps it in its store but never writes it into its data directory,
# nor takes its absence for a deletion (the photo stays on the others). Adding the watch to the list
# (and restarting it) brings the photos in; removing it again takes them out of the data directory,
# not out of the store.
source "$(dirname "$0")/lib.sh"

init_device watch 50 "phone=$(store_of phone)"
init_device tablet 50 "phone=$(store_of phone)"
init_device phone 50 "watch=$(store_of watch)" "tablet=$(store_of tablet)"
rule() { # NAME DEVICES-LIST: (re)write the photos rule in NAME's config
    switch_to "$1"
    python3 - "$CONFIG" "$2" <<'PY'
import sys
path, devices = sys.argv[1], sys.argv[2]
text = open(path).read().split("\n# photos rule\n")[0]
open(path, "w").write(text + '\n# photos rule\n[[rule]]\npath = "photos/**"\ndevices = %s\n' % devices)
PY
}
for d in phone watch tablet; do rule "$d" '["phone", "tablet"]'; done
start_device phone
start_device watch
start_device tablet
P=$(data_of phone) W=$(data_of watch) TB=$(data_of tablet)

log "a photo from the tablet: on the phone, in the watch's store, never on the watch's disk"
mkdir -p "$TB/photos/2026"
head -c 3000 /dev/urandom >"$T/pic"; cp "$T/pic" "$TB/photos/2026/beach.jpg"
echo "note from the tablet" >"$T/note"; cp "$T/note" "$TB/note.txt"
wait_until same_file phone photos/2026/beach.jpg "$T/pic"
wait_until same_file watch note.txt "$T/note"
wait_until on watch head_blob_is photos/2026/beach.jpg "$T/pic"
absent watch photos/2026/beach.jpg || fail "the watch wrote a photo its rule keeps off its disk"
[ ! -e "$W/photos" ] || fail "the watch made a photos directory"
log "the watch's missing photo is not a deletion"
echo "watch edit" >"$T/wn"; cp "$T/wn" "$W/watch-note.txt"
wait_until same_file phone watch-note.txt "$T/wn"
wait_until same_file tablet watch-note.txt "$T/wn"
same_file phone photos/2026/beach.jpg "$T/pic" || fail "the photo was deleted on the phone"
same_file tablet photos/2026/beach.jpg "$T/pic" || fail "the photo was deleted on the tablet"
on watch head_blob_is photos/2026/beach.jpg "$T/pic" || fail "the watch's main lost the photo"
assert_eq 0 "$(on watch status_field pending)" "watch pending"
log "a photo taken on the watch's disk anyway is not committed there"
mkdir -p "$W/photos"; echo "not the watch's to share" >"$W/photos/stray.jpg"
echo "marker" >"$T/m"; cp "$T/m" "$W/marker.txt"
wait_until same_file phone marker.txt "$T/m"
absent phone photos/stray.jpg || fail "the watch shared a path its rule keeps off it"
rm -rf "$W/photos"

log "25 more photos; a restart of the watch does not take the photos it lacks for a mass deletion"
for i in $(seq 1 25); do echo "photo $i" >"$TB/photos/2026/p$i.jpg"; done
wait_until same_file phone photos/2026/p25.jpg "$TB/photos/2026/p25.jpg"
wait_until on watch head_has photos/2026/p25.jpg
stop_device watch
start_device watch
echo "after restart" >"$T/m3"; cp "$T/m3" "$W/after-restart.txt"
wait_until same_file phone after-restart.txt "$T/m3"
assert_eq 0 "$(on watch status_field held)" "held on the watch after a restart"
assert_eq "[]" "$(on watch status_field problems)" "problems on the watch after a restart"
same_file phone photos/2026/p25.jpg "$TB/photos/2026/p25.jpg" || fail "the photos were deleted on the phone"

log "the watch joins the list: the photos come in"
stop_device watch
rule watch '["phone", "tablet", "watch"]'
start_device watch
wait_until same_file watch photos/2026/beach.jpg "$T/pic"
wait_until same_file watch photos/2026/p25.jpg "$TB/photos/2026/p25.jpg"
log "and leaves it again: out of the data directory, still in the store"
stop_device watch
rule watch '["phone", "tablet"]'
start_device watch
wait_until absent watch photos/2026/beach.jpg
on watch head_blob_is photos/2026/beach.jpg "$T/pic" || fail "the photo left the watch's store"
echo "after" >"$T/m2"; cp "$T/m2" "$W/after.txt"
wait_until same_file phone after.txt "$T/m2"
same_file phone photos/2026/beach.jpg "$T/pic" || fail "taking the photo off the watch deleted it on the phone"
