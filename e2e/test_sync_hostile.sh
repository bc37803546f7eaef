#!/usr/bin/env bash
# Issue 3, hostile peers: while the watch's agent is stopped, its store gets commits crafted with plain
# git: a tree entry named `..` holding a file `escape`, then a tree entry named `.git` holding `config`
# and `hooks/post-checkout`. The running phone fetches them and refuses them: nothing named escape
# appears anywhere (inside or outside its data directory), no .git in its data directory, none of the
# crafted commits in its main, status shows the refusal (naming the paths) in the peer's lastError,
# and the phone keeps working (its local changes are still committed). Once the watch's history is
# honest again, the phone syncs with it again and the error clears.
source "$(dirname "$0")/lib.sh"
X="$T/expected"; mkdir -p "$X"

init_pair 50
start_device watch
printf 'an honest file\n' >"$X/honest"
cp "$X/honest" "$DATA/honest.txt"
wait_until head_file_matches honest.txt
start_device phone
wait_until same_file phone honest.txt "$X/honest"
wait_converged
stop_device watch

W=$(store_of watch)
wg() { git --git-dir="$W" "$@"; }
export GIT_AUTHOR_NAME=watch GIT_AUTHOR_EMAIL=watch@syncagent GIT_COMMITTER_NAME=watch GIT_COMMITTER_EMAIL=watch@syncagent

# craft TREE_SPEC_FOR_ENTRY NAME MESSAGE: a commit on the watch's main whose root tree is main's plus
# a directory entry NAME (a tree given as mktree input lines on stdin) and a harmless new file.
craft() {
    local name=$1 msg=$2 sub root ok
    sub=$(wg mktree) || fail "git mktree (the $name subtree) failed"
    ok=$(printf 'an innocent-looking file next to %s\n' "$name" | wg hash-object -w --stdin)
    root=$( { wg ls-tree main; printf '040000 tree %s\t%s\n' "$sub" "$name"; printf '100644 blob %s\tinnocent-%s.txt\n' "$ok" "$(printf '%s' "$name" | tr -c 'a-z' x)"; } | wg mktree ) \
        || fail "git mktree (root with $name) failed"
    wg commit-tree "$root" -p main -m "$msg" || fail "git commit-tree failed"
}

# ---- an entry named .. ------------------------------------------------------------------------------
blob=$(printf 'pwned\n' | wg hash-object -w --stdin)
c1=$(printf '100644 blob %s\tescape\n' "$blob" | craft .. "watch: 1 added")
wg ls-tree -r --name-only "$c1" | grep -qx '../escape' || fail "the crafted commit does not hold ../escape: $(wg ls-tree -r --name-only "$c1")"
phone_main=$(main_of phone)
wg update-ref refs/heads/main "$c1"

switch_to phone
refused() { peer_get phone watch lastError | grep -qi 'refus'; }
wait_until refused
err=$(peer_get phone watch lastError)
assert_contains "$err" "../escape" "lastError after the .. entry (naming the refused path)"
assert_eq bad-history "$(peer_get phone watch errorCode)" "errorCode of a refused history"
log "lastError: $err"
assert_eq "" "$(find "$T" -name escape)" "files named escape under the test directory"
[ ! -e "$T/phone/escape" ] || fail "$T/phone/escape was written"
[ ! -e "$T/escape" ] || fail "$T/escape was written"
absent phone innocent-xx.txt || fail "the refused commit's other file was written into the phone's data directory"
! on phone g merge-base --is-ancestor "$c1" main 2>/dev/null || fail "the phone's main contains the hostile commit"
agent_alive || fail "the phone's agent died after the hostile commit"

# the phone keeps working
printf 'still working\n' >"$X/after1"
cp "$X/after1" "$DATA/after1.txt"
wait_until head_file_matches after1.txt
assert_head_matches_data

# ---- an entry named .git (on top of the .. commit) -----------------------------------------------------
hook=$(printf '#!/bin/sh\ntouch %s/hooked\n' "$T" | wg hash-object -w --stdin)
cfg=$(printf '[core]\n\thooksPath = hooks\n' | wg hash-object -w --stdin)
hooks=$(printf '100755 blob %s\tpost-checkout\n' "$hook" | wg mktree)
c2=$( { printf '100644 blob %s\tconfig\n' "$cfg"; printf '040000 tree %s\thooks\n' "$hooks"; } | craft .git "watch: 2 added")
wg update-ref refs/heads/main "$c2"
refused_git() { peer_get phone watch lastError | grep -q '\.git/'; }   # (the url ends in store.git)
wait_until refused_git
log "lastError: $(peer_get phone watch lastError)"
[ ! -e "$DATA/.git" ] || fail "the phone's data directory got a .git from the hostile commit"
[ ! -e "$T/hooked" ] || fail "a hook from the hostile commit ran"
absent phone innocent-xgit.txt || fail "the refused .git commit's other file was written into the phone's data directory"
assert_eq "" "$(find "$T" -name escape)" "files named escape under the test directory"
! on phone g merge-base --is-ancestor "$c2" main 2>/dev/null || fail "the phone's main contains the hostile .git commit"
on phone g merge-base --is-ancestor "$phone_main" main || fail "the phone's main lost its history"
on phone g cat-file -e "main:honest.txt" || fail "the phone's main lost honest.txt"

printf 'still working after .git\n' >"$X/after2"
cp "$X/after2" "$DATA/after2.txt"
wait_until head_file_matches after2.txt
assert_head_matches_data
wait_until pending_is 0
agent_alive || fail "the phone's agent died"
assert_ne null "$(peer_get phone watch lastError)" "lastError while the peer's history is hostile"

# ---- the watch's history is put right: the phone syncs with it again ---------------------------------------
wg update-ref refs/heads/main "$phone_main"
start_device watch
wait_until same_file watch after2.txt "$X/after2"
printf 'honest again\n' >"$X/honest2"
cp "$X/honest2" "$(data_of watch)/honest2.txt"
wait_until same_file phone honest2.txt "$X/honest2"
wait_until peer_is phone watch lastError null
wait_converged
for d in phone watch; do
    absent "$d" innocent-xx.txt || fail "the refused .. commit's innocent file reached $d"
    absent "$d" innocent-xgit.txt || fail "the refused .git commit's innocent file reached $d"
    [ ! -e "$(data_of "$d")/.git" ] || fail "$d's data directory has a .git"
done
assert_eq "" "$(find "$T" -name escape)" "files named escape under the test directory"
stop_device watch
stop_device phone
