#!/usr/bin/env bash
# Issue 11, progress of long work: the phone starts on 20,000 files (first scan, start-up commit),
# then the watch receives them all in one merge. While that happens, `status --json` answers at
# once and its `progress` says which task and done/total; the log says it every few seconds.
source "$(dirname "$0")/lib.sh"
N=20000

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
t0=$(date +%s)
start_device phone
on phone wait_until head_has "big/d039/f$((N - 1)).txt"
took=$(( $(date +%s) - t0 ))
seen phone "start-up commit" || fail "status never showed the start-up commit's progress: $(head -5 "$T/progress.phone")"
grep -q '"task": "scan"' "$T/progress.phone" || log "(the first scan was over before status was asked)"
grep -q "start-up commit finished ($N paths) in" "${DEVICE_LOG[phone]}" || fail "the log does not say the start-up commit finished"
# the log says it every 3 s: a start-up longer than that has a progress line
if [ "$took" -ge 5 ]; then
    grep -q "start-up commit: [0-9]* of $N" "${DEVICE_LOG[phone]}" || fail "no progress line in the log after a ${took}s start-up"
fi

poll watch
start_device watch
wait_until same_file watch "big/d039/f$((N - 1)).txt" "$(data_of phone)/big/d039/f$((N - 1)).txt"
wait_converged
grep -q "merge finished ([0-9]* paths) in" "${DEVICE_LOG[watch]}" || fail "the watch's log does not say the large merge finished"
seen watch merge || fail "status never showed the merge's progress on the watch: $(tail -5 "$T/progress.watch" 2>/dev/null)"
assert_eq null "$(on watch status_field progress)" "progress once idle"
log "progress of the start-up commit and of a large merge: ok (start-up ${took}s)"
