#!/usr/bin/env bash
# Network faults between the devices and a hub, in a network namespace the test makes: `git daemon`
# (receive-pack on) serves the hub inside it, reached over a veth pair on private addresses. Three
# devices converge through it. Then: the hub black-holed (its replies dropped), the link cut in the
# middle of a push of a 1 MiB file (the link slowed to 1 Mbit/s so it is surely mid-way), and cut in
# the middle of the watch's fetch of another one. Throughout, local commits go on and `status` shows
# the hub unreachable with the reason; once the link is back everything converges, nothing is lost,
# and `git fsck` on the hub stays clean (a half-finished push never leaves a branch pointing at a
# missing object).
source "$(dirname "$0")/lib.sh"
X="$T/expected"; mkdir -p "$X"
[ "$(id -u)" = 0 ] || fail "this test makes a network namespace: run it as root"
command -v ip >/dev/null && command -v tc >/dev/null || fail "ip and tc (iproute2) are needed"

NS="sa-hub-$$"
n=$(( (RANDOM % 200) + 20 ))
HOST_IF="sah${n}a" NS_IF="sah${n}b"
HOST_IP="10.77.$n.1" HUB_IP="10.77.$n.2"
ip netns add "$NS"
at_exit "ip netns del $NS"
at_exit "ip link del $HOST_IF"
ip link add "$HOST_IF" type veth peer name "$NS_IF"
ip link set "$NS_IF" netns "$NS"
ip addr add "$HOST_IP/24" dev "$HOST_IF"
ip link set "$HOST_IF" up
ip netns exec "$NS" ip addr add "$HUB_IP/24" dev "$NS_IF"
ip netns exec "$NS" ip link set "$NS_IF" up
ip netns exec "$NS" ip link set lo up

mkdir -p "$T/srv"
git init -q --bare "$T/srv/family.git"
ip netns exec "$NS" git daemon --reuseaddr --base-path="$T/srv" --export-all --enable=receive-pack \
    --listen="$HUB_IP" --port=9418 >"$T/daemon.log" 2>&1 &
track_pid $!
url="git://$HUB_IP/family.git"
daemon_up() { timeout 5 git ls-remote "$url" >/dev/null 2>&1; }
wait_until daemon_up

DEVICES=(phone watch tablet)
for d in "${DEVICES[@]}"; do
    init_device "$d" 50
    join_hub "$d" "$url"
    on "$d" set_peer hub timeout_seconds 5   # a stalled transfer is abandoned after 5 s without data
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
converge() {
    WAIT_TIMEOUT=${1:-90} poll_until same_everywhere && return 0
    local d
    for d in "${DEVICES[@]}"; do log "$d: tree $(tree_of "$d") hub error: $(peer_get "$d" hub lastError)"; done
    fail "the devices did not converge through the hub in the namespace"
}
hub_fsck() {
    git --git-dir="$T/srv/family.git" fsck --no-progress --connectivity-only >"$T/fsck.out" 2>&1 \
        || fail "git fsck on the hub after $1: $(cat "$T/fsck.out")"
}
unreachable() { [ "$(peer_get "$1" hub reachable)" = false ]; }
reachable() { [ "$(peer_get "$1" hub reachable)" = true ] && [ "$(peer_get "$1" hub lastError)" = null ]; }

for d in "${DEVICES[@]}"; do start_device "$d"; done
converge
hub_fsck "the first sync"
log "three devices converged through the hub in $NS"

# ---- the hub black-holed: its replies are dropped ---------------------------------------------------
ip netns exec "$NS" ip route add blackhole "$HOST_IP/32"
printf 'written while the hub was black-holed\n' >"$X/bh"
cp "$X/bh" "$(data_of phone)/blackhole.txt"
on phone wait_until head_file_matches blackhole.txt
WAIT_TIMEOUT=40 wait_until unreachable phone
assert_contains "$(peer_get phone hub lastError)" "$HUB_IP" "the black-holed hub's error names it"
ip netns exec "$NS" ip route del blackhole "$HOST_IP/32"
converge 120
for d in watch tablet; do same_file "$d" blackhole.txt "$X/bh" || fail "$d lacks blackhole.txt"; done
hub_fsck "the black hole"
log "black hole: local commits went on, converged after"

# ---- the link cut in the middle of a push -------------------------------------------------------------
tc qdisc add dev "$HOST_IF" root tbf rate 1mbit burst 16kbit latency 2s
at_exit "tc qdisc del dev $HOST_IF root"
head -c $((1 << 20)) /dev/urandom >"$X/push.bin"
cp "$X/push.bin" "$(data_of phone)/push.bin"
receiving() { [ -n "$(find "$T/srv/family.git/objects" -maxdepth 1 -name '*incoming*' 2>/dev/null)" ]; }  # receive-pack's quarantine
WAIT_TIMEOUT=60 wait_until receiving
ip link set "$HOST_IF" down
printf 'committed while the link was down\n' >"$X/down"
cp "$X/down" "$(data_of phone)/down.txt"
on phone wait_until head_file_matches down.txt
WAIT_TIMEOUT=60 wait_until unreachable phone
hub_fsck "a push cut in the middle"
tc qdisc del dev "$HOST_IF" root 2>/dev/null || true
ip link set "$HOST_IF" up
converge 180
for d in watch tablet; do
    same_file "$d" push.bin "$X/push.bin" || fail "$d lacks push.bin"
    same_file "$d" down.txt "$X/down" || fail "$d lacks down.txt"
done
hub_fsck "the push cut in the middle, then finished"
log "push cut in the middle: nothing lost, hub clean"

# ---- the link cut in the middle of a fetch --------------------------------------------------------------
stop_device watch
head -c $((1 << 20)) /dev/urandom >"$X/fetch.bin"
cp "$X/fetch.bin" "$(data_of tablet)/fetch.bin"
tablet_pushed() { git --git-dir="$T/srv/family.git" cat-file -e refs/heads/devices/tablet:fetch.bin 2>/dev/null; }
WAIT_TIMEOUT=60 wait_until tablet_pushed
ip netns exec "$NS" tc qdisc add dev "$NS_IF" root tbf rate 1mbit burst 16kbit latency 2s   # hub -> devices
start_device watch
fetching() { pgrep -f "upload-pack" >/dev/null 2>&1; }
WAIT_TIMEOUT=60 wait_until fetching
ip link set "$HOST_IF" down
printf 'the watch wrote this offline\n' >"$X/offline"
cp "$X/offline" "$(data_of watch)/offline.txt"
on watch wait_until head_file_matches offline.txt
WAIT_TIMEOUT=60 wait_until unreachable watch
ip netns exec "$NS" tc qdisc del dev "$NS_IF" root
ip link set "$HOST_IF" up
converge 180
same_file watch fetch.bin "$X/fetch.bin" || fail "the watch lacks fetch.bin"
for d in phone tablet; do same_file "$d" offline.txt "$X/offline" || fail "$d lacks offline.txt"; done
hub_fsck "the fetch cut in the middle"
for d in "${DEVICES[@]}"; do stop_device "$d"; done
log "ok"
