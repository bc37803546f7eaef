#!/usr/bin/env bash
# A hub over ssh: Debian's sshd, started by the test on loopback with its own host key and one
# authorized key, serves a bare repository. The phone and the watch (identity = that key,
# known_hosts = a file holding the server's key), a car and a desk too, converge through
# ssh://USER@127.0.0.1:PORT/... .
# Then the failures a user meets, each in `status` with what to do: a host key that is not in
# known_hosts (the fingerprint and the ssh-keyscan line to add it), a host key that changed, and
# a key the server does not accept (which key was tried). Nothing is fetched or pushed then.
source "$(dirname "$0")/lib.sh"
X="$T/expected"; mkdir -p "$X"
S="$T/ssh"
start_sshd "$S"
port=$SSHD_PORT
user=$(id -un)
ssh-keygen -q -t ed25519 -N '' -f "$S/other_host_key"
ssh-keygen -q -t ed25519 -N '' -f "$S/id_stranger"
chmod 600 "$S"/id_*
printf '[127.0.0.1]:%s %s\n' "$port" "$(cut -d' ' -f1-2 "$S/other_host_key.pub")" >"$S/changed_known_hosts"
: >"$S/empty_known_hosts"
wait_until sshd_answers "$S"

mkdir -p "$T/srv"
git init -q --bare "$T/srv/family.git"
url="ssh://$user@127.0.0.1:$port$T/srv/family.git"

# device NAME IDENTITY KNOWN_HOSTS
device() {
    init_device "$1" 50
    join_hub "$1" "$url"
    on "$1" set_peer hub identity "\"$2\""
    on "$1" set_peer hub known_hosts "\"$3\""
}
GOOD=(phone watch car desk)
for d in "${GOOD[@]}"; do device "$d" "$S/id_device" "$S/known_hosts"; done
printf 'from the phone over ssh\n' >"$X/p"
cp "$X/p" "$(data_of phone)/p.txt"
head -c 30000 /dev/urandom >"$X/w"
cp "$X/w" "$(data_of watch)/w.bin"
for d in "${GOOD[@]}"; do start_device "$d"; done
for d in watch car desk; do wait_until same_file "$d" p.txt "$X/p"; done
for d in phone car desk; do wait_until same_file "$d" w.bin "$X/w"; done
same_tree() { local d; for d in "${GOOD[@]}"; do [ "$(tree_of "$d")" = "$(tree_of phone)" ] && data_dirs_equal phone "$d" || return 1; done; }
WAIT_TIMEOUT=60 wait_until same_tree
hub_ok() { [ "$(peer_get phone hub reachable)" = true ] && [ "$(peer_get phone hub lastError)" = null ]; }
wait_until hub_ok
[ "$(peer_get phone watch via)" = hub ] || fail "the phone does not list the watch through the hub"
git --git-dir="$T/srv/family.git" fsck --no-progress >"$T/fsck.out" 2>&1 || fail "git fsck on the hub: $(cat "$T/fsck.out")"
log "four devices converged over ssh"

# ---- what goes wrong, said in status -----------------------------------------------------------------
device tablet "$S/id_device" "$S/empty_known_hosts"
device laptop "$S/id_device" "$S/changed_known_hosts"
device stranger "$S/id_stranger" "$S/known_hosts"
fp=$(ssh-keygen -l -E sha256 -f "$S/host_key.pub" | cut -d' ' -f2)
for d in tablet laptop stranger; do start_device "$d"; done
has_error() { [ "$(peer_get "$1" hub lastError)" != null ]; }
for d in tablet laptop stranger; do wait_until has_error "$d"; done
assert_eq host-key "$(peer_get tablet hub errorCode)" "tablet's errorCode"
assert_eq host-key "$(peer_get laptop hub errorCode)" "laptop's errorCode"
assert_eq auth "$(peer_get stranger hub errorCode)" "stranger's errorCode"
e=$(peer_get tablet hub lastError)
assert_contains "$e" "is not in $S/empty_known_hosts" "unknown host key"
assert_contains "$e" "$fp" "the unknown key's fingerprint"
assert_contains "$e" "ssh-keyscan -p $port 127.0.0.1 >> $S/empty_known_hosts" "how to add it"
e=$(peer_get laptop hub lastError)
assert_contains "$e" "CHANGED" "changed host key"
assert_contains "$e" "$fp" "the new key's fingerprint"
assert_contains "$e" "ssh-keygen -R" "how to replace it"
e=$(peer_get stranger hub lastError)
assert_contains "$e" "authentication failed" "a key the server refuses"
assert_contains "$e" "$S/id_stranger" "which key was tried"
for d in tablet laptop stranger; do
    [ -z "$(git --git-dir="$(store_of "$d")" for-each-ref refs/hubs)" ] || fail "$d fetched through a refused connection"
done
heads=$(git --git-dir="$T/srv/family.git" for-each-ref --format='%(refname)' refs/heads | tr '\n' ' ')
assert_eq "refs/heads/devices/car refs/heads/devices/desk refs/heads/devices/phone refs/heads/devices/watch " "$heads" "only the four good devices pushed"
for d in "${GOOD[@]}" tablet laptop stranger; do stop_device "$d"; done
log "ok"
