#!/usr/bin/env bash
# An ssh hub with no `identity` configured, as README's quick start sets it up, run the way the
# systemd user service runs it: often with no ssh-agent. The documented order (ssh-agent, then
# ~/.ssh/id_ed25519, then ~/.ssh/id_rsa) must fall through to the key file when no agent runs
# (SSH_AUTH_SOCK unset), when SSH_AUTH_SOCK names a socket nobody listens on, and when the agent
# answers but holds no key the server takes. Against Debian's sshd on loopback. A device whose key
# the server refuses is told every key tried, and the url is not blamed.
source "$(dirname "$0")/lib.sh"
X="$T/expected"; mkdir -p "$X"
S="$T/ssh"
start_sshd "$S"
port=$SSHD_PORT
user=$(id -un)
wait_until sshd_answers "$S"
mkdir -p "$T/srv"
git init -q --bare "$T/srv/family.git"
url="ssh://$user@127.0.0.1:$port$T/srv/family.git"

# home DIR KEY: a home whose ~/.ssh holds KEY as id_ed25519 and the server in known_hosts.
home() {
    mkdir -p "$1/.ssh"
    cp "$2" "$1/.ssh/id_ed25519"
    cp "$2.pub" "$1/.ssh/id_ed25519.pub"
    cp "$S/known_hosts" "$1/.ssh/known_hosts"
    chmod 700 "$1/.ssh"
    chmod 600 "$1/.ssh/id_ed25519"
}
home "$T/home-good" "$S/id_device"
ssh-keygen -q -t ed25519 -N '' -f "$S/id_stranger"
home "$T/home-stranger" "$S/id_stranger"

# An agent that runs but holds no key; a socket file nobody listens on.
eval "$(ssh-agent -s -a "$T/agent.sock")" >/dev/null
track_pid "$SSH_AGENT_PID"
rc=0; ssh-add -l >/dev/null 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "the test's ssh-agent should answer and hold no key (ssh-add -l: $rc)"
python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$T/dead.sock"
[ -S "$T/dead.sock" ] || fail "no dead socket file at $T/dead.sock"

# device NAME: `syncagent init --hub`, as a new user makes it (no identity, no known_hosts), then a
# short debounce and poll for the test.
device() {
    use_agent "$1"
    mkdir -p "$DIR"
    "$SYNCAGENT" init --device "$1" --data "$DATA" --state "$STATE" --config "$CONFIG" --hub "hub=$url" \
        >"$DIR/init.out" 2>&1 || fail "syncagent init --hub ($1) failed: $(cat "$DIR/init.out")"
    grep -q '^hub = true$' "$CONFIG" || fail "init --hub wrote no 'hub = true' into $CONFIG"
    set_watch debounce_ms 50
    on "$1" set_peer hub poll_seconds 1
}
# start_with NAME HOME SOCK ("" = unset)
start_with() {
    local saved_home=$HOME
    export HOME=$2
    if [ -n "$3" ]; then export SSH_AUTH_SOCK=$3; else unset SSH_AUTH_SOCK; fi
    start_device "$1"
    export HOME=$saved_home
    unset SSH_AUTH_SOCK
}
for d in noagent deadsock emptyagent stranger; do device "$d"; done
for d in noagent deadsock emptyagent; do
    printf 'from %s\n' "$d" >"$X/$d"
    cp "$X/$d" "$(data_of "$d")/$d.txt"
done
start_with noagent "$T/home-good" ""
start_with deadsock "$T/home-good" "$T/dead.sock"
start_with emptyagent "$T/home-good" "$T/agent.sock"
start_with stranger "$T/home-stranger" ""
for d in noagent deadsock emptyagent; do
    for f in noagent deadsock emptyagent; do wait_until same_file "$d" "$f.txt" "$X/$f"; done
done
for d in noagent deadsock emptyagent; do
    [ "$(peer_get "$d" hub lastError)" = null ] || fail "$d: $(peer_get "$d" hub lastError)"
done
log "no agent, a dead agent socket and an agent without the key: all three reach the hub with ~/.ssh/id_ed25519"

has_error() { [ "$(peer_get "$1" hub lastError)" != null ]; }
wait_until has_error stranger
e=$(peer_get stranger hub lastError)
assert_contains "$e" "authentication failed" "a key the server refuses"
assert_contains "$e" "ssh-agent (none running: SSH_AUTH_SOCK is not set)" "the agent that was not there"
assert_contains "$e" "$T/home-stranger/.ssh/id_ed25519" "the key that was tried"
assert_not_contains "$e" "Check the peer's url" "the url is not blamed"
[ -z "$(git --git-dir="$(store_of stranger)" for-each-ref refs/hubs)" ] || fail "stranger fetched through a refused connection"
for d in noagent deadsock emptyagent stranger; do stop_device "$d"; done
log "ok"
