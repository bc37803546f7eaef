#!/usr/bin/env bash
# The notify channel (`notify = "ssh"`): `syncagent notify-changes REPO` on the hub's host prints
# READY, then one line per ref that moved (loose refs and packed-refs, bytes exact), and ends when
# its stdin closes or the repository goes. Three devices through an ssh hub (Debian's sshd on
# loopback) polled only once an hour still see each other's changes at once, through the channel
# each keeps open. A device whose server has no `syncagent` on its PATH says so in status and falls
# back to polling.
source "$(dirname "$0")/lib.sh"
X="$T/expected"; mkdir -p "$X"

# ---- notify-changes on its own ---------------------------------------------------------------------
mkdir -p "$T/srv" "$T/worktree"
git init -q --bare "$T/srv/family.git"
git init -q "$T/worktree"
for bad in "$T/nowhere" "$T/worktree" "$T/expected"; do
    rc=0; "$SYNCAGENT" notify-changes "$bad" </dev/null >"$T/bad.out" 2>&1 || rc=$?
    [ "$rc" != 0 ] || fail "notify-changes accepted $bad"
    assert_contains "$(cat "$T/bad.out")" "$bad" "the refusal names the path"
done
assert_contains "$(cat "$T/bad.out")" "not a bare git repository" "a plain directory"
G() { git -c user.name=test -c user.email=test@example.com --git-dir="$T/srv/family.git" "$@"; }
blob=$(printf 'x\n' | G hash-object -w --stdin)
tree=$(printf '100644 blob %s\tx\n' "$blob" | G mktree)
c1=$(G commit-tree -m one "$tree")
c2=$(G commit-tree -m two -p "$c1" "$tree")
mkfifo "$T/notify.in"
"$SYNCAGENT" notify-changes "$T/srv/family.git" <"$T/notify.in" >"$T/notify.out" 2>"$T/notify.err" &
NPID=$!
track_pid "$NPID"
exec 7>"$T/notify.in"   # its stdin stays open while fd 7 does
said() { grep -qxF -- "$1" "$T/notify.out"; }
wait_until said READY
G update-ref refs/heads/devices/phone "$c1"
wait_until said "refs/heads/devices/phone $c1"
G update-ref refs/heads/devices/phone "$c2"
wait_until said "refs/heads/devices/phone $c2"
# The same value moved into packed-refs is no move; a ref written only into packed-refs is.
G pack-refs --all
printf '%s refs/heads/devices/watch\n' "$c1" >>"$T/srv/family.git/packed-refs"
wait_until said "refs/heads/devices/watch $c1"
G update-ref -d refs/heads/devices/phone
wait_until said "refs/heads/devices/phone 0000000000000000000000000000000000000000"
# A name that is not UTF-8 comes out as the same bytes.
odd=$(printf 'refs/heads/devices/caf\xe9')
G update-ref "$odd" "$c2"
printf '%s %s\n' "$odd" "$c2" >"$T/odd.expected"
has_odd() { grep -qF -f "$T/odd.expected" "$T/notify.out"; }
wait_until has_odd
lines=$(grep -c "refs/heads/devices/phone" "$T/notify.out")
assert_eq 3 "$lines" "lines for refs/heads/devices/phone (one per move)"
exec 7>&-
gone() { ! kill -0 "$NPID" 2>/dev/null; }
wait_until gone
wait "$NPID" || fail "notify-changes did not exit 0 when its stdin closed: $(cat "$T/notify.err")"
# A repository that goes away ends it with a message.
cp -a "$T/srv/family.git" "$T/srv/doomed.git"
mkfifo "$T/doomed.in"
"$SYNCAGENT" notify-changes "$T/srv/doomed.git" <"$T/doomed.in" >"$T/doomed.out" 2>"$T/doomed.err" &
DPID=$!
track_pid "$DPID"
exec 8>"$T/doomed.in"
doomed_ready() { grep -qx READY "$T/doomed.out"; }
wait_until doomed_ready
rm -rf "$T/srv/doomed.git"
dgone() { ! kill -0 "$DPID" 2>/dev/null; }
wait_until dgone
rc=0; wait "$DPID" || rc=$?
[ "$rc" != 0 ] || fail "notify-changes exited 0 when its repository went away"
assert_contains "$(cat "$T/doomed.err")" "went away" "why it ended"
exec 8>&-
log "notify-changes: READY, one line per move (loose, packed, deleted, non-UTF-8), ends on EOF and when the repository goes"

