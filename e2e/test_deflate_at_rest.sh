#!/usr/bin/env bash
# Documents are committed and sent in stored blocks (deflate is left for later, so they reach the
# other device sooner); once a store is at rest the agent rewrites those packs deflated. Checked on
# both devices of a pair, after a folder of 3,000 documents is moved in: the packs shrink to well under
# the documents' size, a photo among them is still all there, nothing is lost (`git fsck --full`,
# main is the data directory, the two data directories are the same), the log says what was done,
# and a change made afterwards still travels.
source "$(dirname "$0")/lib.sh"
WAIT_TIMEOUT=60
pack_bytes() { find "$(store_of "$1")/objects/pack" -name 'pack-*.pack' -printf '%s\n' | awk '{ n += $1 } END { print n + 0 }'; }

init_pair 20
start_device phone
start_device watch

# Written aside, then moved in with one rename: the folder comes as one batch of 3,000 files (a
# bulk commit, its documents in stored blocks) however slowly a loaded machine writes them.
mkdir -p "$T/aside"
python3 - "$T/aside" <<'PY'
import os, random, sys
root = sys.argv[1]
rng = random.Random(7)
words = [w.strip() for w in "alpha beta gamma delta note list meeting draft budget plan item done todo".split()]
for d in range(30):
    os.makedirs(f"{root}/docs/d{d:02}", exist_ok=True)
    for i in range(100):
        text = " ".join(rng.choice(words) for _ in range(1500)) + "\n"  # about 8 KB, compresses ~4:1
        with open(f"{root}/docs/d{d:02}/n{i:03}.txt", "w") as f:
            f.write(text)
with open(f"{root}/photo.jpg", "wb") as f:
    f.write(rng.randbytes(3_000_000))
PY
mv "$T/aside/docs" "$T/aside/photo.jpg" "$(data_of phone)/"
docs_bytes=$(du -s --block-size=1 --apparent-size "$(data_of phone)/docs" | cut -f1)
on watch wait_until head_has docs/d29/n099.txt
on watch wait_until head_has photo.jpg
wait_converged
log "packs right after the sync: phone $(pack_bytes phone), watch $(pack_bytes watch) bytes (documents $docs_bytes, photo 3000000)"

# At rest: every store's packs shrink below the documents' size plus the photo's.
small_enough() { [ "$(pack_bytes "$1")" -lt $((docs_bytes / 2 + 3000000)) ]; }
wait_until small_enough phone
wait_until small_enough watch
# Each device rewrote a pack to less than half its size (`rewrote N pack(s) ... deflated: A KiB -> B KiB`):
# the documents travelled in stored blocks and were deflated at rest, on the receiving side too.
shrank() { grep -o "at rest, deflated: [0-9]* KiB -> [0-9]* KiB" "${DEVICE_LOG[$1]}" | awk '$4 > 2 * $7 { ok = 1 } END { exit !ok }'; }
for d in phone watch; do
    wait_until shrank "$d"
    assert_ge "$(pack_bytes "$d")" 3000000 "$d's packs still hold the photo"
done
log "packs at rest: phone $(pack_bytes phone), watch $(pack_bytes watch) bytes"

# Nothing lost, and the pair still syncs.
printf 'written after the rest\n' >"$(data_of phone)/after.txt"
on watch wait_until head_has after.txt
wait_converged
for d in phone watch; do
    on "$d" assert_head_matches_data
    git --git-dir="$(store_of "$d")" fsck --full --no-dangling >"$T/fsck.$d" 2>&1 || fail "git fsck on $d: $(cat "$T/fsck.$d")"
    assert_eq 3000 "$(git --git-dir="$(store_of "$d")" ls-tree -r --name-only main docs | wc -l)" "documents in $d's main"
done
diff -r "$(data_of phone)" "$(data_of watch)" >/dev/null || fail "the data directories differ"
log "deflated at rest, nothing lost: ok"
