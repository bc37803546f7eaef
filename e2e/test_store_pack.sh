#!/usr/bin/env bash
# Issue 11, a store that stays small: every commit leaves loose objects; once idle, the agent moves
# them into packs in slices, while commits go on. Checked: it happens (loose objects fall under the
# threshold, packs appear), nothing is lost (every file written before and during the packing is in
# main on both devices, `git fsck --full` is clean on both stores), an open conflict's versions are
# still readable with `show`, and `status` reports the store's size on disk.
source "$(dirname "$0")/lib.sh"
X="$T/expected"; mkdir -p "$X"
loose_count() { find "$(store_of "$1")/objects" -path '*/objects/[0-9a-f][0-9a-f]/*' -type f | wc -l; }
pack_count() { find "$(store_of "$1")/objects/pack" -name '*.pack' | wc -l; }

init_pair 50
start_device phone
start_device watch

# ---- an open conflict: the watch stopped, both edit the same file --------------------------------
printf 'base\n' >"$(data_of phone)/shared.txt"
wait_until same_file watch shared.txt "$(data_of phone)/shared.txt"
wait_converged
stop_device watch
now=$(date +%s)
printf 'the phone version\n' >"$X/phone"
printf 'the watch version\n' >"$X/watch"
put phone shared.txt $((now - 10)) <"$X/phone"
on phone wait_until head_blob_is shared.txt "$X/phone"
put watch shared.txt $((now - 20)) <"$X/watch"
start_device watch
open_is() { [ "$(on "$1" status_field conflicts open)" = "$2" ]; }
wait_until open_is phone 1
wait_until open_is watch 1
id=$(conflict_field phone shared.txt id)

# ---- many loose objects: 4,500 files in 45 commits (two slices) ---------------------------------------------------
python3 - "$(data_of phone)" <<'PY'
import os, sys, time
root = sys.argv[1]
for d in range(45):
    os.makedirs(f"{root}/bulk/d{d:02}", exist_ok=True)
    for i in range(100):
        with open(f"{root}/bulk/d{d:02}/f{i:03}.txt", "w") as f:
            f.write(f"file {d}/{i}\n" * (1 + i % 7))
    time.sleep(0.06)  # a few commits, not one
PY
on phone wait_until head_has bulk/d44/f099.txt
# The bulk's objects are all in the store, loose or already in a pack: packing runs beside the
# engine, so on a busy machine a slice may start before the last of the bulk is committed.
objects_in() { git --git-dir="$(store_of "$1")" count-objects -v | awk '$1 == "count:" || $1 == "in-pack:" { n += $2 } END { print n }'; }
log "phone: $(loose_count phone) loose objects, $(pack_count phone) packs, $(objects_in phone) objects in all"
assert_ge "$(objects_in phone)" 4500 "objects in the phone's store after the bulk"

# ---- commits go on while the agent packs --------------------------------------------------------
on phone wait_until grep -q "packed [0-9]* loose objects" "${DEVICE_LOG[phone]}"
mkdir -p "$(data_of phone)/during"
for i in $(seq 1 60); do
    printf 'written while packing %s\n' "$i" >"$(data_of phone)/during/f$i.txt"
    sleep 0.03
done
on phone wait_until head_has during/f60.txt
loose_below() { [ "$(loose_count "$1")" -lt "$2" ]; }
wait_until loose_below phone 256
wait_until loose_below watch 256
wait_converged
log "phone: $(loose_count phone) loose objects, $(pack_count phone) packs after packing"
assert_ge "$(pack_count phone)" 1 "packs on the phone"

# ---- nothing lost -------------------------------------------------------------------------------------
for d in phone watch; do
    on "$d" assert_head_matches_data
    git --git-dir="$(store_of "$d")" fsck --full --no-dangling >"$T/fsck.$d" 2>&1 || fail "git fsck on $d: $(cat "$T/fsck.$d")"
    assert_eq 4500 "$(git --git-dir="$(store_of "$d")" ls-tree -r --name-only main bulk | wc -l)" "bulk files in $d's main"
    assert_eq 60 "$(git --git-dir="$(store_of "$d")" ls-tree -r --name-only main during | wc -l)" "files written while packing in $d's main"
    "$SYNCAGENT" show "$id" --config "$T/$d/syncagent.toml" --version phone | cmp -s - "$X/phone" || fail "show --version phone on $d"
    "$SYNCAGENT" show "$id" --config "$T/$d/syncagent.toml" --version watch | cmp -s - "$X/watch" || fail "show --version watch on $d"
done
cmp -s "$(data_of phone)/bulk/d42/f006.txt" <(python3 -c 'print("file 42/6\n" * 7, end="")') || fail "bulk/d42/f006.txt changed"
assert_eq 1 "$(on watch status_field conflicts open)" "open conflicts after packing"

# ---- status: the store's size on disk ----------------------------------------------------------------
bytes=$(on phone status_field storeBytes)
du_bytes=$(du -s --block-size=1 "$(store_of phone)" | cut -f1)
assert_ge "$bytes" 100000 "storeBytes"
assert_le "$bytes" "$du_bytes" "storeBytes against du"
assert_ge "$bytes" $((du_bytes * 8 / 10)) "storeBytes against du"
stop_device phone
assert_ge "$(on phone status_field storeBytes)" 100000 "storeBytes with the agent stopped"
log "store packed while committing: ok (storeBytes $bytes, du $du_bytes)"