# ---- three devices through an ssh hub, polled once an hour ----------------------------------------
S="$T/ssh"
start_sshd "$S" "PermitUserEnvironment PATH"
port=$SSHD_PORT
user=$(id -un)
bindir=$(dirname "$SYNCAGENT")
# The device key finds syncagent on the server's PATH; a second key logs in with the default PATH.
# Every fetch and push the server serves is counted: git-upload-pack and git-receive-pack first
# go through wrappers that note the call.
mkdir -p "$T/wrap"
for svc in git-upload-pack git-receive-pack; do
    printf '#!/bin/sh\necho %s >>"%s"\nexec /usr/bin/%s "$@"\n' "$svc" "$T/served.log" "$svc" >"$T/wrap/$svc"
    chmod +x "$T/wrap/$svc"
done
: >"$T/served.log"
printf 'environment="PATH=%s:%s:/usr/bin:/bin" %s\n' "$T/wrap" "$bindir" "$(cat "$S/id_device.pub")" >"$S/authorized_keys"
ssh-keygen -q -t ed25519 -N '' -f "$S/id_plain"
cat "$S/id_plain.pub" >>"$S/authorized_keys"
wait_until sshd_answers "$S"
rm -rf "$T/srv/family.git"
git init -q --bare "$T/srv/family.git"
url="ssh://$user@127.0.0.1:$port$T/srv/family.git"
# device NAME KEY POLL
device() {
    init_device "$1" 50
    join_hub "$1" "$url"
    on "$1" set_peer hub identity "\"$2\""
    on "$1" set_peer hub known_hosts "\"$S/known_hosts\""
    on "$1" set_peer hub notify '"ssh"'
    on "$1" set_peer hub poll_seconds "$3"
}
DEVICES=(phone watch car)
for d in "${DEVICES[@]}"; do device "$d" "$S/id_device" 3600; done
for d in "${DEVICES[@]}"; do start_device "$d"; done
listening() { peer_is "$1" hub notify listening; }
for d in "${DEVICES[@]}"; do wait_until listening "$d"; done
# Each device fetched once at start; from here on only the channel can bring a change in time.
n=0
for from in phone watch car; do
    n=$((n + 1))
    printf 'change %s from %s\n' "$n" "$from" >"$X/c$n"
    cp "$X/c$n" "$(data_of "$from")/c$n.txt"
    for d in "${DEVICES[@]}"; do wait_until same_file "$d" "c$n.txt" "$X/c$n"; done
done
log "three devices polled once an hour saw each change through the notify channel"
# The next fetch and push of each device wait on the server already started (its login shell run),
# one session per service and device, held in `read` until used: no shell start in the way of
# the next change. (Matched on the server side: `<shell> -c read go && exec ...`.)
waiting() { pgrep -f -- "-c read go && exec $1 " | wc -l; }
three_waiting() { [ "$(waiting git-upload-pack)" = 3 ] && [ "$(waiting git-receive-pack)" = 3 ]; }
wait_until three_waiting
log "one fetch and one push per device wait on the server, started ahead"
# Idle with the channel open: no fetch, no push. (Absence needs a window; a poll would come only
# after an hour, so a quiet window cannot pass by luck, only fail on a real request.)
settled() { mains_equal phone watch && mains_equal phone car; }
wait_until settled
served() { wc -l <"$T/served.log"; }
idle_hub() { local a; a=$(served); sleep 1; [ "$(served)" = "$a" ]; }
wait_until idle_hub
before=$(served)
sleep 3
assert_eq "$before" "$(served)" "fetches and pushes the hub served while every device was idle"
log "idle devices with the channel open make no request ($before served while changes flowed)"

