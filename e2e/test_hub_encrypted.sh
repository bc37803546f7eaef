#!/usr/bin/env bash
# Issue 48: an encrypted hub. Three devices share a key made by `syncagent key new` and meet only
# through a bare repository (a path). They converge; a change reaches the others. A scan of every
# object and ref on the hub (decompressed) finds none of the test's file names, contents, device
# names or commit messages. Then, with the agents stopped and one-shot syncs: the hub puts an old
# push back, a sealed object's byte is changed (the hub rewrote the object and its tree), two
# objects are swapped: each is refused with an error naming the hub, and nothing changes on the
# device. A device with another key gets the key error and nothing. Then the good hub is back and
# the devices converge again.
source "$(dirname "$0")/lib.sh"

HUB="$T/family.git"
git init -q --bare "$HUB"
"$SYNCAGENT" key new "$T/hub.key" >"$T/key.out" || fail "syncagent key new: $(cat "$T/key.out")"
assert_eq 600 "$(stat -c %a "$T/hub.key")" "the key file's mode"
grep -q '^syncagent-hub-key-v1 [0-9a-f-]*$' "$T/hub.key" || fail "the key file: $(cat "$T/hub.key")"
"$SYNCAGENT" key new "$T/hub.key" >/dev/null 2>&1 && fail "key new overwrote an existing key"
DEVICES=(phone watch tablet)
for d in "${DEVICES[@]}"; do
    init_device "$d" 50
    join_hub "$d" "$HUB"
    on "$d" set_peer hub key_file "\"$T/hub.key\""
done

same_everywhere() {
    local first d
    first=$(tree_of "$1")
    [ -n "$first" ] || return 1
    for d in "$@"; do
        [ "$(tree_of "$d")" = "$first" ] && on "$d" pending_is 0 && on "$d" head_matches_data && data_dirs_equal "$1" "$d" || return 1
    done
}
wait_same() { WAIT_TIMEOUT=${WAIT_TIMEOUT:-60} poll_until same_everywhere "$@" || fail "devices $* did not converge through the encrypted hub"; }

for d in "${DEVICES[@]}"; do
    printf 'zebra-secret-%s: the recipe holds saffron\n' "$d" >"$(data_of "$d")/recipe-of-the-$d.txt"
    start_device "$d"
done
wait_same phone watch tablet
for d in "${DEVICES[@]}"; do for o in "${DEVICES[@]}"; do
    grep -q "zebra-secret-$o" "$(data_of "$d")/recipe-of-the-$o.txt" || fail "$d lacks $o's file"
done; done
printf 'edited on the watch: quokka-marmalade\n' >"$(data_of watch)/recipe-of-the-phone.txt"
for d in phone tablet; do wait_until grep -q quokka-marmalade "$(data_of "$d")/recipe-of-the-phone.txt"; done
wait_same phone watch tablet
log "three devices converged through the encrypted hub; an edit reached the others"

# ---- the hub holds nothing readable -------------------------------------------------------------------
git --git-dir="$HUB" cat-file --batch-all-objects --batch >"$T/hub.objects"
git --git-dir="$HUB" for-each-ref --format='%(refname)' >"$T/hub.refs"
[ "$(wc -l <"$T/hub.refs")" -ge 3 ] || fail "the hub has too few refs: $(cat "$T/hub.refs")"
python3 - "$T/hub.objects" "$T/hub.refs" <<'PY' || fail "the hub holds plaintext (above)"
import sys
data = open(sys.argv[1], "rb").read() + open(sys.argv[2], "rb").read()
needles = [b"zebra-secret", b"saffron", b"recipe-of-the", b"quokka", b"marmalade", b"phone", b"watch", b"tablet",
           b"added", b"modified", b"syncagent.toml"]
found = [n.decode() for n in needles if n in data]
if found:
    print("found on the hub: %s" % ", ".join(found)); sys.exit(1)
PY
log "no file name, content, device name or commit message on the hub ($(wc -c <"$T/hub.objects") bytes of objects scanned)"

# ---- a hub that lies is refused -----------------------------------------------------------------------
for d in "${DEVICES[@]}"; do stop_device "$d"; done
PB=$("$SYNCAGENT" key ref --key-file "$T/hub.key" --device phone)
[[ "$PB" =~ ^refs/heads/devices/[0-9a-f]{32}$ ]] || fail "key ref printed '$PB'"
grep -qx "$PB" "$T/hub.refs" || fail "the phone's branch $PB is not on the hub: $(cat "$T/hub.refs")"
hubgit() { git -c user.name=hub -c user.email=hub@example --git-dir="$HUB" "$@"; }
sync_of() { "$SYNCAGENT" sync --config "$T/$1/syncagent.toml" 2>&1; }

old=$(hubgit rev-parse "$PB")
printf 'a new line from the phone: wombat\n' >"$(data_of phone)/later.txt"
sync_of phone >"$T/phone.sync" || fail "phone's sync: $(cat "$T/phone.sync")"
new=$(hubgit rev-parse "$PB")
[ "$old" != "$new" ] || fail "the phone's push did not move its branch on the hub"

