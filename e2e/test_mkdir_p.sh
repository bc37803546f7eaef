#!/usr/bin/env bash
# A directory tree created with mkdir -p and filled at once is committed completely: the files made
# before the agent could watch the new directories are not missed.
source "$(dirname "$0")/lib.sh"

start_agent phone

mkdir -p "$DATA/a/b/c" && printf 'c\n' >"$DATA/a/b/c/file.txt" && printf 'b\n' >"$DATA/a/b/file.txt"
wait_until head_file_matches a/b/c/file.txt
assert_head_matches_data

# many trees at once, deep ones, files at every level, written as fast as the shell can
for t in $(seq 1 20); do
    deep="$DATA/t$t/l1/l2/l3/l4/l5/l6/l7/l8/l9/l10"
    mkdir -p "$deep"
    d="$DATA/t$t"
    for level in $(seq 0 10); do
        for f in 1 2 3; do printf 'tree %d level %d file %d\n' "$t" "$level" "$f" >"$d/f$f.txt"; done
        d="$d/l$((level + 1))"
    done
done
# a tree moved into place right after being filled, and one made by cp -r
mkdir -p "$T/staging/x/y/z" && printf 'staged\n' >"$T/staging/x/y/z/s.txt" && mv "$T/staging" "$DATA/staged"
cp -r "$DATA/t1" "$DATA/copy-of-t1"
mkdir -p "$DATA/copy-of-t1/l1/new/dirs" && printf 'new\n' >"$DATA/copy-of-t1/l1/new/dirs/n.txt"

assert_head_matches_data
assert_eq $((2 + 20 * 33 + 1 + 33 + 1)) "$(head_list | wc -l)" "files in HEAD"
assert_eq "$(data_list)" "$(head_list)" "the paths in HEAD"
stop_agent