# ---- the hub out of reach for a while, then back: seen within about a second ----------------------
# The server goes away with every session. Each device's retries back off (2, 4, ... 32 s between
# rounds, and as much for the channel); once it is back, a connection tried every second finds it,
# and the change made meanwhile arrives with the channels open again, long before a backoff ends.
stop_sshd "$S"
down() { peer_get "$1" hub notify | grep -q '^down: ' && [ "$(peer_get "$1" hub reachable)" = false ]; }
for d in "${DEVICES[@]}"; do wait_until down "$d"; done
printf 'written while the hub was away\n' >"$X/away"
cp "$X/away" "$(data_of phone)/away.txt"
on phone wait_until head_file_matches away.txt
sleep 35   # the outage itself: long enough for every backoff to reach 32 s
for d in "${DEVICES[@]}"; do ! grep -q "answers again" "${DEVICE_LOG[$d]}" || fail "$d saw the hub while it was down"; done
run_sshd "$S"
healed=$(date +%s)
back() { same_file "$1" away.txt "$X/away" && listening "$1"; }
for d in watch car; do WAIT_TIMEOUT=20 wait_until back "$d"; done
wait_until listening phone
for d in "${DEVICES[@]}"; do grep -q "peer hub answers again" "${DEVICE_LOG[$d]}" || fail "$d did not notice the hub's return by itself"; done
log "the hub away for 35 s: back on every device, channels open, $(( $(date +%s) - healed )) s after it returned"

# ---- a server without syncagent on the PATH: said in status, polling instead ------------------------
device lost "$S/id_plain" 1
start_device lost
is_down() { peer_get lost hub notify | grep -q '^down: '; }
wait_until is_down
e=$(peer_get lost hub notify)
assert_contains "$e" "install syncagent on the server" "what to do"
assert_contains "$e" "polling every 1 s" "the fallback"
wait_until same_file lost c3.txt "$X/c3"
printf 'from lost\n' >"$X/l"
cp "$X/l" "$(data_of lost)/l.txt"
for d in "${DEVICES[@]}"; do wait_until same_file "$d" l.txt "$X/l"; done
log "without syncagent on the server: status says so, polling carries the changes"

# ---- what goes wrong over OpenSSH, said with what to do ---------------------------------------------
ssh-keygen -q -t ed25519 -N '' -f "$S/id_stranger"
: >"$S/empty_known_hosts"
device refused "$S/id_stranger" 1
device unknown "$S/id_device" 1
on unknown set_peer hub known_hosts "\"$S/empty_known_hosts\""
start_device refused
start_device unknown
has_error() { [ "$(peer_get "$1" hub lastError)" != null ]; }
for d in refused unknown; do wait_until has_error "$d"; done
e=$(peer_get refused hub lastError)
assert_contains "$e" "Permission denied (publickey" "a key the server refuses"
assert_eq auth "$(peer_get refused hub errorCode)" "errorCode of a refused key"
assert_contains "$e" "add this device's public key to the server's authorized_keys" "what to do about it"
e=$(peer_get unknown hub lastError)
assert_contains "$e" "Host key verification failed" "a host key not in known_hosts"
assert_eq host-key "$(peer_get unknown hub errorCode)" "errorCode of an unknown host key"
assert_contains "$e" "$S/empty_known_hosts" "the known_hosts file to fix"
for d in refused unknown; do assert_contains "$(peer_get "$d" hub notify)" "down: " "$d's notify channel"; done
log "a refused key and an unknown host key: each told, with the file or key to fix"
for d in "${DEVICES[@]}" lost refused unknown; do stop_device "$d"; done
# The agents take their sessions with them: nothing of theirs stays running on the server.
none_waiting() { [ "$(waiting git-upload-pack)" = 0 ] && [ "$(waiting git-receive-pack)" = 0 ]; }
wait_until none_waiting
log "ok"
