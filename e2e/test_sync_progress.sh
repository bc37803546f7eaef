#!/usr/bin/env bash
# Issue 46, item 1: progress a person sees. A one-shot `syncagent sync` shows long work on stderr:
# plain lines when piped, whose counts grow to the total, for 300 photos of 2 MB (the transfer and
# the merge) and for 20,000 files; on a terminal (tmux) a live bar that moves and ends at 100 %;
# with a running agent, `status --json` lists the work in `tasks`, `status --watch` piped prints
# its lines and `events --follow` carries `progress` events. `--json` piped keeps stderr free of progress.
source "$(dirname "$0")/lib.sh"
command -v tmux >/dev/null || fail "tmux is needed (make deps installs it)"

init_device phone default "watch=$(store_of watch)"
init_device watch default "phone=$(store_of phone)"
python3 - "$(data_of phone)/photos" <<'PY'
import os, sys
os.makedirs(sys.argv[1])
for i in range(300):
    with open(f"{sys.argv[1]}/IMG_{i:04}.jpg", "wb") as f: f.write(os.urandom(2_000_000))
PY
# grows FILE TASK TOTAL: FILE's plain lines for TASK count up (never down) and end at TOTAL (100 %)
grows() {
    python3 - "$@" <<'PY'
import re, sys
path, task, total = sys.argv[1], sys.argv[2], int(sys.argv[3])
counts = [int(m.group(1)) for m in (re.match(re.escape(task) + r": (\d+)", l) for l in open(path)) if m]
if not counts: sys.exit(f"no '{task}:' line in {path}")
if counts != sorted(counts): sys.exit(f"{task}: counts go down: {counts}")
if counts[-1] != total: sys.exit(f"{task}: the last count is {counts[-1]}, not {total}: {counts}")
last = [l for l in open(path) if l.startswith(task + ":")][-1]
if f"of {total} " not in last or "(100%)" not in last: sys.exit(f"{task}: the last line is not the whole: {last}")
print(len(counts))
PY
}

# the phone commits the photos under the lock: its commit shows progress too
on phone "$SYNCAGENT" sync --config "$T/phone/syncagent.toml" >"$T/phone.sync.out" 2>"$T/phone.sync.err" \
    || fail "phone's sync failed: $(cat "$T/phone.sync.err")"
grows "$T/phone.sync.err" commit 300 >/dev/null || fail "phone's commit of 300 photos: $(grows "$T/phone.sync.err" commit 300 2>&1)"

# the watch receives them: objects (300 blobs, 2 trees, a commit) with their bytes, then the merge
on watch "$SYNCAGENT" sync --config "$T/watch/syncagent.toml" >"$T/watch.sync.out" 2>"$T/watch.sync.err" \
    || fail "watch's sync failed: $(cat "$T/watch.sync.err")"
assert_eq "phone: ok" "$(cat "$T/watch.sync.out")" "watch's sync result on stdout (progress goes to stderr)"
grows "$T/watch.sync.err" "receive from phone" 303 >/dev/null \
    || fail "receive of 300 photos: $(grows "$T/watch.sync.err" "receive from phone" 303 2>&1)"
grep -q "receive from phone: 303 of 303 objects (100%), 600.[0-9] MB" "$T/watch.sync.err" \
    || fail "the receive's last line does not say its bytes: $(cat "$T/watch.sync.err")"
steps=$(grows "$T/watch.sync.err" merge 300) || fail "merge of 300 photos: $(grows "$T/watch.sync.err" merge 300 2>&1)"
assert_ge "$steps" 2 "merge lines for 300 photos (one at the end only is no progress)"
assert_eq 300 "$(find "$(data_of watch)/photos" -type f | wc -l)" "photos on the watch"

# 20,000 files
python3 - "$(data_of phone)/notes" <<'PY'
import os, sys
for i in range(20000):
    d = f"{sys.argv[1]}/d{i // 1000:02}"
    if i % 1000 == 0: os.makedirs(d)
    with open(f"{d}/n{i}.txt", "w") as f: f.write(f"note {i}\n" * 40)
PY
on phone "$SYNCAGENT" sync --config "$T/phone/syncagent.toml" >/dev/null 2>"$T/phone.sync2.err" || fail "phone's second sync failed"
on watch "$SYNCAGENT" sync --config "$T/watch/syncagent.toml" --json >"$T/watch.sync2.json" 2>"$T/watch.sync2.err" \
    || fail "watch's second sync failed: $(cat "$T/watch.sync2.err")"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r[0]["peer"]=="phone" and r[0].get("error") is None, r' "$T/watch.sync2.json" \
    || fail "sync --json: $(cat "$T/watch.sync2.json")"
