#!/usr/bin/env bash
# Issue 43.4 (Mutagen's reconciliation table replayed on two devices):
# (a) one device deletes a whole directory (`rm -r`) while the other deletes only part of it, both
#     before they meet (agents stopped; each commits its change at its start, then they merge). When
#     the partial deletion empties the directory, or a directory inside it, that emptied directory is
#     no change of its own: the whole deletion wins and the directory is gone on both devices (in
#     either order of merges, whichever device deleted it whole). A partial deletion that leaves files
#     behind goes the same way; a directory made inside it, or one emptied where nobody deleted it,
#     still syncs as an empty directory.
# (b) a FIFO standing where a peer's empty directory must go (f1: a new one; f2: one the peer emptied,
#     which the FIFO replaced here): `status` (running and stopped), `conflicts`, the events and the
#     log name the directory, never the store's internal marker `.syncagent-keep`. Taking the FIFO
#     away is no deletion (README: what is not synced is never a deletion): the directory lands by
#     itself and the peer keeps it.
source "$(dirname "$0")/lib.sh"

init_pair 50

is_dir() { [ -d "$(data_of "$1")/$2" ] && [ ! -L "$(data_of "$1")/$2" ]; }
# gone NAME DIR: nothing at DIR on NAME's disk and nothing under it in NAME's main
gone() {
    absent "$1" "$2" && [ -z "$(git --git-dir="$(store_of "$1")" ls-tree -r --name-only main -- "$2" 2>/dev/null)" ]
}
other_of() { if [ "$1" = phone ]; then echo watch; else echo phone; fi; }

# leaks NAME: every place NAME shows the user a text (status --json problems, the messages of its
# events, its agents' logs, `conflicts`) that names the store's marker, one per line.
leaks() {
    local cfg="$T/$1/syncagent.toml"
    {
        "$SYNCAGENT" status --config "$cfg" --json | python3 -c '
import json, sys
for p in json.load(sys.stdin).get("problems") or []:
    print("status problem: %s" % p)'
        "$SYNCAGENT" events --config "$cfg" | python3 -c '
import json, sys
for line in sys.stdin:
    e = json.loads(line)
    for k in ("message", "error", "reason"):
        if e.get(k): print("event %s %s: %s" % (e.get("type"), k, e[k]))'
        cat "$T/$1"/run-*.log 2>/dev/null | sed 's/^/log: /'
        "$SYNCAGENT" conflicts --config "$cfg" 2>&1 | sed 's/^/conflicts: /'
    } | grep -F .syncagent-keep || true
}

# Files that never change: no deletion below comes near the safety hold (50% and 20 files).
mkdir -p "$(data_of phone)/keep"
for i in $(seq 1 40); do printf 'kept %d\n' "$i" >"$(data_of phone)/keep/f$i.txt"; done
start_device phone
start_device watch
wait_converged

# ---- (a) a whole deletion against a partial one ---------------------------------------------------
# Each case is a directory under the cycle's own prefix: its files, then what the device deleting
# only part of it does.
#   e1  {a}                 rm a               emptied (1 file)
#   e2  {a, b}              rm a b             emptied (2 files)
#   n1  {a, sub/b}          rm sub/b           a directory inside emptied, a file left
#   n2  {x/y/f}             rm x/y/f           a nested directory emptied
#   l1  {a, b}              rm a               1 file left
#   l2  {a, b, c}           rm a               2 files left
#   l3  {a/x, b}            rm -r a            nested, 1 file left
#   m1  {a}                 rm a; mkdir new    a directory made inside: it stays (empty), the rest goes
#   s1  {a}                 rm a               not deleted by the other device: stays, empty
CASES_GONE="e1 e2 n1 n2 l1 l2 l3"
make_cases() { # DEVICE PREFIX
    local d
    d="$(data_of "$1")/$2"
    mkdir -p "$d/e1" "$d/e2" "$d/n1/sub" "$d/n2/x/y" "$d/l1" "$d/l2" "$d/l3/a" "$d/m1" "$d/s1"
    printf 'e1a\n' >"$d/e1/a"
    printf 'e2a\n' >"$d/e2/a"; printf 'e2b\n' >"$d/e2/b"
    printf 'n1a\n' >"$d/n1/a"; printf 'n1b\n' >"$d/n1/sub/b"
    printf 'n2f\n' >"$d/n2/x/y/f"
    printf 'l1a\n' >"$d/l1/a"; printf 'l1b\n' >"$d/l1/b"
    printf 'l2a\n' >"$d/l2/a"; printf 'l2b\n' >"$d/l2/b"; printf 'l2c\n' >"$d/l2/c"
    printf 'l3x\n' >"$d/l3/a/x"; printf 'l3b\n' >"$d/l3/b"
    printf 'm1a\n' >"$d/m1/a"
    printf 's1a\n' >"$d/s1/a"
}
delete_whole() { # DEVICE PREFIX (s1 is left alone)
    local d c
    d="$(data_of "$1")/$2"
    for c in $CASES_GONE m1; do rm -r "${d:?}/$c"; done
}
delete_part() { # DEVICE PREFIX
    local d
    d="$(data_of "$1")/$2"
    rm "$d/e1/a"
    rm "$d/e2/a" "$d/e2/b"
    rm "$d/n1/sub/b"
    rm "$d/n2/x/y/f"
    rm "$d/l1/a"
    rm "$d/l2/a"
    rm -r "$d/l3/a"
    rm "$d/m1/a"; mkdir "$d/m1/new"
    rm "$d/s1/a"
}

