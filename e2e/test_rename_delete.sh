#!/usr/bin/env bash
# Renames and deletions: mv a file, mv a directory within the tree (and keep writing in it), rm -r a
# directory, replace a directory with a file of the same name and a file with a directory, move a
# directory out of the tree and another one in. HEAD matches the data directory exactly each time.
source "$(dirname "$0")/lib.sh"

start_agent phone
mkdir -p "$DATA/dir1/sub" "$DATA/dir2" "$DATA/victim/deep" "$DATA/leaving/inner"
printf 'a\n' >"$DATA/a.txt"
for f in dir1/f1 dir1/f2 dir1/sub/f3 dir2/g1 dir2/g2 victim/v1 victim/deep/v2 leaving/l1 leaving/inner/l2; do
    printf 'content of %s\n' "$f" >"$DATA/$f"
done
printf 'i am a file\n' >"$DATA/becomes-dir"
assert_head_matches_data

# a file rename: the commit says so
mv "$DATA/a.txt" "$DATA/b.txt"
assert_head_matches_data
head_lacks a.txt || fail "a.txt still in HEAD after mv a.txt b.txt"
msg=$(g log -1 --format=%B main)
assert_contains "$msg" "b.txt" "the commit message of a rename"
case "$msg" in *renamed*|*deleted*a.txt*) ;; *) fail "the commit message of mv a.txt b.txt mentions neither a rename nor a.txt's deletion: $msg" ;; esac

# a directory rename within the tree; the moved directory is still watched
mv "$DATA/dir1" "$DATA/dir1-renamed"
assert_head_matches_data
printf 'written after the move\n' >"$DATA/dir1-renamed/sub/new.txt"
printf 'changed after the move\n' >>"$DATA/dir1-renamed/f1"
assert_head_matches_data
assert_eq "" "$(head_list | grep '^dir1/' || true)" "paths under dir1/ after it was renamed"

# rm -r a directory
rm -r "$DATA/dir2"
assert_head_matches_data

# a directory replaced by a file of the same name, and a file by a directory
rm -r "$DATA/victim"
printf 'victim is a file now\n' >"$DATA/victim"
rm "$DATA/becomes-dir"
mkdir -p "$DATA/becomes-dir/x"
printf 'under the new dir\n' >"$DATA/becomes-dir/x/y.txt"
assert_head_matches_data
assert_eq 100644 "$(g ls-tree HEAD -- victim | cut -d' ' -f1)" "mode of victim"

# out of the tree, and into it
mv "$DATA/leaving" "$T/outside"
mkdir -p "$T/incoming/deeper"
printf 'came from outside\n' >"$T/incoming/one.txt"
printf 'came from further outside\n' >"$T/incoming/deeper/two.txt"
mv "$T/incoming" "$DATA/incoming"
assert_head_matches_data
printf 'written in a directory moved in\n' >"$DATA/incoming/deeper/three.txt"
printf 'written in a directory moved out\n' >"$T/outside/not-synced.txt"
assert_head_matches_data

# everything at once, then the exact lists
mv "$DATA/b.txt" "$DATA/incoming/b.txt"
mv "$DATA/dir1-renamed/sub" "$DATA/sub-up"
rm -r "$DATA/dir1-renamed"
mv "$DATA/victim" "$DATA/victim.txt"
assert_head_matches_data
want=$(printf '%s\n' becomes-dir/x/y.txt incoming/b.txt incoming/deeper/three.txt incoming/deeper/two.txt \
    incoming/one.txt sub-up/f3 sub-up/new.txt victim.txt)
assert_eq "$want" "$(data_list)" "the data directory (test setup)"
assert_eq "$want" "$(head_list)" "the paths in HEAD"
for p in $want; do head_file_matches "$p" || fail "HEAD:$p differs from the file"; done

# and a restart agrees: nothing pending, nothing to commit
stop_agent
assert_eq 0 "$(status_field pending)" "pending while stopped"