assert_not_contains "$(cat "$T/watch.sync2.err")" "merge:" "stderr of a piped sync --json"
# the same again, as text: a third device takes all 20,300 files
init_device pad default "phone=$(store_of phone)"
on pad "$SYNCAGENT" sync --config "$T/pad/syncagent.toml" >/dev/null 2>"$T/pad.sync.err" || fail "pad's sync failed: $(cat "$T/pad.sync.err")"
steps=$(grows "$T/pad.sync.err" merge 20300) || fail "merge of 20,300 files: $(grows "$T/pad.sync.err" merge 20300 2>&1)"
# (a line before the end and the last one: lines come at most once a second, and a fast disk
# writes the 20,300 files in about one)
assert_ge "$steps" 2 "merge lines for 20,300 files (one at the end only is no progress)"
log "piped: commit, receive and merge lines grow to their totals (300 photos; 20,300 files in $steps lines)"

# On a terminal: a live bar that moves and ends at 100 %.
init_device tab default "phone=$(store_of phone)"
TMUX_SOCKET="$T/tmux.sock"
at_exit tmux -S "$TMUX_SOCKET" kill-server
tmux -S "$TMUX_SOCKET" new-session -d -x 110 -y 12 -s bar
tmux -S "$TMUX_SOCKET" send-keys -t bar "'$SYNCAGENT' sync --config '$T/tab/syncagent.toml'; echo SYNC\"\"-EXIT-\$?" Enter  # typed apart: the echo of the line is no match
: >"$T/panes"
deadline=$((SECONDS + 300))
while [ $SECONDS -lt $deadline ]; do
    tmux -S "$TMUX_SOCKET" capture-pane -p -t bar >"$T/pane"
    grep "merge:" "$T/pane" >>"$T/panes" || true
    grep -q "SYNC-EXIT-" "$T/pane" && break
    sleep 0.05
done
grep -q "SYNC-EXIT-0" "$T/pane" || fail "sync in tmux did not end well: $(cat "$T/pane")"
grep -q '\[####################\] merge: 20300 of 20300 paths (100%)' "$T/pane" \
    || fail "the bar did not end at 100 %: $(cat "$T/pane")"
moving=$(grep -o 'merge: [0-9]* of 20300 paths ([0-9]*%)' "$T/panes" | sort -u | grep -vc '(100%)' || true)
assert_ge "$moving" 2 "distinct bars short of 100 % seen in the pane (the bar moves in place)"
assert_eq 1 "$(grep -c 'merge:' "$T/pane")" "merge lines on the screen at the end (redrawn in place, not one per step)"
cp "$T/pane" "$T/pane.final"
log "terminal: the bar moved through $moving steps and ended at 100 %"

# A running agent: `status --json` lists the work in `tasks`, `events --follow` carries progress.
init_device desk default "phone=$(store_of phone)"
# Started directly, not through `on` (a subshell): the pid tracked is the follower's own, stopped
# at the end (the subshell's was, and the follower outlived every run of this test).
"$SYNCAGENT" events --config "$T/desk/syncagent.toml" --follow >"$T/desk.events" 2>/dev/null &
track_pid $!
python3 - "$SYNCAGENT" "$T/desk/syncagent.toml" "$T/desk.tasks" <<'PY' &
import json, subprocess, sys, time
binary, config, out = sys.argv[1:]
with open(out, "a", buffering=1) as f:
    while True:
        r = subprocess.run([binary, "status", "--config", config, "--json"], capture_output=True, timeout=60)
        if r.returncode == 0:
            for t in json.loads(r.stdout).get("tasks", []): f.write(json.dumps(t) + "\n")
        time.sleep(0.1)
PY
track_pid $!
"$SYNCAGENT" status --config "$T/desk/syncagent.toml" --watch >"$T/desk.watch" 2>&1 &
track_pid $!
start_device desk
wait_until test -f "$(data_of desk)/notes/d19/n19999.txt"
wait_until grep -q '"type":"progress".*"task":"merge","done":20300,"total":20300' "$T/desk.events"
wait_until grep -q '"task": "merge".*"total": 20300' "$T/desk.tasks"
python3 - "$T/desk.events" <<'PY' || fail "progress events: $(grep progress "$T/desk.events" | tail -3)"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1]) if '"progress"' in l]
merge = [e for e in ev if e["task"] == "merge"]
assert all("seq" not in e for e in ev), "progress events are live only: no sequence number"
assert merge[-1]["done"] == merge[-1]["total"] == 20300, merge[-1]
assert [e["done"] for e in merge] == sorted(e["done"] for e in merge), [e["done"] for e in merge]
PY
assert_not_contains "$(cat "$T/desk/state/events.jsonl")" '"progress"' "the event log (progress is never kept)"
wait_until grep -q "merge: 20300 of 20300 paths (100%)" "$T/desk.watch"
grows "$T/desk.watch" merge 20300 >/dev/null || fail "status --watch, piped: $(grows "$T/desk.watch" merge 20300 2>&1)"
log "agent: status tasks and live progress events for a 20,300-file merge"
log ok
