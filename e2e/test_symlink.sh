#!/usr/bin/env bash
# Symbolic links are stored as links (mode 120000, the target as the blob), never followed: a link to
# /etc commits nothing under etc/; the same for a link to a directory inside the data directory
# and for a dangling link.
source "$(dirname "$0")/lib.sh"

start_agent phone

ln -s /etc "$DATA/etc"
mkdir -p "$DATA/real"
printf 'inside\n' >"$DATA/real/inside.txt"
ln -s real "$DATA/alias"
ln -s does/not/exist "$DATA/dangling"
printf 'plain\n' >"$DATA/plain.txt"

wait_until head_has etc
wait_until head_has alias
wait_until head_has dangling
wait_until head_file_matches plain.txt
wait_until head_file_matches real/inside.txt
wait_until pending_is 0

link_is() { # PATH TARGET
    local entry mode type
    entry=$(g ls-tree HEAD -- "$1")
    mode=${entry%% *}; type=$(cut -d' ' -f2 <<<"$entry")
    assert_eq 120000 "$mode" "mode of $1 in HEAD"
    assert_eq blob "$type" "type of $1 in HEAD"
    assert_eq "$2" "$(g cat-file blob "HEAD:$1")" "the link target stored for $1"
    [ "$(g cat-file -s "HEAD:$1")" = "${#2}" ] || fail "the blob of $1 is not exactly the target '$2'"
}
link_is etc /etc
link_is alias real
link_is dangling does/not/exist

assert_eq "" "$(head_list | grep -E '^(etc|alias|dangling)/' || true)" "paths committed under a link"
assert_eq "" "$(all_committed_paths | grep -E '^(etc|alias|dangling)/' || true)" "paths under a link in any commit"
assert_head_matches_data

# retargeting a link is a modification of the link
ln -sfn /usr "$DATA/etc"
link_now() { [ "$(g cat-file blob HEAD:etc 2>/dev/null)" = /usr ]; }
wait_until link_now
link_is etc /usr
# a link replaced by a regular file, and back
rm "$DATA/alias"
printf 'now a file\n' >"$DATA/alias"
wait_until head_file_matches alias
assert_eq 100644 "$(g ls-tree HEAD -- alias | cut -d' ' -f1)" "mode of alias after it became a file"
assert_head_matches_data
stop_agent
