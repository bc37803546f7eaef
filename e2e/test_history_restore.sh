#!/usr/bin/env bash
# Issue 11, history and restore, the way versions actually arrive: through a peer. A file is added on
# the phone, edited on the watch, renamed and edited on the phone; `history` on the watch lists all
# four versions with the right device, change and blob, following the rename. `restore --to` writes
# an old version out and changes nothing; `restore` of a deleted file (agent running) and of a
# directory at a time (on the other device) come back on every device; `restore` with the agent
# stopped works under the lock; a name that is not UTF-8 keeps its bytes; bad input says what to do.
source "$(dirname "$0")/lib.sh"
X="$T/expected"; mkdir -p "$X"
sa() { "$SYNCAGENT" "$1" --config "$CONFIG" "${@:2}"; }
blob_of() { git hash-object "$1"; }
# entry N FIELD: a field of the N-th entry of the last `history --json` (in $T/h.json)
entry() { json_get "$@" <"$T/h.json"; }

init_pair 50
start_device phone
start_device watch

printf 'version 1, written on the phone\n' >"$X/v1"
printf 'version 2, edited on the watch\n' >"$X/v2"
printf 'version 3, edited on the phone after the rename\n' >"$X/v3"
mkdir -p "$(data_of phone)/notes"
cp "$X/v1" "$(data_of phone)/notes/a.txt"
wait_until same_file watch notes/a.txt "$X/v1"
cp "$X/v2" "$(data_of watch)/notes/a.txt"
wait_until same_file phone notes/a.txt "$X/v2"
mv "$(data_of phone)/notes/a.txt" "$(data_of phone)/notes/b.txt"
wait_until same_file watch notes/b.txt "$X/v2"
cp "$X/v3" "$(data_of phone)/notes/b.txt"
wait_until same_file watch notes/b.txt "$X/v3"
printf 'another note\n' >"$(data_of watch)/notes/other.txt"
wait_until same_file phone notes/other.txt "$(data_of watch)/notes/other.txt"
wait_converged

# ---- history on the watch, following the rename ---------------------------------------------------
on watch sa history notes/b.txt --json >"$T/h.json" || fail "history --json failed"
assert_eq 4 "$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$T/h.json")" "versions of notes/b.txt"
assert_eq "modified phone $(blob_of "$X/v3")" "$(entry 0 change) $(entry 0 device) $(entry 0 blob)" "newest version"
assert_eq "renamed phone notes/a.txt $(blob_of "$X/v2")" "$(entry 1 change) $(entry 1 device) $(entry 1 from) $(entry 1 blob)" "the rename"
assert_eq "modified watch $(blob_of "$X/v2")" "$(entry 2 change) $(entry 2 device) $(entry 2 blob)" "the watch's edit"
assert_eq "added phone $(blob_of "$X/v1")" "$(entry 3 change) $(entry 3 device) $(entry 3 blob)" "the first version"
v1_commit=$(entry 3 commit)
# the same history on the phone (same commits), and --limit
on phone sa history notes/b.txt --json --limit 2 >"$T/h2.json"
assert_eq "$(entry 0 commit) $(entry 1 commit)" "$(json_get 0 commit <"$T/h2.json") $(json_get 1 commit <"$T/h2.json")" "phone's history"
assert_eq 2 "$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$T/h2.json")" "--limit 2"
out=$(on watch sa history notes/b.txt)
assert_contains "$out" "renamed from notes/a.txt" "text history"
assert_contains "$out" "syncagent restore" "text history's hint"

# ---- restore --to: only writes the version out ----------------------------------------------------
before=$(main_of watch)
on watch sa restore notes/b.txt --at "${v1_commit:0:10}" --to "$T/out.txt" >"$T/to.out" || fail "restore --to failed: $(cat "$T/to.out")"
cmp -s "$T/out.txt" "$X/v1" || fail "restore --to wrote $(cat "$T/out.txt")"
same_file watch notes/b.txt "$X/v3" || fail "restore --to changed the data directory"
assert_eq "$before" "$(main_of watch)" "main after restore --to"
on watch sa restore notes/b.txt --at "${v1_commit:0:10}" --to "$T/out.txt" >"$T/to2.out" 2>&1 && fail "restore --to over an existing file succeeded"
assert_contains "$(cat "$T/to2.out")" "already exists" "restore --to over an existing file"
cmp -s "$T/out.txt" "$X/v1" || fail "restore --to overwrote $T/out.txt"

