#!/usr/bin/env bash
# Power cuts under a running agent (issue 43), short form: cutfs's own checks (POSIX behaviour, the
# durability model, git, mmap and inotify on the FUSE mount), then e2e/powercut.py for 12 cuts in
# all -- 6 in the strict model with a careless user program (never fsyncs), 6 in ext4's journal with
# zero-filled sizes and a careful user program (what a cut damages is then the agent's own doing)
# -- then every line of powercut-seeds.txt: the seeds that once failed, and short coverage lines
# for a hub (--hub, --hub-only) and SyncAgentKit `set`s (--set: the sample client watch-app, which
# `make build` builds beside $SYNCAGENT). `make soak-powercut` is the long run (CUTS, default
# 1000; `powercut.py --mix` spreads them over the plain, hub, set and journal runs). The harness
# states the invariants; a failure prints `FAILED seed=S cut=N: what` and keeps its temp dir (the
# phone's disk copied beside it). Every seed runs every time.
# Needs root, /dev/fuse, fuse3 and python3-pyfuse3 (`make deps` installs them) and a C compiler.
# POWERCUT_PART: `a` (this file's default: cutfs's checks and every other run from the first) or `b`
# (test_powercut_b.sh: the runs between), so `make e2e` runs the two halves side by side (the whole
# took 440-480 s under load, its limit 480); `all` runs every one (make soak-powercut).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)

: "${SYNCAGENT:?set SYNCAGENT to the syncagent binary (make e2e does)}"
case "$SYNCAGENT" in /*) ;; *) SYNCAGENT="$PWD/$SYNCAGENT" ;; esac
[ -x "$SYNCAGENT" ] || { echo "SYNCAGENT=$SYNCAGENT is not an executable file" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "test_powercut mounts a FUSE file system: run it as root" >&2; exit 1; }
[ -e /dev/fuse ] || { echo "test_powercut needs /dev/fuse" >&2; exit 1; }
command -v fusermount3 >/dev/null || { echo "fusermount3 is missing: apt-get install fuse3 python3-pyfuse3 (make deps)" >&2; exit 1; }
[ -x "$(dirname "$SYNCAGENT")/watch-app" ] || { echo "the --set seeds need watch-app beside $SYNCAGENT (make build builds it)" >&2; exit 1; }
/usr/bin/python3 -c 'import pyfuse3' 2>/dev/null || { echo "pyfuse3 is missing for /usr/bin/python3: apt-get install python3-pyfuse3 (make deps)" >&2; exit 1; }

part=${POWERCUT_PART:-a}
case "$part" in a|b|all) ;; *) echo "POWERCUT_PART=$part: give a, b or all" >&2; exit 2 ;; esac
start=$SECONDS
failed=()
[ "$part" = b ] || python3 "$here/powercut.py" --check-fs || failed+=("check-fs")

# SEED CUTS [powercut.py options]: the fixed runs, then the regression seeds.
runs=(
    "20261201 6"
    "20261203 6 --user-fsync --model journal --zero-fill"
)
# Lines marked `soak` fail only deep into a long run (minutes each): `make soak-powercut` replays
# them (POWERCUT_SOAK=1); a unit test reproduces each of their faults in `make test`.
while IFS= read -r line; do
    case "$line" in
        soak\ *) [ "${POWERCUT_SOAK:-0}" = 1 ] && runs+=("${line#soak }") ;;
        *) runs+=("$line") ;;
    esac
done < <(sed 's/#.*//' "$here/powercut-seeds.txt" | awk 'NF')

mine=()
for i in "${!runs[@]}"; do
    case "$part" in
        a) [ $((i % 2)) = 0 ] && mine+=("${runs[$i]}") ;;
        b) [ $((i % 2)) = 1 ] && mine+=("${runs[$i]}") ;;
        all) mine+=("${runs[$i]}") ;;
    esac
done
runs=("${mine[@]}")
for line in "${runs[@]}"; do
    read -r seed cuts opts <<<"$line"
    # shellcheck disable=SC2086
    python3 "$here/powercut.py" --binary "$SYNCAGENT" --seed "$seed" --cuts "$cuts" --timeout 30 $opts \
        || failed+=("$seed($cuts cuts${opts:+ $opts})")
done

echo "powercut (part $part): ${#runs[@]} runs, $((SECONDS - start))s"
if [ "${#failed[@]}" -gt 0 ]; then
    echo "powercut: FAILED: ${failed[*]}"
    exit 1
fi
