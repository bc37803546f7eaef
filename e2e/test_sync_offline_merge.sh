#!/usr/bin/env bash
# Issue 3, story 2: work on both devices while they cannot reach each other (the watch's agent is
# stopped); when it comes back, changes to different paths merge, lines changed in different parts of
# one text file merge (both edits kept, no conflict record, no markers), and both end on the same
# commit, a merge with both sides as parents. Then: stores created independently (each device ran init
# and committed on its own before they ever synced) merge too, with an empty base.
source "$(dirname "$0")/lib.sh"
X="$T/expected"; mkdir -p "$X"   # the bytes each path should hold

# ---- part 1: peers from the start, the watch goes away for a while ------------------------------------
init_pair 50
seq -f 'line %g of the shared notes' 1 10 >"$(data_of phone)/notes.txt"
printf 'shared settings\n' >"$(data_of phone)/settings.txt"
start_device phone
start_device watch
wait_until same_file watch notes.txt "$(data_of phone)/notes.txt"
wait_until same_file watch settings.txt "$(data_of phone)/settings.txt"
wait_converged
stop_device watch

# phone: line 2 of notes, a new file, a deletion; watch (offline): line 9, its own new file, a modification
sed -i 's/^line 2 of .*/line 2 CHANGED ON PHONE/' "$(data_of phone)/notes.txt"
printf 'only on phone\n' >"$X/phone-only"
cp "$X/phone-only" "$(data_of phone)/phone-only.txt"
rm "$(data_of phone)/settings.txt"
on phone wait_until head_lacks settings.txt
on phone wait_until head_has phone-only.txt
on phone assert_head_matches_data
sed -i 's/^line 9 of .*/line 9 CHANGED ON WATCH/' "$(data_of watch)/notes.txt"
mkdir -p "$(data_of watch)/w"
printf 'only on watch\n' >"$X/watch-only"
cp "$X/watch-only" "$(data_of watch)/w/watch-only.txt"
phone_before=$(main_of phone)

start_device watch
seq -f 'line %g of the shared notes' 1 10 | sed -e 's/^line 2 of .*/line 2 CHANGED ON PHONE/' \
    -e 's/^line 9 of .*/line 9 CHANGED ON WATCH/' >"$X/notes.merged"
for d in phone watch; do
    wait_until same_file "$d" notes.txt "$X/notes.merged"
    wait_until same_file "$d" phone-only.txt "$X/phone-only"
    wait_until same_file "$d" w/watch-only.txt "$X/watch-only"
    wait_until absent "$d" settings.txt
done
wait_converged
for d in phone watch; do
    assert_eq "[]" "$(conflicts_json "$d" --all | tr -d ' \n')" "$d's conflict records after merging edits in different parts"
    assert_eq 0 "$(on "$d" status_field conflicts open)" "$d's open conflicts"
    if grep -rl '<<<<<<<\|>>>>>>>' "$(data_of "$d")"; then fail "conflict markers in $d's data directory"; fi
done
# the merged history holds both sides: phone's commit before the watch came back is an ancestor of main
on phone g merge-base --is-ancestor "$phone_before" main || fail "phone's offline work is not in the merged main"
merge=$(on phone g rev-list --merges -n 1 main)
[ -n "$merge" ] || fail "no merge commit on main after offline work on both sides"
assert_eq 2 "$(on phone g rev-list --parents -n 1 "$merge" | wc -w | awk '{print $1 - 1}')" "parents of the merge commit"
stop_device watch
stop_device phone

# ---- part 2: independently created stores ---------------------------------------------------------
init_device tablet 50
start_device tablet
printf 'tablet notes\n' >"$X/tablet"
printf 'laptop notes\n' >"$X/laptop"
printf 'the same on both\n' >"$X/same"
cp "$X/tablet" "$DATA/tablet.txt"
cp "$X/same" "$DATA/same.txt"
wait_until head_has same.txt
stop_device tablet
init_device laptop 50
start_device laptop
mkdir -p "$DATA/docs"
cp "$X/laptop" "$DATA/docs/laptop.txt"
cp "$X/same" "$DATA/same.txt"
wait_until head_has same.txt
stop_device laptop
tablet_first=$(main_of tablet) laptop_first=$(main_of laptop)

# now peer them and start both
switch_to tablet; add_peer laptop "$(store_of laptop)"
switch_to laptop; add_peer tablet "$(store_of tablet)"
start_device tablet
start_device laptop
for d in tablet laptop; do
    wait_until same_file "$d" tablet.txt "$X/tablet"
    wait_until same_file "$d" docs/laptop.txt "$X/laptop"
    wait_until same_file "$d" same.txt "$X/same"
done
wait_converged tablet laptop
for d in tablet laptop; do
    assert_eq "[]" "$(conflicts_json "$d" --all | tr -d ' \n')" "$d's conflict records (same file added identically on both)"
    on "$d" g merge-base --is-ancestor "$tablet_first" main || fail "tablet's first commit is not in $d's main"
    on "$d" g merge-base --is-ancestor "$laptop_first" main || fail "laptop's first commit is not in $d's main"
done
# still syncing afterwards
printf 'after the first merge\n' >"$X/later"
cp "$X/later" "$(data_of laptop)/later.txt"
wait_until same_file tablet later.txt "$X/later"
wait_converged tablet laptop
