# Shared helpers for the end-to-end tests. Each test_*.sh sources this file first.
#
# A test drives the built binary ($SYNCAGENT) the way a user would: `syncagent init`, `run`, `status`,
# plain file operations in the data directory and plain `git --git-dir=<state>/store.git` to look at
# the result. Nothing here reads the agent's internals.
#
# Conventions:
#   - every test gets its own temp dir ($T); it is removed when the test passes, kept and printed
#     when it fails (with the tail of the agent logs);
#   - waits poll a condition every 0.1 s up to $WAIT_TIMEOUT seconds (default 15): no test asserts
#     how long something took, only that it happens;
#   - after `use_agent NAME` (or `start_agent NAME`): $DIR, $DATA, $STATE, $STORE, $CONFIG; while
#     an agent runs: $AGENT_PID and $LOG (its stderr for this run).

set -euo pipefail
export LC_ALL=C

: "${SYNCAGENT:?set SYNCAGENT to the syncagent binary (make e2e does)}"
case "$SYNCAGENT" in /*) ;; *) SYNCAGENT="$PWD/$SYNCAGENT" ;; esac
[ -x "$SYNCAGENT" ] || { echo "SYNCAGENT=$SYNCAGENT is not an executable file" >&2; exit 2; }
command -v git >/dev/null || { echo "git is needed by the e2e tests" >&2; exit 2; }

TEST_NAME=$(basename "$0" .sh)
WAIT_TIMEOUT=${WAIT_TIMEOUT:-15}
# Every agent a test starts runs with this log level unless the test says otherwise.
LOG_LEVEL=${LOG_LEVEL:-info}

T=$(mktemp -d "${TMPDIR:-/tmp}/syncagent-e2e.$TEST_NAME.XXXXXX")
T=$(cd "$T" && pwd -P)
# Keep git away from the user's and the system's configuration.
export HOME="$T/home" XDG_CONFIG_HOME="$T/home/.config" XDG_STATE_HOME="$T/home/.local/state"
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
unset SYNCAGENT_CONFIG GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE
mkdir -p "$HOME"

STARTED_PIDS=()   # every `syncagent run` this test started, to stop them on exit
CLEANUP_CMDS=()   # commands to run on exit, after the processes are stopped (network namespaces...)
# at_exit CMD...: run CMD (one string, eval'd) when the test ends, pass or fail.
at_exit() { CLEANUP_CMDS+=("$*"); }
AGENT_PID=""
LOG=""
RUN_SEQ=0

log() { printf '[%s] %s\n' "$TEST_NAME" "$*" >&2; }

fail() {
    printf '[%s] FAIL: %s\n' "$TEST_NAME" "$*" >&2
    exit 1
}

_on_exit() {
    local rc=$?
    set +e
    local pid
    for pid in "${STARTED_PIDS[@]}"; do
        if kill -0 "$pid" 2>/dev/null; then
            kill -TERM "$pid" 2>/dev/null
            local i
            for i in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
            kill -KILL "$pid" 2>/dev/null
        fi
    done
    wait 2>/dev/null
    local c
    for c in "${CLEANUP_CMDS[@]}"; do eval "$c" >/dev/null 2>&1; done
    if [ "$rc" = 0 ]; then
        rm -rf "$T"
    else
        local f
        for f in "$T"/*/run-*.log; do
            [ -f "$f" ] || continue
            printf '[%s] --- last lines of %s ---\n' "$TEST_NAME" "$f" >&2
            tail -n 25 "$f" >&2
        done
        printf '[%s] kept %s\n' "$TEST_NAME" "$T" >&2
    fi
    exit "$rc"
}
trap _on_exit EXIT

# ---- assertions -----------------------------------------------------------------------------------

assert_eq() { # expected actual [what]
    [ "$1" = "$2" ] || fail "${3:-value}: expected '$1', got '$2'"
}

assert_ne() { # unexpected actual [what]
    [ "$1" != "$2" ] || fail "${3:-value}: did not expect '$1'"
}

assert_contains() { # haystack needle [what]
    case "$1" in *"$2"*) ;; *) fail "${3:-text} does not contain '$2': $1" ;; esac
}

assert_not_contains() { # haystack needle [what]
    case "$1" in *"$2"*) fail "${3:-text} contains '$2': $1" ;; *) ;; esac
}

assert_le() { # a b [what]: a <= b
    [ "$1" -le "$2" ] || fail "${3:-value}: expected at most $2, got $1"
}

