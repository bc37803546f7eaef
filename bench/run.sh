#!/usr/bin/env bash
# `make bench`: the syncagent benchmark against git add -A && git commit. See bench/bench.py.
# Needs SYNCAGENT (the Makefile exports the release binary's absolute path), python3 and git.
#
# The workloads run on a file system of their own: a fresh journaled ext4 image, loop-mounted
# (as root; BENCH_FS=tmp keeps $TMPDIR). Why: the root file system of the machines this runs on
# is ext4 without a journal, where creating a file scans the inodes deleted in the last minutes
# (ext4's recently_deleted check, done only without a journal). After the bench's own clean-ups,
# 10,000 new 4 KB files took 1.3-7 s there against 0.26 s on a fresh ext4, and which tool paid
# it depended on the order of the runs, not on the tool. A user's disk has a journal.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
: "${SYNCAGENT:?set SYNCAGENT to the syncagent binary (make bench does)}"
command -v python3 >/dev/null || { echo "bench: python3 is required" >&2; exit 2; }
command -v git >/dev/null || { echo "bench: git is required" >&2; exit 2; }

if [ "${BENCH_FS:-ext4}" = ext4 ] && [ "$(id -u)" = 0 ] && command -v mkfs.ext4 >/dev/null; then
    image="$(mktemp /var/tmp/syncagent-bench.XXXXXX.img)"
    mnt="$(mktemp -d /tmp/syncagent-bench-fs.XXXXXX)"
    cleanup() { umount "$mnt" 2>/dev/null || true; rmdir "$mnt" 2>/dev/null || true; rm -f "$image"; }
    trap cleanup EXIT
    # 24 GiB sparse: the 100k-file rows and every store fit; blocks are allocated only as written.
    truncate -s 24G "$image"
    if mkfs.ext4 -q -F "$image" && mount -o loop "$image" "$mnt"; then
        echo "bench: workloads on a fresh ext4 (journaled) at $mnt (loop image $image); BENCH_FS=tmp to use \$TMPDIR"
        export TMPDIR="$mnt"
    else
        echo "bench: could not make a file system of its own for the workloads; running in ${TMPDIR:-/tmp} (figures for file creation may be skewed, see bench/run.sh)" >&2
    fi
    python3 "$here/bench.py" "$@"
    exit $?
fi
echo "bench: workloads in ${TMPDIR:-/tmp} (BENCH_FS=${BENCH_FS:-ext4}; a fresh ext4 image needs root and mkfs.ext4)"
exec python3 "$here/bench.py" "$@"
