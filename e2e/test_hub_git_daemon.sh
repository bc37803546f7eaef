#!/usr/bin/env bash
# A hub served by `git daemon --enable=receive-pack` on loopback (git://127.0.0.1:PORT/family.git):
# four devices that only know the hub converge, a change on one reaches the others, the hub holds
# only the devices' branches and records, and `git fsck` on it is clean. Then the daemon stops: the
# devices go on committing, `status` shows the hub unreachable with the reason, and once the daemon is
# back everything converges with nothing lost.
source "$(dirname "$0")/lib.sh"
X="$T/expected"; mkdir -p "$X"
git daemon --help >/dev/null 2>&1 || fail "git daemon is not available (it ships with git)"

mkdir -p "$T/srv"
git init -q --bare "$T/srv/family.git"
port=$(free_port)
url="git://127.0.0.1:$port/family.git"
start_daemon() {
    git daemon --reuseaddr --base-path="$T/srv" --export-all --enable=receive-pack --port="$port" \
        --listen=127.0.0.1 >>"$T/daemon.log" 2>&1 &
    daemon_pid=$!
    track_pid "$daemon_pid"
    daemon_up() { git ls-remote "$url" >/dev/null 2>&1; }
    wait_until daemon_up
}
start_daemon

DEVICES=(phone watch tablet laptop)
for d in "${DEVICES[@]}"; do
    init_device "$d" 50
    join_hub "$d" "$url"
    printf 'made on the %s\n' "$d" >"$(data_of "$d")/own-$d.txt"
done

same_everywhere() {
    local first d
    first=$(tree_of phone)
    [ -n "$first" ] || return 1
    for d in "${DEVICES[@]}"; do
        [ "$(tree_of "$d")" = "$first" ] && on "$d" pending_is 0 && on "$d" head_matches_data \
            && data_dirs_equal phone "$d" || return 1
    done
}
wait_same() {
    poll_until same_everywhere && return 0
    local d
    for d in "${DEVICES[@]}"; do log "$d: tree $(tree_of "$d")"; data_dirs_diff phone "$d" >&2 || true; done
    fail "the devices did not converge through git://"
}

for d in "${DEVICES[@]}"; do start_device "$d"; done
WAIT_TIMEOUT=60 wait_same
head -c 20000 /dev/urandom >"$X/bin"
cp "$X/bin" "$(data_of tablet)/photo.bin"
wait_until same_file phone photo.bin "$X/bin"
wait_until same_file watch photo.bin "$X/bin"
WAIT_TIMEOUT=60 wait_same
git --git-dir="$T/srv/family.git" fsck --no-progress >"$T/fsck.out" 2>&1 || fail "git fsck on the hub: $(cat "$T/fsck.out")"
heads=$(git --git-dir="$T/srv/family.git" for-each-ref --format='%(refname)' refs/heads | tr '\n' ' ')
assert_eq "refs/heads/devices/laptop refs/heads/devices/phone refs/heads/devices/tablet refs/heads/devices/watch " "$heads" "the hub's branches"

# ---- the hub goes away: local commits go on, status says why ------------------------------------------
kill "$daemon_pid"; wait "$daemon_pid" 2>/dev/null || true
printf 'written while the hub was down\n' >"$X/down"
cp "$X/down" "$(data_of phone)/down.txt"
switch_to phone
wait_until head_file_matches down.txt
hub_down() { [ "$(peer_get phone hub reachable)" = false ]; }
wait_until hub_down
assert_contains "$(peer_get phone hub lastError)" "127.0.0.1:$port" "the unreachable hub's error names it"
start_daemon
for d in watch tablet laptop; do wait_until same_file "$d" down.txt "$X/down"; done
WAIT_TIMEOUT=60 wait_same
hub_up() { [ "$(peer_get phone hub reachable)" = true ] && [ "$(peer_get phone hub lastError)" = null ]; }
wait_until hub_up
git --git-dir="$T/srv/family.git" fsck --no-progress >"$T/fsck.out" 2>&1 || fail "git fsck on the hub: $(cat "$T/fsck.out")"
for d in "${DEVICES[@]}"; do stop_device "$d"; done
log "ok"
