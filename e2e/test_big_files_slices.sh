#!/usr/bin/env bash
# Big new files that arrive at once go in as several commits of about 64 MiB each (README "What
# gets committed"): the watch fetches and writes the first while the phone hashes the rest. Here a
# folder of six 24 MB photos is moved into the data directory in one rename (one batch: the walk
# of a moved-in folder waits for quiet, so no time slice cuts it). It must reach the watch whole, in
# two commits of three photos each, in path order, every commit holding whole files.
source "$(dirname "$0")/lib.sh"

init_pair 200
start_device phone
start_device watch
mkdir -p "$T/src/photos"
for i in 1 2 3 4 5 6; do head -c 24000000 /dev/urandom >"$T/src/photos/p$i.jpg"; done
cp -r "$T/src/photos" "$T/moving"
mv "$T/moving" "$(data_of phone)/photos"
log "the folder reaches the watch"
for i in 1 2 3 4 5 6; do wait_until same_file watch "photos/p$i.jpg" "$T/src/photos/p$i.jpg"; done
wait_converged

switch_to phone
commits=$(g rev-list --reverse refs/heads/main -- photos)
assert_eq 2 "$(printf '%s\n' "$commits" | wc -l)" "commits that added the photos (144 MB in slices of 64 MiB)"
first=$(printf '%s\n' "$commits" | head -1)
assert_eq "photos/p1.jpg photos/p2.jpg photos/p3.jpg" "$(g ls-tree -r --name-only "$first" -- photos | tr '\n' ' ' | sed 's/ $//')" \
    "the first slice holds the first photos in path order"
for c in $commits; do
    for f in $(g ls-tree -r --name-only "$c" -- photos); do
        g cat-file blob "$c:$f" | cmp -s - "$T/src/$f" || fail "$f in commit $c is not the whole photo"
    done
done
g fsck --no-dangling >/dev/null 2>&1 || fail "git fsck of the phone's store failed"
on watch g fsck --no-dangling >/dev/null 2>&1 || fail "git fsck of the watch's store failed"
stop_device watch
stop_device phone