# refused WHAT PATTERN: the watch's one-shot sync fails with PATTERN and its main and data stay
refused() {
    local before out
    before=$(main_of watch)
    out=$(sync_of watch) && fail "$1: the watch's sync succeeded: $out"
    assert_contains "$out" "$2" "$1: the watch's sync"
    assert_contains "$out" "hub" "$1: the error names the hub"
    assert_eq "$before" "$(main_of watch)" "$1: the watch's main"
    [ ! -e "$(data_of watch)/later.txt" ] || fail "$1: the watch wrote later.txt"
    log "$1: $(printf '%s\n' "$out" | grep -m1 FAILED)"
}
# forged FUNC: a copy of the newest push whose objects' tree is FUNC's listing (what a hub that
# rewrites objects, trees and commits can do; it cannot make them open)
forged() {
    local m parent root
    m=$(hubgit rev-parse "$new:m") parent=$(hubgit rev-parse "$new^")
    root=$(printf '100644 blob %s\tm\n040000 tree %s\to\n' "$m" "$("$1" | hubgit mktree)" | hubgit mktree)
    hubgit commit-tree "$root" -p "$parent" -m sealed
}
flip() {  # the first object with one byte changed
    local mode type id name changed
    read -r mode type id name < <(hubgit ls-tree "$(hubgit rev-parse "$new:o")" | head -1)
    hubgit cat-file blob "$id" | python3 -c 'import sys; b=bytearray(sys.stdin.buffer.read()); b[len(b)//2]^=1; sys.stdout.buffer.write(b)' >"$T/flipped"
    changed=$(hubgit hash-object -w "$T/flipped")
    hubgit ls-tree "$(hubgit rev-parse "$new:o")" | sed "s/$id/$changed/"
}
swap() {  # the first two objects under each other's names
    hubgit ls-tree "$(hubgit rev-parse "$new:o")" | awk -F'\t' 'NR==1 {a=$1; an=$2; next} NR==2 {print $1 "\t" an; print a "\t" $2; next} {print}'
}
[ "$(hubgit ls-tree "$(hubgit rev-parse "$new:o")" | wc -l)" -ge 2 ] || fail "the phone's newest push holds fewer than two objects"
hubgit update-ref "$PB" "$(forged flip)"
refused "a changed byte" "fails its check"
hubgit update-ref "$PB" "$(forged swap)"
refused "two objects swapped" "fails its check"
# an old push put back, after the watch saw the new one
hubgit update-ref "$PB" "$new"
sync_of watch >"$T/watch.sync" || fail "the watch's sync of the good hub: $(cat "$T/watch.sync")"
[ -e "$(data_of watch)/later.txt" ] || fail "the watch did not get later.txt from the good hub"
before=$(main_of watch)
hubgit update-ref "$PB" "$old"
out=$(sync_of watch) && fail "an old push put back: the watch's sync succeeded: $out"
assert_contains "$out" "older or rewritten history" "an old push put back"
log "an old push put back: $(printf '%s\n' "$out" | grep -m1 FAILED)"
assert_eq "$before" "$(main_of watch)" "an old push put back: the watch's main"
hubgit update-ref "$PB" "$new"
log "refused: a changed byte, two objects swapped, an old push put back; nothing applied"

# ---- another key ---------------------------------------------------------------------------------------
"$SYNCAGENT" key new "$T/other.key" >/dev/null
init_device stranger 50
join_hub stranger "$HUB"
on stranger set_peer hub key_file "\"$T/other.key\""
out=$(sync_of stranger) && fail "a device with another key synced: $out"
assert_contains "$out" "key differs" "a device with another key"
log "another key: $(printf '%s\n' "$out" | grep -m1 FAILED)"
[ -z "$(ls -A "$(data_of stranger)")" ] || fail "the device with another key wrote files: $(ls "$(data_of stranger)")"
log "another key: refused, nothing written"

# ---- a device without the key (or an older version) writes plain branches ------------------------------
init_device oldie 50
join_hub oldie "$HUB"
printf 'plain\n' >"$(data_of oldie)/plain.txt"
sync_of oldie >"$T/oldie.sync" || fail "the device without a key could not push: $(cat "$T/oldie.sync")"
hubgit rev-parse -q --verify refs/heads/devices/oldie >/dev/null || fail "the device without a key pushed no plain branch"
before=$(main_of watch)
out=$(sync_of watch) && fail "a hub with a plain branch: the watch's sync succeeded: $out"
assert_contains "$out" "holds unencrypted branches" "a hub with a plain branch"
assert_eq "$before" "$(main_of watch)" "a hub with a plain branch: the watch's main"
[ ! -e "$(data_of watch)/plain.txt" ] || fail "the watch took the plain device's file"
log "a plain branch: $(printf '%s\n' "$out" | grep -m1 FAILED)"
for r in $(hubgit for-each-ref --format='%(refname)' | grep -E 'oldie'); do hubgit update-ref -d "$r"; done

# ---- back to work --------------------------------------------------------------------------------------
for d in "${DEVICES[@]}"; do start_device "$d"; done
wait_same phone watch tablet
git --git-dir="$HUB" fsck --no-progress >"$T/fsck" 2>&1 || fail "git fsck of the hub: $(cat "$T/fsck")"
log "converged again; the hub is a clean git repository"
