#!/usr/bin/env bash
# A full disk on the receiving side: the watch's data directory is a 4 MB tmpfs; the phone writes three
# 1.5 MB files and five small ones in one go (more than fits). The watch's agent keeps running, writes
# what fits (the small files arrive: a path it cannot write does not stop the rest of the merge),
# reports the full disk in `status --json` problems (no space / disk full, naming a path it could not
# write) and leaves no temporary files in its data directory; it commits no deletion or truncated
# file (the phone keeps every file and byte). Once the tmpfs is made larger, the watch retries and
# converges with the phone, and the problem goes away.
# Needs root (mount); skipped otherwise.
source "$(dirname "$0")/lib.sh"
X="$T/expected"; mkdir -p "$X"

if [ "$(id -u)" != 0 ]; then
    log "SKIP: needs root to mount a small tmpfs for the watch's data directory (running as uid $(id -u))"
    exit 0
fi

init_pair 50
WATCH_MNT=$(data_of watch)
mkdir -p "$WATCH_MNT"
mount -t tmpfs -o size=4m tmpfs "$WATCH_MNT" || fail "mount -t tmpfs on $WATCH_MNT failed (as root)"
# unmount on exit: stop the agents first (lib's _on_exit would stop them after us, too late: a
# running agent keeps the mount busy), then hand over to lib's _on_exit with the test's exit status
_enospc_exit() {
    local rc=$? pid
    set +e
    for pid in "${STARTED_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
    for pid in "${STARTED_PIDS[@]}"; do
        for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null
    done
    if mountpoint -q "$WATCH_MNT"; then
        [ "$rc" = 0 ] || { log "the watch's data directory when the test failed:"; ls -la "$WATCH_MNT" >&2; df -h "$WATCH_MNT" >&2; }
        umount "$WATCH_MNT" 2>/dev/null || umount -l "$WATCH_MNT"
    fi
    (exit "$rc")
    _on_exit
}
trap _enospc_exit EXIT

printf 'seed\n' >"$(data_of phone)/seed.txt"
start_device phone
start_device watch
wait_until same_file watch seed.txt "$(data_of phone)/seed.txt"
wait_converged

# ---- more than fits ------------------------------------------------------------------------------------
for i in 1 2 3; do head -c 1572864 /dev/urandom >"$X/big$i.bin"; done
for i in 1 2 3 4 5; do printf 'small file %s\n' "$i" >"$X/small$i.txt"; done
cp "$X"/* "$(data_of phone)/"
on phone wait_until head_has big3.bin
on phone wait_until head_has small5.txt
on phone assert_head_matches_data

problems() { on watch status_field problems; }
# disk_full_reported: the watch's problems say the disk is full and name a big file it could not write
disk_full_reported() {
    local p; p=$(problems) || return 1
    grep -Eiq 'no space|disk full|full' <<<"$p" && grep -Eq 'big[123]\.bin' <<<"$p"
}
wait_until disk_full_reported
for i in 1 2 3 4 5; do wait_until same_file watch "small$i.txt" "$X/small$i.txt"; done
switch_to watch; agent_alive || fail "the watch's agent died on a full disk"
litter() { find "$(data_of watch)" \( -name '*syncagent*' -o -name '*.tmp*' \) -printf '%P\n'; }
assert_eq "" "$(litter)" "temporary files left in the watch's full data directory"
# every file on the watch is complete: a file is either absent or holds all of the phone's bytes
for f in "$X"/*; do
    n=$(basename "$f")
    absent watch "$n" || same_file watch "$n" "$f" || fail "the watch holds a partial $n on the full disk ($(stat -c %s "$(data_of watch)/$n") bytes)"
done
# nothing lost or changed on the phone (no deletion or truncation came back from the watch)
for f in "$X"/*; do same_file phone "$(basename "$f")" "$f" || fail "the phone lost $(basename "$f") while the watch's disk was full"; done
[ "$(on phone head_list | grep -c '^big')" = 3 ] || fail "the phone's HEAD lost a big file: $(on phone head_list | tr '\n' ' ')"

# ---- room again: the watch retries and catches up ---------------------------------------------------------
mount -o remount,size=64m "$WATCH_MNT" || fail "could not grow the tmpfs"
no_problem() { [ "$(problems)" = "[]" ]; }
for i in 1 2 3; do WAIT_TIMEOUT=90 wait_until same_file watch "big$i.bin" "$X/big$i.bin"; done
WAIT_TIMEOUT=30 wait_converged
wait_until no_problem
assert_eq "" "$(litter)" "temporary files left in the watch's data directory at the end"
for f in "$X"/*; do same_file phone "$(basename "$f")" "$f" || fail "the phone lost $(basename "$f")"; done
stop_device watch
stop_device phone