# cycle WHOLE FIRST: WHOLE deletes whole directories, the other device parts of them, both while
# stopped; FIRST starts (and commits) first, the other then starts and merges.
cycle() {
    local whole=$1 first=$2 part p second c
    part=$(other_of "$whole")
    second=$(other_of "$first")
    p="w-$whole-$first"
    make_cases "$whole" "$p"
    wait_converged
    stop_device phone
    stop_device watch
    delete_whole "$whole" "$p"
    delete_part "$part" "$p"
    start_device "$first"
    wait_until pending_is 0
    start_device "$second"
    wait_converged
    for c in $CASES_GONE; do
        for d in phone watch; do
            gone "$d" "$p/$c" || fail "$p/$c: $whole deleted it whole and $part only part of it (merged on $second), yet $d holds $(cd "$(data_of "$d")" && find "$p/$c" 2>/dev/null | tr '\n' ' ')$(git --git-dir="$(store_of "$d")" ls-tree -r --name-only main -- "$p/$c" | sed 's/^/main:/' | tr '\n' ' ')"
        done
    done
    for d in phone watch; do
        is_dir "$d" "$p/m1/new" || fail "$p/m1/new, made by $part inside what $whole deleted, is not a directory on $d"
        absent "$d" "$p/m1/a" || fail "$p/m1/a is back on $d"
        is_dir "$d" "$p/s1" || fail "$p/s1, emptied by $part and left alone by $whole, is not a directory on $d"
    done
    log "cycle whole=$whole first=$first: no directory left that neither device wanted"
}
cycle phone phone
cycle phone watch
cycle watch phone
cycle watch watch
for d in phone watch; do
    l=$(leaks "$d"); [ -z "$l" ] || fail "$d shows the store's marker to the user: $l"
done

# ---- (b) a FIFO where a peer's empty directory must go --------------------------------------------
# f1: the phone makes an empty directory where the watch has a FIFO; f2: the phone empties a directory
# the watch replaced with a FIFO.
mkdir -p "$(data_of phone)/f2"
printf 'f2a\n' >"$(data_of phone)/f2/a"
wait_until same_file watch f2/a "$(data_of phone)/f2/a"
wait_converged
stop_device watch
mkdir "$(data_of phone)/f1"
rm "$(data_of phone)/f2/a"
on phone wait_until head_has f1/.syncagent-keep
on phone wait_until head_has f2/.syncagent-keep
mkfifo "$(data_of watch)/f1"
rm -r "$(data_of watch)/f2"; mkfifo "$(data_of watch)/f2"

# names_dir_blocked NAME DIR: one of NAME's status problems names DIR itself (not a path under it)
# and says a FIFO is in the way.
names_dir_blocked() {
    on "$1" status_json | python3 -c '
import json, re, sys
d = sys.argv[1]
ps = json.load(sys.stdin).get("problems") or []
sys.exit(0 if any("FIFO" in p and re.search(r"(^|[\s\"\x27`(])%s([\s\"\x27`):,;.]|$)" % re.escape(d), p) for p in ps) else 1)' "$2"
}
problems_mention() { on "$1" status_field problems | grep -qF "$2"; }

start_device watch
wait_until mains_equal
for f in f1 f2; do
    wait_until problems_mention watch "$f"
    names_dir_blocked watch "$f" || fail "the running watch's status does not name $f and the FIFO in its way: $(on watch status_field problems)"
    [ -p "$(data_of watch)/$f" ] || fail "the watch's FIFO at $f was removed or replaced"
done
l=$(leaks watch); [ -z "$l" ] || fail "the running watch shows the store's marker to the user: $l"
stop_device watch
for f in f1 f2; do
    names_dir_blocked watch "$f" || fail "the stopped watch's status does not name $f and the FIFO in its way: $(on watch status_field problems)"
done
"$SYNCAGENT" conflicts --config "$T/watch/syncagent.toml" >"$T/conflicts.out" 2>&1
grep -qF f1 "$T/conflicts.out" || fail "conflicts on the watch does not list f1: $(cat "$T/conflicts.out")"
l=$(leaks watch); [ -z "$l" ] || fail "the stopped watch shows the store's marker to the user: $l"

# the FIFOs go: the directories land by themselves
start_device watch
rm "$(data_of watch)/f1" "$(data_of watch)/f2"
wait_until is_dir watch f1
wait_until is_dir watch f2
wait_until on watch eval '[ "$(status_field problems)" = "[]" ]'
wait_converged
for d in phone watch; do
    for f in f1 f2; do is_dir "$d" "$f" || fail "$f is not a directory on $d after the watch's FIFO went"; done
done
for d in phone watch; do
    l=$(leaks "$d"); [ -z "$l" ] || fail "$d shows the store's marker to the user: $l"
    [ -z "$(find "$(data_of "$d")" -name .syncagent-keep)" ] || fail "a .syncagent-keep file is in $d's data directory"
    git --git-dir="$(store_of "$d")" fsck --no-progress >"$T/fsck.out" 2>&1 || fail "git fsck on $d: $(cat "$T/fsck.out")"
done
