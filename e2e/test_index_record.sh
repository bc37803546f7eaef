#!/usr/bin/env bash
# Issue 19, the agent's record of what it knows (the store's index: path -> stat data -> blob),
# kept in memory by a running agent and saved when idle:
#   1. an index file left behind `main` (the agent died after commits, before saving it) is put
#      back at `main` at the next start: no commit is made twice, `git status` is clean, and an edit
#      after that commits as usual;
#   2. kill -9 in the middle of a big batch (its blobs go straight into packs): every file is in
#      HEAD with its bytes and `git fsck --strict` is clean after the restart;
#   3. edits made while the agent is stopped that keep the size and the mtime (`touch -r`), or move
#      the mtime backwards (a clock set back), are committed at the next start.
source "$(dirname "$0")/lib.sh"

init_agent phone 50
for i in $(seq 1 400); do mkdir -p "$DATA/d$((i % 20))"; echo "file $i" >"$DATA/d$((i % 20))/f$i.txt"; done
run_agent
wait_until head_matches_data
wait_until pending_is 0

# ---- 1. an index file behind main --------------------------------------------------------------
stop_agent                            # saves the index
cp "$STORE/index" "$T/index.before"
run_agent
echo "edited once" >"$DATA/d1/f1.txt"
echo "brand new" >"$DATA/new.txt"
rm "$DATA/d2/f2.txt"
wait_until head_matches_data
stop_agent
head_before=$(head_oid)
commits_before=$(commit_count)
cp "$T/index.before" "$STORE/index"   # as if the agent had died before saving the index
# `status` of the stopped agent sees through it too: nothing is waiting to be committed
assert_eq 0 "$(status_field pending)" "pending while stopped, with an index file behind main"
run_agent
wait_until grep -q "index was behind main" "$LOG"
grep -q "index was behind main (the agent stopped before saving it): 3 entries" "$LOG" \
    || fail "the start did not put exactly the 3 entries the saved index missed back at main: $(grep 'index was behind' "$LOG")"
wait_until pending_is 0
assert_eq "$head_before" "$(head_oid)" "main after a start on a stale index (nothing to commit twice)"
assert_eq "$commits_before" "$(commit_count)" "commits after a start on a stale index"
# plain git sees the data directory clean against the store once the agent saved its index
git_status_clean() { [ -z "$(git --git-dir="$STORE" --work-tree="$DATA" status --porcelain --untracked-files=no)" ]; }
wait_until git_status_clean
echo "edited twice" >"$DATA/d1/f1.txt"
wait_until head_matches_data
assert_ne "$head_before" "$(head_oid)" "main after an edit"
log "an index file behind main: put back, nothing committed twice, edits go on: ok"

# ---- 2. kill -9 in the middle of a big batch ---------------------------------------------------
head_moved_from() { [ "$(head_oid)" != "$1" ]; }
before=$(head_oid)
python3 - "$DATA" <<'EOF'
import os, sys
root = sys.argv[1]
for i in range(3000):
    d = os.path.join(root, "bulk", f"b{i % 30}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"x{i}.bin"), "wb") as f:
        f.write(os.urandom(512 + i % 1000))
EOF
wait_until head_moved_from "$before"   # the first part of the batch is in
kill9_agent
run_agent
wait_until head_matches_data
wait_until pending_is 0
assert_head_matches_data
g fsck --strict --no-progress >"$T/fsck.out" 2>&1 || fail "git fsck after kill -9 mid-batch: $(cat "$T/fsck.out")"
loose=$(find "$STORE/objects" -path '*/pack' -prune -o -type f -print | wc -l)
log "kill -9 in a 3,000-file batch: every file in HEAD, fsck clean ($loose loose objects left)"

# ---- 3. edits the stat data hide ---------------------------------------------------------------
stop_agent
head_before=$(head_oid)
f="$DATA/d3/f3.txt"
cp -p "$f" "$T/ref"                   # its mtime, to put back
printf 'FILE 3\n' >"$f"               # same size as "file 3\n"
touch -r "$T/ref" "$f"                # same size, same mtime: only ctime tells
g="$DATA/d4/f4.txt"
printf 'FILE 4\n' >"$g"
touch -d '2001-01-01 00:00:00' "$g"   # the clock went backwards
run_agent
wait_until pending_is 0
wait_until head_matches_data
assert_ne "$head_before" "$(head_oid)" "main after edits made while stopped"
head_blob_is d3/f3.txt "$f" || fail "an edit with the same size and mtime was not committed"
head_blob_is d4/f4.txt "$g" || fail "an edit whose mtime went backwards was not committed"
log "same size + same mtime, and mtime set back: both committed at the next start: ok"
stop_agent
