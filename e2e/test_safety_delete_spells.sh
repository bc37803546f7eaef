#!/usr/bin/env bash
# The deletion guard judges deletion spells as people make them, not the batches the debouncer cuts
# (issue 43). Default settings (debounce 200 ms, max delay 2 s, [safety] 50 % and 20 files); phone and
# watch in sync on 20,004 files (20,000 under bulk/, 4 elsewhere).
#  1. A script deletes 16,000 of them one by one over several seconds (many batches, each under the
#     line): the whole spell is held, the watch keeps every file, the phone's main deletes nothing.
#     The advice `status` gives (`syncagent restore --deletes`) brings every file back on the phone's
#     disk and the hold ends by itself; a later change still syncs.
#  2. A slow `rm -rf bulk` (each unlink delayed by strace, like a slow disk): held whole, the watch keeps
#     all 20,000; `syncagent send --deletes` then sends the spell as one commit and the watch loses them.
source "$(dirname "$0")/lib.sh"
X="$T/expected"; mkdir -p "$X"

init_pair default
python3 - "$(data_of phone)" <<'EOF'
import os, sys
root = sys.argv[1]
for d in range(200):
    os.makedirs(f"{root}/bulk/d{d:03}", exist_ok=True)
    for f in range(100):
        with open(f"{root}/bulk/d{d:03}/f{f:03}.txt", "w") as out:
            out.write(f"file {d}/{f}\n")
for name in ("a", "b", "c", "d"):
    with open(f"{root}/{name}.txt", "w") as out:
        out.write(f"{name}\n")
EOF
start_device phone
start_device watch
WAIT_TIMEOUT=120
wait_until same_file watch bulk/d199/f099.txt "$(data_of phone)/bulk/d199/f099.txt"
wait_converged

problems() { on phone status_field problems; }
held_reported() { local p; p=$(problems) && [[ "$p" == *"syncagent send --deletes"* ]] && [[ "$p" == *"syncagent restore --deletes"* ]]; }
no_problem() { [ "$(problems)" = "[]" ]; }
files_on() { on "$1" data_list | wc -l; }
tracked() { on phone head_list | wc -l; }
all_on() { [ "$(files_on "$1")" = "$2" ]; }

# ---- 1. one by one, 16,000 of 20,004, over several seconds ----------------------------------------------
before=$(on phone head_oid)
python3 - "$(data_of phone)" <<'EOF'
import os, sys, time
root = sys.argv[1]
n = 0
for d in range(160):
    for f in range(100):
        os.unlink(f"{root}/bulk/d{d:03}/f{f:03}.txt")
        n += 1
    time.sleep(0.05)   # 160 pauses: the deletions take well over the 2 s max delay
EOF
assert_eq 4004 "$(files_on phone)" "files left on the phone after the script"
wait_until held_reported
# the hold's count follows the spell as the watcher's batches arrive
held_count() { [[ "$(problems)" == *"$1 of $2 tracked files"* ]]; }
wait_until held_count 16000 20004
no_deletions_since phone "$before" "while the spell is held"
assert_eq 20004 "$(tracked)" "files in the phone's main while the spell is held"
assert_eq 20004 "$(files_on watch)" "files on the watch while the phone's spell is held"
# the advice, as status gives it, brings every file back and ends the hold
"$SYNCAGENT" restore --deletes --config "$T/phone/syncagent.toml" >"$T/restore.out" 2>&1 \
    || fail "syncagent restore --deletes failed: $(cat "$T/restore.out")"
assert_contains "$(cat "$T/restore.out")" "restored 16000 files" "what restore --deletes says"
assert_eq 20004 "$(files_on phone)" "files on the phone after restore --deletes"
wait_until no_problem
diff -r "$(data_of phone)" "$(data_of watch)" >"$T/diff.out" || fail "the phone's files differ from the watch's after restore --deletes: $(head -n 5 "$T/diff.out")"
no_deletions_since phone "$before" "after restore --deletes"
printf 'after the hold\n' >"$X/after"
cp "$X/after" "$(data_of phone)/after.txt"
wait_until same_file watch after.txt "$X/after"
wait_converged

# ---- 2. a slow rm -rf of the folder of 20,000 -------------------------------------------------------------
before=$(on phone head_oid)
strace -f -qq -o /dev/null -e trace=unlinkat,rmdir -e inject=unlinkat:delay_enter=200 rm -rf "$(data_of phone)/bulk"
assert_eq 5 "$(files_on phone)" "files left on the phone after rm -rf bulk"
wait_until held_reported
wait_until held_count 20000 20005
no_deletions_since phone "$before" "while rm -rf is held"
assert_eq 20005 "$(files_on watch)" "files on the watch while the phone's rm -rf is held"
"$SYNCAGENT" send --deletes --config "$T/phone/syncagent.toml" >"$T/send.out" 2>&1 \
    || fail "syncagent send --deletes failed: $(cat "$T/send.out")"
wait_until all_on watch 5
wait_converged
assert_eq 1 "$(on phone g rev-list --count "$before"..main)" "commits on the phone for the confirmed spell"
assert_eq 20000 "$(on phone g log --diff-filter=D --name-only --format= "$before"..main | grep -c .)" "deletions in that commit"
wait_until no_problem
stop_device watch
stop_device phone
