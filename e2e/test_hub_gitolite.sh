#!/usr/bin/env bash
# A hub on a real git server with per-device write rules: Debian's gitolite3 behind sshd on
# loopback, set up with README's recipe (Samples/gitolite/gitolite.conf and the notify-changes
# command). Three devices converge through it with the notify channel running as a gitolite
# command (so it too passes gitolite's access check). A device configured with another device's
# name is refused by the server: the agent says which ref and why, nothing is forced, the real
# device's branch is intact. A key gitolite does not know gets a clear error.
source "$(dirname "$0")/lib.sh"
command -v gitolite >/dev/null || fail "gitolite is not installed (make installs gitolite3)"
X="$T/expected"; mkdir -p "$X"
SAMPLES=$(cd "$(dirname "$0")/../Samples/gitolite" && pwd)
S="$T/ssh"
start_sshd "$S" "PermitUserEnvironment HOME,PATH"
port=$SSHD_PORT
user=$(id -un)

# ---- gitolite, as README's recipe sets it up (e2e/gitolite_setup.sh) -------------------------------
GITOLITE_CONF="$SAMPLES/gitolite.conf"
source "$(dirname "$0")/gitolite_setup.sh"

# device NAME KEY
device() {
    init_device "$1" 50
    join_hub "$1" "$url"
    on "$1" set_peer hub identity "\"$S/$2\""
    on "$1" set_peer hub known_hosts "\"$S/known_hosts\""
    on "$1" set_peer hub poll_seconds 3600
    # the hub's [[peer]] table is the last one in the file
    printf 'notify_command = ["ssh", "-p", "%s", "-i", "%s", "-o", "BatchMode=yes", "-o", "UserKnownHostsFile=%s", "%s", "notify-changes", "family"]\n' \
        "$port" "$S/$2" "$S/known_hosts" "$user@127.0.0.1" >>"$T/$1/syncagent.toml"
}

# ---- an impostor first: a device named "watch" with the car's key -----------------------------------
device impostor car
sed -i 's/^device = "impostor"$/device = "watch"/' "$T/impostor/syncagent.toml"
grep -q '^device = "watch"$' "$T/impostor/syncagent.toml" || fail "the impostor is not named watch"
printf 'not the watch\n' >"$(data_of impostor)/fake.txt"
start_device impostor
refused() { peer_get impostor hub lastError | grep -q 'refused'; }
wait_until refused
e=$(peer_get impostor hub lastError)
assert_contains "$e" "refs/heads/devices/watch" "the ref the server refused"
assert_contains "$e" "DENIED" "gitolite's reason"
assert_eq refused "$(peer_get impostor hub errorCode)" "the impostor's errorCode"
stop_device impostor
[ -z "$(git --git-dir="$GL/repositories/family.git" for-each-ref refs/heads/devices/watch)" ] \
    || fail "the impostor's push reached refs/heads/devices/watch"
log "a device using another's name: refused by gitolite, the agent names the ref and the reason"

# ---- three devices, polled once an hour, notified through gitolite ----------------------------------
DEVICES=(phone watch car)
for d in "${DEVICES[@]}"; do device "$d" "$d"; done
for d in "${DEVICES[@]}"; do
    printf 'from %s\n' "$d" >"$X/$d"
    cp "$X/$d" "$(data_of "$d")/$d.txt"
done
for d in "${DEVICES[@]}"; do start_device "$d"; done
listening() { peer_is "$1" hub notify listening; }
for d in "${DEVICES[@]}"; do wait_until listening "$d"; done
for d in "${DEVICES[@]}"; do for f in "${DEVICES[@]}"; do wait_until same_file "$d" "$f.txt" "$X/$f"; done; done
printf 'later, from the car\n' >"$X/later"
cp "$X/later" "$(data_of car)/later.txt"
for d in phone watch; do wait_until same_file "$d" later.txt "$X/later"; done
for d in "${DEVICES[@]}"; do
    [ "$(peer_get "$d" hub lastError)" = null ] || fail "$d: $(peer_get "$d" hub lastError)"
done
hub_ref() { git --git-dir="$GL/repositories/family.git" rev-parse -q --verify "refs/heads/devices/$1"; }
for d in "${DEVICES[@]}"; do hub_ref "$d" >/dev/null || fail "no refs/heads/devices/$d on the hub"; done
git --git-dir="$GL/repositories/family.git" cat-file -e "$(hub_ref watch):watch.txt" \
    || fail "refs/heads/devices/watch is not the real watch's"
log "three devices converged through gitolite, each change brought by the notify command"


# ---- a key gitolite does not know ------------------------------------------------------------------
device stranger stranger
start_device stranger
has_error() { [ "$(peer_get stranger hub lastError)" != null ]; }
wait_until has_error
assert_contains "$(peer_get stranger hub lastError)" "authentication failed" "a key the server does not know"
assert_eq auth "$(peer_get stranger hub errorCode)" "the stranger's errorCode"
for d in "${DEVICES[@]}" stranger; do stop_device "$d"; done

# The rules hold against plain git too (every agent stopped, so no ref moves meanwhile): with the phone's key, no delete, no rewind, no other branch.
export GIT_SSH_COMMAND="ssh -i $S/phone -o BatchMode=yes -o UserKnownHostsFile=$S/known_hosts"
before=$(hub_ref phone)
rewind=$(git -c user.name=t -c user.email=t@example.com --git-dir="$(store_of phone)" commit-tree -m rewind "$(git --git-dir="$(store_of phone)" rev-parse "$before^{tree}")")
git --git-dir="$(store_of phone)" push -q "$url" ":refs/heads/devices/phone" 2>"$T/push.err" && fail "gitolite let the phone delete its branch"
git --git-dir="$(store_of phone)" push -q "$url" "+$rewind:refs/heads/devices/phone" 2>>"$T/push.err" && fail "gitolite let the phone rewind its branch"
git --git-dir="$(store_of phone)" push -q "$url" "$before:refs/heads/devices/tv" 2>>"$T/push.err" && fail "gitolite let the phone write another device's branch"
unset GIT_SSH_COMMAND
assert_eq "$before" "$(hub_ref phone)" "refs/heads/devices/phone after the refused pushes"
assert_contains "$(cat "$T/push.err")" "DENIED" "gitolite's refusals"
log "gitolite refuses a delete, a rewind and another device's branch"
log "ok"
