#!/usr/bin/env bash
# Issue 48 on a real git server: an encrypted hub on Debian's gitolite3 behind sshd on loopback.
# The per-device write rules name each device's opaque branch (`syncagent key ref`), so gitolite
# still lets each device write only its own; the notify-changes command still wakes the others.
# Three devices converge; the hub's objects and refs hold none of their names, contents or
# commit messages; a device configured with another device's name is refused by gitolite.
source "$(dirname "$0")/lib.sh"
command -v gitolite >/dev/null || fail "gitolite is not installed (make installs gitolite3)"
X="$T/expected"; mkdir -p "$X"
SAMPLES=$(cd "$(dirname "$0")/../Samples/gitolite" && pwd)
S="$T/ssh"
start_sshd "$S" "PermitUserEnvironment HOME,PATH"
port=$SSHD_PORT
user=$(id -un)
"$SYNCAGENT" key new "$T/hub.key" >/dev/null || fail "syncagent key new failed"
ref() { "$SYNCAGENT" key ref --key-file "$T/hub.key" --device "$1"; }
{
    printf '@devices = phone watch car\n\nrepo family\n    R = @devices\n'
    for d in phone watch car; do printf '    RW  %s$ = %s\n' "$(ref "$d")" "$d"; done
} >"$T/gitolite.conf"
GITOLITE_CONF="$T/gitolite.conf"
source "$(dirname "$0")/gitolite_setup.sh"

device() {  # device NAME KEY
    init_device "$1" 50
    join_hub "$1" "$url"
    on "$1" set_peer hub identity "\"$S/$2\""
    on "$1" set_peer hub known_hosts "\"$S/known_hosts\""
    on "$1" set_peer hub key_file "\"$T/hub.key\""
    on "$1" set_peer hub poll_seconds 3600
    printf 'notify_command = ["ssh", "-p", "%s", "-i", "%s", "-o", "BatchMode=yes", "-o", "UserKnownHostsFile=%s", "%s", "notify-changes", "family"]\n' \
        "$port" "$S/$2" "$S/known_hosts" "$user@127.0.0.1" >>"$T/$1/syncagent.toml"
}

# an impostor: named watch, with the car's key
device impostor car
sed -i 's/^device = "impostor"$/device = "watch"/' "$T/impostor/syncagent.toml"
printf 'not the watch\n' >"$(data_of impostor)/fake.txt"
start_device impostor
refused() { peer_get impostor hub lastError | grep -q 'DENIED'; }
wait_until refused
assert_contains "$(peer_get impostor hub lastError)" "$(ref watch | sed 's|refs/heads/devices/||' | cut -c1-8)" "the sealed branch the server refused"
stop_device impostor
log "a device using another's name: refused by gitolite on its sealed branch"

DEVICES=(phone watch car)
for d in "${DEVICES[@]}"; do
    device "$d" "$d"
    printf 'platypus-note from the %s\n' "$d" >"$X/$d"
    cp "$X/$d" "$(data_of "$d")/diary-$d.txt"
done
for d in "${DEVICES[@]}"; do start_device "$d"; done
for d in "${DEVICES[@]}"; do wait_until peer_is "$d" hub notify listening; done
for d in "${DEVICES[@]}"; do for f in "${DEVICES[@]}"; do wait_until same_file "$d" "diary-$f.txt" "$X/$f"; done; done
printf 'later, from the car: narwhal\n' >"$X/later"
cp "$X/later" "$(data_of car)/later.txt"
for d in phone watch; do wait_until same_file "$d" later.txt "$X/later"; done
for d in "${DEVICES[@]}"; do [ "$(peer_get "$d" hub lastError)" = null ] || fail "$d: $(peer_get "$d" hub lastError)"; done
log "three devices converged through the encrypted gitolite hub, woken by notify-changes"

H="$GL/repositories/family.git"
git --git-dir="$H" cat-file --batch-all-objects --batch >"$T/hub.objects"
git --git-dir="$H" for-each-ref --format='%(refname)' >"$T/hub.refs"
python3 - "$T/hub.objects" "$T/hub.refs" <<'PY' || fail "the hub holds plaintext (above)"
import sys
data = open(sys.argv[1], "rb").read() + open(sys.argv[2], "rb").read()
found = [n.decode() for n in [b"platypus", b"narwhal", b"diary-", b"later.txt", b"phone", b"watch", b"car:", b"added"] if n in data]
if found:
    print("found on the hub: %s" % ", ".join(found)); sys.exit(1)
PY
for d in "${DEVICES[@]}"; do stop_device "$d"; done
log "no name, content, device name or message on the gitolite hub"
