#!/usr/bin/env bash
# An agent keeps at most two malloc arenas (the main one and one more), however many threads it
# runs: glibc's default is eight per core, each thread keeps the arena it first allocated in, and
# memory freed in one is not reused by the others. Counted from /proc/PID/maps after a sync that
# runs every kind of thread (executors, engine, fetch, hashing workers, the apply's writers): a
# non-main arena is a 64 MiB-aligned heap of 64 MiB (its used part and the reserved rest). With no
# limit the phone had 10. (The limit is set on `syncagent`'s first line, before any thread; set
# from the agent's start-up as before, this count is the same, but a 100k-file first sync peaked
# over 60 MB in 4 runs of 9 against 0 of 8: see MallocArenas.)
source "$(dirname "$0")/lib.sh"

arenas() { # PID: the number of non-main malloc arenas
    python3 - "$1" <<'PY'
import sys
H = 64 << 20
maps = []
for line in open(f"/proc/{sys.argv[1]}/maps"):
    parts = line.split()
    lo, hi = (int(x, 16) for x in parts[0].split("-"))
    maps.append((lo, hi, parts[1], parts[5] if len(parts) > 5 else ""))
reserved = {lo: hi for lo, hi, perm, name in maps if perm.startswith("---") and name == ""}
print(sum(1 for lo, hi, perm, name in maps
          if name == "" and perm.startswith("rw") and lo % H == 0 and reserved.get(hi, hi) - lo == H))
PY
}

init_pair
start_device phone
start_device watch
python3 - "$(data_of phone)" <<'PY'
import os, sys
for i in range(3000):
    d = os.path.join(sys.argv[1], f"d{i // 100:02d}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"f{i:04d}.txt"), "wb") as f:
        f.write(f"file {i}\n".encode() * 40)
PY
WAIT_TIMEOUT=120 wait_converged
for d in phone watch; do
    pid=${DEVICE_PID[$d]}
    n=$(arenas "$pid")
    threads=$(ls "/proc/$pid/task" | wc -l)
    log "$d: $n non-main malloc arena(s), $threads threads"
    assert_le "$n" 1 "$d's non-main malloc arenas (threads: $threads)"
done
