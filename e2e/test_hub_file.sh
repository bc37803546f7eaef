#!/usr/bin/env bash
# Four devices meet only through a hub: a bare repository made with `git init --bare`, named in
# every config as [[peer]] hub = true (a plain path). No device peers with another. The agents start
# in any order; a change on any device reaches all the others. The tablet and the laptop are never
# up at the same time, yet the laptop gets the tablet's change through the hub. `status --json` lists
# the hub (reachable, lastPush, lastFetch) and every other device seen through it ("via": "hub").
# The hub holds only refs/heads/devices/<device> (and the records), every push was a fast-forward,
# and `git fsck` on the hub is clean. A fifth agent that calls itself "phone" too is refused: its
# push is not forced, its status names the clash and what to do, and the real phone's branch on
# the hub is unchanged.
source "$(dirname "$0")/lib.sh"

HUB="$T/family.git"
git init -q --bare "$HUB"
DEVICES=(phone watch tablet laptop)
for d in "${DEVICES[@]}"; do
    init_device "$d" 50
    join_hub "$d" "$HUB"
done

# same_everywhere A B...: the same tree in main on every device named, all idle, data = HEAD
same_everywhere() {
    local first d t
    first=$(tree_of "$1")
    [ -n "$first" ] || return 1
    for d in "$@"; do
        t=$(tree_of "$d")
        [ "$t" = "$first" ] || return 1
        on "$d" pending_is 0 && on "$d" head_matches_data || return 1
        data_dirs_equal "$1" "$d" || return 1
    done
}
wait_same() {
    poll_until same_everywhere "$@" && return 0
    local d
    for d in "$@"; do log "$d: main $(main_of "$d") tree $(tree_of "$d")"; data_dirs_diff "$1" "$d" >&2 || true; done
    fail "devices $* did not converge through the hub"
}

# ---- start in an odd order, each with a file of its own ---------------------------------------------
for d in laptop watch phone tablet; do
    printf 'made on the %s\n' "$d" >"$(data_of "$d")/own-$d.txt"
    start_device "$d"
done
WAIT_TIMEOUT=60 wait_same phone watch tablet laptop
for d in "${DEVICES[@]}"; do
    for o in "${DEVICES[@]}"; do
        [ "$(cat "$(data_of "$d")/own-$o.txt")" = "made on the $o" ] || fail "$d lacks $o's file"
    done
done
log "four devices converged through the hub"

# ---- a change on one device reaches the others ----------------------------------------------------
X="$T/expected"; mkdir -p "$X"
printf 'edited on the watch\n' >"$X/edited"
cp "$X/edited" "$(data_of watch)/own-phone.txt"
for d in phone tablet laptop; do wait_until same_file "$d" own-phone.txt "$X/edited"; done
WAIT_TIMEOUT=60 wait_same phone watch tablet laptop

# ---- the tablet and the laptop are never up at the same time ----------------------------------------
stop_device laptop
printf 'written while the laptop was off\n' >"$X/from-tablet"
cp "$X/from-tablet" "$(data_of tablet)/from-tablet.txt"
WAIT_TIMEOUT=60 wait_same phone watch tablet
# the tablet's branch on the hub holds it before the tablet goes
hub_has_tablet() { git --git-dir="$HUB" cat-file -e refs/heads/devices/tablet:from-tablet.txt 2>/dev/null; }
wait_until hub_has_tablet
stop_device tablet
stop_device phone
stop_device watch
start_device laptop
wait_until same_file laptop from-tablet.txt "$X/from-tablet"
log "the laptop got the tablet's change though they were never up together"

# ---- status: the hub and the devices seen through it -------------------------------------------------
switch_to laptop
json=$(status_json)
python3 - "$json" <<'PY' || fail "laptop's status does not describe the hub: $json"
import json, sys
s = json.loads(sys.argv[1])
peers = {p["name"]: p for p in s["peers"]}
hub = peers["hub"]
assert hub["via"] is None, hub
assert hub["reachable"] is True, hub
assert hub["lastPush"] and hub["lastFetch"], hub
assert hub["lastError"] is None, hub
for d in ("phone", "watch", "tablet"):
    p = peers[d]
    assert p["via"] == "hub", p
    assert p["lastSeen"], p
    assert p["ahead"] == 0 and p["behind"] == 0, p
assert "laptop" not in peers, peers
PY
heads=$(git --git-dir="$HUB" for-each-ref --format='%(refname)' | sort | tr '\n' ' ')
assert_eq "refs/heads/devices/laptop refs/heads/devices/phone refs/heads/devices/tablet refs/heads/devices/watch refs/syncagent/devices/laptop/conflicts refs/syncagent/devices/phone/conflicts refs/syncagent/devices/tablet/conflicts refs/syncagent/devices/watch/conflicts " \
    "$heads" "the hub's references"
git --git-dir="$HUB" fsck --no-progress >"$T/fsck.out" 2>&1 || fail "git fsck on the hub: $(cat "$T/fsck.out")"
# every push was a fast-forward: each branch's reflog-free history is linear from its first tip?
# (the hub has no reflog; a forced push would show as a rewrite in the pusher's log, which never forces)
for d in "${DEVICES[@]}"; do
    if grep -q -i "forced\|force" "${DEVICE_LOG[$d]:-/dev/null}" 2>/dev/null; then fail "$d's log speaks of forcing"; fi
done

# ---- a push cut short by kill -9 leaves the hub's ref lock behind -------------------------------------
# (found by the convergence suite, seed 1 hub: every later push failed with "failed to lock file")
printf 'stale\n' >"$HUB/refs/heads/devices/phone.lock"
printf 'written after the lock\n' >"$(data_of phone)/after-lock.txt"
start_device phone
hub_has_after_lock() { git --git-dir="$HUB" cat-file -e refs/heads/devices/phone:after-lock.txt 2>/dev/null; }
wait_until hub_has_after_lock
grep -q "removed a lock a push of this device left in hub" "$LOG" || fail "the start did not say it removed the hub's stale lock"
[ ! -e "$HUB/refs/heads/devices/phone.lock" ] || fail "the stale lock is still on the hub"
stop_device phone

# ---- a second device calling itself "phone" -----------------------------------------------------------
before=$(git --git-dir="$HUB" rev-parse refs/heads/devices/phone)
init_device phone2 50
switch_to phone2
sed -i 's/^device = "phone2"/device = "phone"/' "$CONFIG"
grep -q '^device = "phone"' "$CONFIG" || fail "could not rename phone2's device"
join_hub phone2 "$HUB"
printf 'the other phone\n' >"$DATA/other.txt"
start_device phone2
clash() { status_field peers 0 lastError | grep -q "uses the name 'phone' too"; }
wait_until clash
assert_contains "$(status_field peers 0 lastError)" "Give every device its own \`device\` name" "the clash says what to do"
assert_eq name-clash "$(status_field peers 0 errorCode)" "the clash's errorCode"
assert_eq "$before" "$(git --git-dir="$HUB" rev-parse refs/heads/devices/phone)" "the real phone's branch on the hub"
git --git-dir="$HUB" fsck --no-progress >"$T/fsck.out" 2>&1 || fail "git fsck on the hub: $(cat "$T/fsck.out")"
stop_device phone2
stop_device laptop
log "ok"