assert_ge() { # a b [what]: a >= b
    [ "$1" -ge "$2" ] || fail "${3:-value}: expected at least $2, got $1"
}

# poll_until CMD...: run CMD every 0.1 s until it succeeds (status 0); status 1 after $WAIT_TIMEOUT
# seconds, or at once when the agent that should be running has died.
poll_until() {
    local deadline=$(( $(date +%s) + WAIT_TIMEOUT ))
    while :; do
        if "$@" >/dev/null 2>&1; then return 0; fi
        if [ -n "$AGENT_PID" ] && ! agent_alive; then return 1; fi
        if [ "$(date +%s)" -ge "$deadline" ]; then return 1; fi
        sleep 0.1
    done
}

# wait_until CMD...: poll_until, failing the test on a timeout.
wait_until() {
    poll_until "$@" && return 0
    if [ -n "$AGENT_PID" ] && ! agent_alive; then
        fail "agent (pid $AGENT_PID) died while waiting for: $*"
    fi
    fail "timed out after ${WAIT_TIMEOUT}s waiting for: $*"
}

# ---- agents ---------------------------------------------------------------------------------------

# use_agent NAME: point $DIR, $DATA, $STATE, $STORE, $CONFIG at agent NAME's files under $T.
use_agent() {
    AGENT_NAME=$1
    DIR="$T/$1"
    DATA="$DIR/data"
    STATE="$DIR/state"
    STORE="$STATE/store.git"
    CONFIG="$DIR/syncagent.toml"
}

# init_agent NAME [DEBOUNCE_MS|default]: `syncagent init` for NAME; unless told "default", set a short
# debounce ([watch] debounce_ms, default 100) so that tests do not wait for nothing.
init_agent() {
    use_agent "$1"
    local debounce=${2:-100}
    mkdir -p "$DIR"
    "$SYNCAGENT" init --device "$1" --data "$DATA" --state "$STATE" --config "$CONFIG" >"$DIR/init.out" 2>&1 \
        || fail "syncagent init failed: $(cat "$DIR/init.out")"
    if [ "$debounce" != default ]; then
        set_watch debounce_ms "$debounce"
    fi
}

