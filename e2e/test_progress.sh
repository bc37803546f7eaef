#!/usr/bin/env bash
# Issue 11, progress of long work: the phone starts on 12,000 files (first scan, start-up commit),
# then the watch receives them all in one merge. While that happens, `status --json` answers at
# once and its `progress` says which task and done/total; the log says it every few seconds and
# when the task finished. A task that took 2 s or more (by the log) must have been seen by a status
# poll every 50 ms; a shorter one may slip between polls and is only reported.
source "$(dirname "$0")/lib.sh"
N=12000
last="big/d$(printf %03d $(((N - 1) / 500)))/f$((N - 1)).txt"

init_pair 50
python3 - "$(data_of phone)" "$N" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    d = f"{root}/big/d{i // 500:03}"
    if i % 500 == 0: os.makedirs(d, exist_ok=True)
    with open(f"{d}/f{i}.txt", "w") as f: f.write(f"{i}\n")
PY

# poll DEVICE: print every non-null `progress` of DEVICE's status into $T/progress.DEVICE, until killed
poll() {
    python3 - "$SYNCAGENT" "$T/$1/syncagent.toml" "$T/progress.$1" <<'PY' &
import json, subprocess, sys, time
binary, config, out = sys.argv[1:]
with open(out, "a", buffering=1) as f:
    while True:
        r = subprocess.run([binary, "status", "--config", config, "--json"], capture_output=True, timeout=60)
        if r.returncode == 0:
            p = json.loads(r.stdout).get("progress")
            if p: f.write(json.dumps(p) + "\n")
        time.sleep(0.05)
PY
    track_pid $!
}
# seen DEVICE TASK: the poller saw TASK with a total of at least $N and done < total
seen() {
    python3 - "$T/progress.$1" "$2" "$N" <<'PY'
import json, sys
path, task, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
rows = [json.loads(l) for l in open(path)] if __import__("os").path.exists(path) else []
sys.exit(0 if any(r["task"] == task and (r["total"] or 0) >= n and r["done"] < r["total"] and r["since"] for r in rows) else 1)
PY
}

poll phone
start_device phone
on phone wait_until head_has "$last"
on phone wait_until pending_is 0
# took DEVICE TASK: the seconds the log says TASK took on DEVICE (the "finished" line must be there)
took() {
    local line
    line=$(grep -o "$2 finished ([0-9]* paths) in [0-9.]* s" "${DEVICE_LOG[$1]}" | tail -1)
    [ -n "$line" ] || fail "$1's log does not say $2 finished"
    printf '%s\n' "$line" | awk '{print $(NF - 1)}'
}
# must_have_seen DEVICE TASK
must_have_seen() {
    local secs; secs=$(took "$1" "$2")
    if awk -v s="$secs" 'BEGIN { exit !(s >= 2) }'; then
        seen "$1" "$2" || fail "$2 took ${secs}s on $1, but status never showed its progress: $(tail -3 "$T/progress.$1" 2>/dev/null)"
    else
        seen "$1" "$2" || log "($2 took only ${secs}s on $1: no status poll fell inside it)"
    fi
}
must_have_seen phone "start-up commit"
# the log says it every 3 s: a start-up longer than that has a progress line
if awk -v s="$(took phone "start-up commit")" 'BEGIN { exit !(s >= 4) }'; then
    grep -q "start-up commit: [0-9]* of $N" "${DEVICE_LOG[phone]}" || fail "no progress line in the log during a long start-up"
fi

poll watch
start_device watch
wait_until same_file watch "$last" "$(data_of phone)/$last"
wait_converged
must_have_seen watch merge
assert_eq null "$(on watch status_field progress)" "progress once idle"
log "progress of the start-up commit and of a large merge: ok (start-up $(took phone "start-up commit") s, merge $(took watch merge) s)"