# ---- a deleted file comes back (agent running; no --at: the version before the deletion) ---------
rm "$(data_of phone)/notes/b.txt"
wait_until absent watch notes/b.txt
out=$(on phone sa restore notes/b.txt) || fail "restore of a deleted file failed: $out"
assert_contains "$out" "1 written" "restore output"
wait_until same_file phone notes/b.txt "$X/v3"
wait_until same_file watch notes/b.txt "$X/v3"
wait_converged
on phone sa history notes/b.txt --json >"$T/h.json"
assert_eq "added deleted" "$(entry 0 change) $(entry 1 change)" "history after the deletion and the restore"

# ---- a directory at a time, restored on the other device --------------------------------------------
now_after() { [ "$(date +%s)" -gt "$1" ]; }
wait_until now_after "$(git --git-dir="$(store_of phone)" log -1 --format=%ct main)"
at=$(date -u +%Y-%m-%dT%H:%M:%SZ)
wait_until now_after "$(date -d "$at" +%s)"   # every later commit is after $at
rm -r "$(data_of phone)/notes"
mkdir -p "$(data_of phone)/notes"
printf 'added after the time\n' >"$(data_of phone)/notes/later.txt"
wait_until same_file watch notes/later.txt "$(data_of phone)/notes/later.txt"
wait_until absent watch notes/b.txt
wait_converged
out=$(on watch sa restore notes/ --at "$at") || fail "restore notes/ --at $at failed: $out"
assert_contains "$out" "2 written, 1 removed" "directory restore"
for d in phone watch; do
    wait_until same_file "$d" notes/b.txt "$X/v3"
    wait_until same_file "$d" notes/other.txt "$(data_of watch)/notes/other.txt"
    wait_until absent "$d" notes/later.txt
done
wait_converged

# ---- with the agent stopped: under the lock, then it syncs ------------------------------------------
v2_commit=$(on watch sa history notes/b.txt --json | python3 -c 'import json,sys; print([e["commit"] for e in json.load(sys.stdin) if e["device"] == "watch" and e["change"] == "modified"][0])')
stop_device watch
out=$(on watch sa restore notes/b.txt --at "$v2_commit") || fail "restore with the agent stopped failed: $out"
same_file watch notes/b.txt "$X/v2" || fail "the stopped watch's notes/b.txt is not version 2"
on watch head_file_matches notes/b.txt || fail "the restore was not committed"
start_device watch
wait_until same_file phone notes/b.txt "$X/v2"
wait_converged

# ---- a name that is not UTF-8 -----------------------------------------------------------------------
odd=$'caf\xe9 \x01.txt'
printf 'odd 1\n' >"$(data_of phone)/$odd"
wait_until same_file watch "$odd" "$(data_of phone)/$odd"
printf 'odd 2, from the watch\n' >"$(data_of watch)/$odd"
wait_until same_file phone "$odd" "$(data_of watch)/$odd"
wait_converged
on phone sa history "$odd" --json >"$T/h.json"
assert_eq "modified watch added phone" "$(entry 0 change) $(entry 0 device) $(entry 1 change) $(entry 1 device)" "history of a non-UTF-8 name"
assert_eq "$(printf '%s' "$odd" | od -An -tx1 | tr -d ' \n')" "$(entry 0 pathBytes)" "pathBytes of a non-UTF-8 name"
on phone sa restore "$odd" --to "$T/odd.out" >/dev/null || fail "restore --to of a non-UTF-8 name failed"
[ "$(cat "$T/odd.out")" = "odd 1" ] || fail "restore --to of a non-UTF-8 name wrote $(cat "$T/odd.out")"

# ---- bad input ------------------------------------------------------------------------------------
out=$(on phone sa history no/such/file.txt 2>&1) && fail "history of a path never committed succeeded"
assert_contains "$out" "no/such/file.txt" "history of an unknown path"
out=$(on phone sa restore notes/b.txt --at yesterday 2>&1) && fail "restore --at yesterday succeeded"
assert_contains "$out" "neither a commit" "restore --at with a bad value"
out=$(on phone sa restore notes/b.txt --at 2001-01-01T00:00:00Z 2>&1) && fail "restore before the first commit succeeded"
assert_contains "$out" "no commit from 2001-01-01T00:00:00Z" "restore before the first commit"
wait_converged
log "history and restore through peers: ok"
