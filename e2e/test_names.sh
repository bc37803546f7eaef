#!/usr/bin/env bash
# Any byte sequence Linux allows in a name round-trips byte-exactly: a newline, invalid UTF-8,
# 250 bytes, and friends. Compared with the raw bytes of `git ls-tree -z`, not with any rendering.
source "$(dirname "$0")/lib.sh"

start_agent phone

long=$(printf 'L%.0s' $(seq 1 246)).txt          # 250 bytes
longdir=$(printf 'D%.0s' $(seq 1 250))           # 250 bytes
names=(
    $'new\nline.txt'
    $'\xff\xfe'
    $'bad-\xc3\x28-utf8-\x80.txt'
    "$long"
    "$longdir/$long"
    $'dir-\xfe/inner\nfile'
    $'tab\there.txt'
    'with space.txt'
    'back\slash.txt'
    '-leading-dash'
    '*?[glob].txt'
    '"quoted".txt'
    $'caf\xc3\xa9.txt'          # café, NFC
    $'cafe\xcc\x81.txt'         # café, NFD: another name
    $'\xf0\x9f\x93\x9d.txt'     # an emoji
)
i=0
for n in "${names[@]}"; do
    i=$((i + 1))
    case "$n" in */*) mkdir -p "$DATA/${n%/*}" ;; esac
    printf 'content %d\n\xff\x00binary too\n' "$i" >"$DATA/$n"
done
# a symlink whose name and target are not UTF-8
ln -s $'target-\xff' "$DATA/"$'link-\xfe'

printf '%s\0' "${names[@]}" $'link-\xfe' | sort -z >"$T/want"
in_head() { head_files | sort -z >"$T/have" && cmp -s "$T/want" "$T/have"; }
poll_until in_head || true
in_head || {
    log "wanted (od -c):"; od -c "$T/want" | head -n 30 >&2
    log "HEAD has (od -c):"; od -c "$T/have" | head -n 30 >&2
    fail "the names in HEAD are not byte-for-byte the names in the data directory"
}
for n in "${names[@]}"; do
    head_file_matches "$n" || fail "the bytes of $(printf '%q' "$n") differ in HEAD"
done
assert_eq 120000 "$(g ls-tree -z HEAD | tr '\0' '\n' | grep -a $'link-\xfe$' | cut -d' ' -f1)" "mode of the non-UTF-8 link"
[ "$(g cat-file blob HEAD:$'link-\xfe')" = $'target-\xff' ] || fail "the non-UTF-8 link target is not stored byte-exactly"
assert_head_matches_data
wait_until pending_is 0

# the agent reads its own store back the same way: after a restart nothing looks changed
stop_agent
n=$(commit_count)
assert_eq 0 "$(status_field pending)" "pending while stopped with unusual names"
run_agent
printf 'marker\n' >"$DATA/marker.txt"
wait_until head_has marker.txt
assert_eq $((n + 1)) "$(commit_count)" "commits after restarting with unusual names and adding one file"
assert_eq "added: marker.txt" "$(g log -1 --format=%b main | sed '/^$/d')" "the last commit's paths"

# renaming and deleting unusual names
mv "$DATA/"$'new\nline.txt' "$DATA/"$'renamed\n\xff.txt'
rm "$DATA/"$'\xff\xfe'
wait_until head_file_matches $'renamed\n\xff.txt'
wait_until head_lacks $'\xff\xfe'
head_lacks $'new\nline.txt' || fail "the old name of a renamed file is still in HEAD"
assert_head_matches_data
stop_agent