# set_watch KEY VALUE: set a key of the [watch] table in $CONFIG (as a user editing the file would).
set_watch() {
    local key=$1 value=$2 tmp="$CONFIG.edit"
    grep -q '^\[watch\]' "$CONFIG" || printf '\n[watch]\n' >>"$CONFIG"
    # drop an active setting of KEY inside [watch], then add the new one right under the header
    awk -v key="$key" -v value="$value" '
        /^\[/ { in_watch = ($0 == "[watch]") }
        in_watch && $0 ~ "^[ \t]*" key "[ \t]*=" { next }
        { print }
        $0 == "[watch]" { print key " = " value }
    ' "$CONFIG" >"$tmp"
    mv "$tmp" "$CONFIG"
}

agent_alive() {
    [ -n "$AGENT_PID" ] || return 1
    kill -0 "$AGENT_PID" 2>/dev/null || return 1
    # a zombie (exited, not yet reaped) is not alive
    local state
    state=$(awk '{print $3}' "/proc/$AGENT_PID/stat" 2>/dev/null) || return 1
    [ "$state" != Z ]
}

# run_agent [extra run args]: start `syncagent run` for the current agent in the background,
# stderr to $LOG, then wait until `status --json` reports it running with its pid.
run_agent() {
    RUN_SEQ=$((RUN_SEQ + 1))
    LOG="$DIR/run-$RUN_SEQ.log"
    # The agent starts with SIGINT at its default action, as from a terminal (a non-interactive
    # shell would otherwise start background jobs with SIGINT ignored).
    env --default-signal=INT "$SYNCAGENT" run --config "$CONFIG" --log-level "$LOG_LEVEL" "$@" \
        >"$DIR/run-$RUN_SEQ.out" 2>"$LOG" &
    AGENT_PID=$!
    STARTED_PIDS+=("$AGENT_PID")
    wait_until agent_reports_running
}

# start_agent NAME [DEBOUNCE_MS|default]: init (first time only) and run.
start_agent() {
    use_agent "$1"
    [ -f "$CONFIG" ] || init_agent "$@"
    run_agent
}

agent_reports_running() {
    local js
    js=$(status_json) || return 1
    [ "$(json_get running <<<"$js")" = true ] && [ "$(json_get pid <<<"$js")" = "$AGENT_PID" ]
}

# stop_agent [SIGNAL]: send SIGTERM (or SIGNAL), wait for the agent to exit, assert it exited 0.
stop_agent() {
    local sig=${1:-TERM} pid=$AGENT_PID rc=0
    [ -n "$pid" ] || fail "stop_agent: no agent running"
    kill -"$sig" "$pid" || fail "could not send SIG$sig to the agent (pid $pid): it is gone"
    local deadline=$(( $(date +%s) + WAIT_TIMEOUT * 2 ))
    while agent_alive; do
        [ "$(date +%s)" -lt "$deadline" ] || { kill -KILL "$pid"; fail "agent (pid $pid) did not exit within $((WAIT_TIMEOUT * 2))s of SIG$sig"; }
        sleep 0.1
    done
    wait "$pid" || rc=$?
    AGENT_PID=""
    [ "$rc" = 0 ] || fail "agent exited with status $rc after SIG$sig (expected 0)"
}

# kill9_agent: kill -9 the agent and reap it.
kill9_agent() {
    local pid=$AGENT_PID
    kill -KILL "$pid"
    wait "$pid" 2>/dev/null || true
    AGENT_PID=""
}

# ---- status ---------------------------------------------------------------------------------------

status_json() { "$SYNCAGENT" status --config "$CONFIG" --json; }

# json_get KEY [KEY...] < json: print the value at the key path (strings raw, null as "null",
# true/false, numbers, arrays/objects as compact JSON).
json_get() {
    if command -v python3 >/dev/null; then
        python3 -c '
import json, sys
v = json.load(sys.stdin)
for k in sys.argv[1:]:
    v = v[int(k)] if isinstance(v, list) else v[k]
if v is None: print("null")
elif isinstance(v, bool): print("true" if v else "false")
elif isinstance(v, str): print(v)
else: print(json.dumps(v, separators=(",", ":")) if isinstance(v, (list, dict)) else v)
' "$@"
    elif command -v jq >/dev/null; then
        jq -r 'getpath($ARGS.positional) | if . == null then "null" elif type == "object" or type == "array" then tojson else tostring end' --args "$@"
    else
        fail "json_get needs python3 or jq"
    fi
}

status_field() { status_json | json_get "$@"; }

pending_is() { [ "$(status_field pending)" = "$1" ]; }

# ---- the store ------------------------------------------------------------------------------------

g() { git --git-dir="$STORE" "$@"; }

head_oid() { g rev-parse -q --verify refs/heads/main 2>/dev/null || true; }

commit_count() {
    if g rev-parse -q --verify refs/heads/main >/dev/null 2>&1; then g rev-list --count main; else echo 0; fi
}

# head_files: the paths in HEAD, NUL-terminated, exactly as git stores them.
head_files() { g ls-tree -r -z --name-only HEAD; }

# head_list / data_list: the same as sorted lines (only for names without newlines).
head_list() {
    g rev-parse -q --verify HEAD >/dev/null 2>&1 || return 0
    g ls-tree -r --name-only HEAD | sort
}
data_list() { (cd "$DATA" && find . -mindepth 1 \( -type f -o -type l \) -printf '%P\n' | sort); }

head_has() { g cat-file -e "HEAD:$1" 2>/dev/null; }
head_lacks() { ! head_has "$1"; }

# head_blob_is PATH FILE: HEAD:PATH holds exactly FILE's bytes.
head_blob_is() { g cat-file blob "HEAD:$1" 2>/dev/null | cmp -s - "$2"; }

# head_file_matches PATH: HEAD:PATH holds exactly the bytes of $DATA/PATH.
head_file_matches() { head_blob_is "$1" "$DATA/$1"; }

# expected_tree: the tree plain git makes of the data directory (files, links, modes, bytes), with
# an empty `.syncagent-keep` in every empty directory (how the store keeps empty directories).
# Only meaningful when the data dir holds no names the agent ignores and no FIFOs.
expected_tree() {
    local idx="$T/expected.index"
    rm -f "$idx"
    GIT_INDEX_FILE="$idx" git --git-dir="$STORE" --work-tree="$DATA" -c core.excludesFile=/dev/null \
        add -A --force . >/dev/null 2>&1 || return 1
    (cd "$DATA" && find . -mindepth 1 -type d -empty -printf '100644 e69de29bb2d1d6434b8b29ae775ad8c2e48c5391\t%P/.syncagent-keep\0') \
        | GIT_INDEX_FILE="$idx" git --git-dir="$STORE" update-index --add -z --index-info || return 1
    GIT_INDEX_FILE="$idx" git --git-dir="$STORE" write-tree
}

# head_matches_data: HEAD's tree is exactly the data directory (same paths, modes and bytes).
head_matches_data() {
    local want have
    want=$(expected_tree) || return 1
    have=$(g rev-parse -q --verify 'HEAD^{tree}' 2>/dev/null) || return 1
    [ "$want" = "$have" ]
}

# assert_head_matches_data: wait until HEAD is the data directory; on timeout show the difference.
assert_head_matches_data() {
    poll_until head_matches_data && return 0
    log "paths only in data (<) / only in HEAD (>):"
    diff <(data_list) <(head_list) | grep '^[<>]' | head -n 20 >&2 || true
    local p n=0
    while IFS= read -r p; do
        if [ -f "$DATA/$p" ] && [ ! -L "$DATA/$p" ] && head_has "$p" && ! head_file_matches "$p"; then
            log "bytes differ: $p"; n=$((n + 1)); [ "$n" -lt 10 ] || break
        fi
    done < <(data_list)
    if [ -n "$AGENT_PID" ] && ! agent_alive; then fail "agent (pid $AGENT_PID) died; HEAD does not match the data directory"; fi
    fail "HEAD does not match the data directory after ${WAIT_TIMEOUT}s"
}

# all_committed_paths: every path in every commit on main, one per line (sorted, unique).
all_committed_paths() {
    local c
    for c in $(g rev-list main); do g ls-tree -r --name-only "$c"; done | sort -u
}

# ---- several devices (issue 3: sync between peers) -------------------------------------------------
#
# A test with two devices keeps each one's files under $T/<name>/ as above. `switch_to NAME` makes
# NAME the current agent ($DIR, $DATA, $STATE, $STORE, $CONFIG, and $AGENT_PID/$LOG when it runs), so
# every single-agent helper above works on it; `on NAME CMD...` runs CMD for NAME in a subshell and
# leaves the current agent alone.

declare -A DEVICE_PID=() DEVICE_LOG=()

store_of() { printf '%s/%s/state/store.git\n' "$T" "$1"; }
data_of() { printf '%s/%s/data\n' "$T" "$1"; }

# init_device NAME [DEBOUNCE_MS|default] [PEER=URL]...: `syncagent init` with a --peer for each
# PEER=URL, then a short debounce as init_agent does.
init_device() {
    local name=$1 debounce=${2:-100}
    shift; [ "$#" = 0 ] || shift
    use_agent "$name"
    mkdir -p "$DIR"
    local args=() p
    for p in "$@"; do args+=(--peer "$p"); done
    "$SYNCAGENT" init --device "$name" --data "$DATA" --state "$STATE" --config "$CONFIG" "${args[@]}" \
        >"$DIR/init.out" 2>&1 || fail "syncagent init ($name) failed: $(cat "$DIR/init.out")"
    [ "$debounce" = default ] || set_watch debounce_ms "$debounce"
}

# init_pair [DEBOUNCE_MS]: phone and watch, each the other's peer by the path of its store.git.
init_pair() {
    init_device watch "${1:-100}" "phone=$(store_of phone)"
    init_device phone "${1:-100}" "watch=$(store_of watch)"
}

# add_peer NAME URL: append a [[peer]] table to the current agent's config.
add_peer() {
    printf '\n[[peer]]\nname = "%s"\nurl = "%s"\n' "$1" "$2" >>"$CONFIG"
}

# set_peer PEER KEY VALUE: set KEY in the current config's [[peer]] table whose name is PEER (the
# table's name line must come before its other keys, as init and add_peer write it).
set_peer() {
    local peer=$1 key=$2 value=$3 tmp="$CONFIG.edit"
    awk -v peer="$peer" -v key="$key" -v value="$value" '
        /^\[/ { in_peer = ($0 == "[[peer]]"); mine = 0 }
        in_peer && $0 ~ "^[ \t]*name[ \t]*=" {
            n = $0; sub(/^[^=]*=[ \t]*"/, "", n); sub(/".*$/, "", n)
            if (n == peer) { mine = 1; print; print key " = " value; next }
        }
        mine && $0 ~ "^[ \t]*" key "[ \t]*=" { next }
        { print }
    ' "$CONFIG" >"$tmp"
    mv "$tmp" "$CONFIG"
    grep -q "^$key = $value\$" "$CONFIG" || fail "set_peer: no [[peer]] named $peer in $CONFIG"
}

# switch_to NAME: make NAME the current agent (its pid and log too, when it runs).
switch_to() {
    use_agent "$1"
    AGENT_PID=${DEVICE_PID[$1]:-}
    LOG=${DEVICE_LOG[$1]:-}
}

# start_device NAME: run NAME's agent (init_device first) and leave it the current agent.
start_device() {
    switch_to "$1"
    [ -z "$AGENT_PID" ] || fail "start_device $1: its agent already runs (pid $AGENT_PID)"
    run_agent
    DEVICE_PID[$1]=$AGENT_PID
    DEVICE_LOG[$1]=$LOG
}

# stop_device NAME [SIGNAL]: stop_agent for NAME (asserts exit status 0).
stop_device() {
    switch_to "$1"
    stop_agent "${2:-TERM}"
    DEVICE_PID[$1]=""
}

# kill9_device NAME: kill -9 NAME's agent.
kill9_device() {
    switch_to "$1"
    kill9_agent
    DEVICE_PID[$1]=""
}

# on NAME CMD...: run CMD with NAME as the current agent, in a subshell.
on() { ( switch_to "$1"; shift; "$@" ); }
# no_deletions_since DEVICE COMMIT WHAT: no commit on DEVICE's main since COMMIT deletes a path
# (a held deletion never left the device).
no_deletions_since() {
    local d
    d=$(on "$1" g log --diff-filter=D --name-only --format= "$2"..main) || fail "git log on $1's store failed ($3)"
    assert_eq "" "$d" "paths deleted by $1's commits ($3)"
}

# track_pid PID: a helper process (server, writer) the test started; stopped on exit like the agents.
track_pid() { STARTED_PIDS+=("$1"); }

# join_hub NAME URL: give NAME's config a [[peer]] "hub" at URL with hub = true, polled every second.
join_hub() {
    on "$1" add_peer hub "$2"
    on "$1" set_peer hub hub true
    on "$1" set_peer hub poll_seconds 1
}

# tree_of NAME: the tree of NAME's main (empty when there is none).
tree_of() { git --git-dir="$(store_of "$1")" rev-parse -q --verify 'refs/heads/main^{tree}' 2>/dev/null || true; }

main_of() { git --git-dir="$(store_of "$1")" rev-parse -q --verify refs/heads/main 2>/dev/null || true; }

# mains_equal [A B]: both stores' main exist and point at the same commit (default phone, watch).
mains_equal() {
    local a b
    a=$(main_of "${1:-phone}") b=$(main_of "${2:-watch}")
    [ -n "$a" ] && [ "$a" = "$b" ]
}

# data_dirs_diff A B: print how the two data directories differ in files and links (paths, types,
# modes, link targets, bytes; directories left empty do not count, as git does not store them).
data_dirs_diff() {
    python3 - "$(data_of "$1")" "$(data_of "$2")" "$1" "$2" <<'PY'
import os, stat, sys
def snap(root):
    out = {}
    for d, dirs, files in os.walk(root.encode()):
        if d != root.encode() and not dirs and not files:
            out[os.path.relpath(d, root.encode()) + b"/"] = ("empty dir",)  # empty directories sync too
        for n in files + [x for x in dirs if os.path.islink(os.path.join(d, x))]:
            p = os.path.join(d, n); st = os.lstat(p); rel = os.path.relpath(p, root.encode())
            if stat.S_ISLNK(st.st_mode): out[rel] = ("link", os.readlink(p))
            elif stat.S_ISREG(st.st_mode): out[rel] = ("file", bool(st.st_mode & 0o100), open(p, "rb").read())
            else: out[rel] = ("other",)
    return out
a, b = snap(sys.argv[1]), snap(sys.argv[2])
n = 0
for k in sorted(set(a) | set(b)):
    if a.get(k) != b.get(k):
        what = "only on " + sys.argv[3] if k not in b else "only on " + sys.argv[4] if k not in a else "differs"
        print("%s: %s" % (k.decode(errors="replace"), what)); n += 1
        if n >= 20: break
PY
}

# data_dirs_equal [A B]: data_dirs_diff finds nothing.
data_dirs_equal() { local d; d=$(data_dirs_diff "${1:-phone}" "${2:-watch}") && [ -z "$d" ]; }

# converged [A B]: equal mains, nothing pending on either, each HEAD is its data directory, and the
# data directories are equal.
converged() {
    local a=${1:-phone} b=${2:-watch}
    mains_equal "$a" "$b" && on "$a" pending_is 0 && on "$b" pending_is 0 \
        && on "$a" head_matches_data && on "$b" head_matches_data && data_dirs_equal "$a" "$b"
}

# wait_converged [A B]: wait until converged, showing what differs on a timeout.
wait_converged() {
    local a=${1:-phone} b=${2:-watch}
    poll_until converged "$a" "$b" && return 0
    log "$a main $(main_of "$a"), $b main $(main_of "$b")"
    data_dirs_diff "$a" "$b" >&2 || true
    local d
    for d in "$a" "$b"; do
        on "$d" head_matches_data || log "$d: HEAD is not its data directory"
        on "$d" pending_is 0 || log "$d: $(on "$d" status_field pending) changes pending"
        log "$d: peers $(on "$d" status_field peers 2>/dev/null)"
    done
    fail "$a and $b did not converge within ${WAIT_TIMEOUT}s"
}

# same_file NAME PATH FILE: NAME's data directory holds FILE's bytes at PATH (a regular file).
same_file() { local f; f="$(data_of "$1")/$2"; [ -f "$f" ] && [ ! -L "$f" ] && cmp -s "$f" "$3"; }

# absent NAME PATH: nothing at PATH in NAME's data directory.
absent() { local f; f="$(data_of "$1")/$2"; [ ! -e "$f" ] && [ ! -L "$f" ]; }

# put NAME PATH MTIME < bytes: write stdin at PATH in NAME's data directory atomically (a rename),
# with the modification time MTIME (seconds since the epoch), so that the commit's author time is known.
put() {
    local f tmp="$T/put.$$.$RANDOM"
    f="$(data_of "$1")/$2"
    cat >"$tmp"
    touch -d "@$3" "$tmp"
    mkdir -p "$(dirname "$f")"
    mv -f "$tmp" "$f"
}

# conflicts_json NAME [--all]: `syncagent conflicts --json` on NAME.
conflicts_json() { "$SYNCAGENT" conflicts --config "$T/$1/syncagent.toml" --json "${@:2}"; }

# conflict_field NAME ID|PATH KEY...: a field of NAME's record (open or resolved) with that id or path.
conflict_field() {
    local name=$1 which=$2; shift 2
    conflicts_json "$name" --all | python3 -c '
import json, sys
which, keys = sys.argv[1], sys.argv[2:]
rs = [r for r in json.load(sys.stdin) if r["id"] == which or r["path"] == which]
if len(rs) != 1: sys.exit("%d records match %s" % (len(rs), which))
v = rs[0]
for k in keys:
    if isinstance(v, list): v = v[int(k)]
    elif k in v: v = v[k]
    else: print("<no key %s>" % k); sys.exit(0)
print("null" if v is None else ("true" if v is True else "false" if v is False else v if isinstance(v, str) else json.dumps(v, sort_keys=True)))
' "$which" "$@"
}

# record_status_is NAME ID STATUS
record_status_is() { [ "$(conflict_field "$1" "$2" status 2>/dev/null)" = "$3" ]; }

# peer_field NAME KEY: a field of the first peer in NAME's `status --json`.
peer_field() { on "$1" status_field peers 0 "$2"; }

# free_port: a TCP port on 127.0.0.1 that nothing listens on right now.
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# peer_get NAME PEER KEY: a field of peer PEER in NAME's `status --json`.
peer_get() {
    on "$1" status_json | python3 -c '
import json, sys
ps = [p for p in json.load(sys.stdin)["peers"] if p["name"] == sys.argv[1]]
if len(ps) != 1: sys.exit("no peer %s in status" % sys.argv[1])
v = ps[0][sys.argv[2]]
print("null" if v is None else ("true" if v is True else "false" if v is False else v))
' "$2" "$3"
}

# peer_is NAME PEER KEY VALUE: peer_get prints VALUE.
peer_is() { [ "$(peer_get "$1" "$2" "$3" 2>/dev/null)" = "$4" ]; }

# start_blackhole: a TCP server on 127.0.0.1 that accepts connections and never says a word nor closes
# them (a black-holed network peer). Sets $BLACKHOLE_PORT and $BLACKHOLE_PID (tracked, stopped on
# exit); `blackhole_requests` prints how many connections sent a request (a fetch; a bare TCP probe
# connects and closes without a word).
start_blackhole() {
    command -v python3 >/dev/null || fail "a black-hole server needs python3"
    python3 - "$T/blackhole.port" "$T/blackhole.count" <<'PY' >"$T/blackhole.log" 2>&1 &
import os, select, socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(64)
with open(sys.argv[1] + ".tmp", "w") as f: f.write(str(s.getsockname()[1]))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
conns, asked, requests = [], set(), 0
while True:
    ready, _, _ = select.select([s] + conns, [], [])
    for r in ready:
        if r is s:
            conns.append(s.accept()[0])
            continue
        data = r.recv(4096)
        if not data:                      # the client closed: forget it
            conns.remove(r); asked.discard(r); r.close()
        elif r not in asked:              # a request: hold it forever without answering
            asked.add(r); requests += 1
            with open(sys.argv[2], "w") as f: f.write(str(requests))
PY
    BLACKHOLE_PID=$!
    track_pid "$BLACKHOLE_PID"
    wait_until test -s "$T/blackhole.port"
    BLACKHOLE_PORT=$(cat "$T/blackhole.port")
}
blackhole_requests() { cat "$T/blackhole.count" 2>/dev/null || echo 0; }

# sshd_answers DIR: the sshd start_sshd started with DIR lets DIR/id_device in (use with wait_until).
sshd_answers() {
    ssh -p "$SSHD_PORT" -i "$1/id_device" -o BatchMode=yes -o UserKnownHostsFile="$1/known_hosts" "$(id -un)@127.0.0.1" true 2>/dev/null
}

# start_sshd DIR [CONFIG-LINE]...: an sshd on 127.0.0.1 for a test, with its host key DIR/host_key,
# one authorized key whose private half is DIR/id_device, and DIR/known_hosts that knows the host;
# sets SSHD_PORT. Extra sshd_config lines come last.
start_sshd() {
    local dir=$1 sshd
    sshd=$(command -v sshd || echo /usr/sbin/sshd)
    [ -x "$sshd" ] || fail "sshd is not installed (make installs openssh-server)"
    mkdir -p "$dir" /run/sshd
    ssh-keygen -q -t ed25519 -N '' -f "$dir/host_key"
    ssh-keygen -q -t ed25519 -N '' -f "$dir/id_device"
    cp "$dir/id_device.pub" "$dir/authorized_keys"
    chmod 600 "$dir"/id_* "$dir/authorized_keys"
    SSHD_PORT=$(free_port)
    cat >"$dir/sshd_config" <<CONF
Port $SSHD_PORT
ListenAddress 127.0.0.1
HostKey $dir/host_key
AuthorizedKeysFile $dir/authorized_keys
StrictModes no
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
PermitRootLogin prohibit-password
PidFile $dir/sshd.pid
CONF
    shift
    local line
    for line in "$@"; do printf '%s\n' "$line" >>"$dir/sshd_config"; done
    run_sshd "$dir"
    printf '[127.0.0.1]:%s %s\n' "$SSHD_PORT" "$(cut -d' ' -f1-2 "$dir/host_key.pub")" >"$dir/known_hosts"
}

# run_sshd DIR: (re)starts the sshd start_sshd set up in DIR; SSHD_PID_OF_DIR names it.
run_sshd() {
    local sshd
    sshd=$(command -v sshd || echo /usr/sbin/sshd)
    "$sshd" -D -e -f "$1/sshd_config" >>"$1/sshd.log" 2>&1 &
    track_pid $!
    echo $! >"$1/sshd.listener"
}

# kill_tree PID: PID and every process below it, children first.
kill_tree() {
    local child
    for child in $(ps -o pid= --ppid "$1" 2>/dev/null); do kill_tree "$child"; done
    kill -KILL "$1" 2>/dev/null || true
}

# stop_sshd DIR: the server in DIR goes away, with every session it serves (the host is down).
# The listener is paused first: a client that reconnects while the sessions die must not get a new one.
stop_sshd() {
    local listener
    listener=$(cat "$1/sshd.listener")
    kill -STOP "$listener"
    kill_tree "$listener"
}
