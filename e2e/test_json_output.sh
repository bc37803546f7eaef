#!/usr/bin/env bash
# Issue 46.4: `--json` on every command a script drives: each prints one JSON value on stdout that
# parses and holds the documented keys, with `error` and `errorCode` (SyncError's codes) when it
# failed, and exits non-zero then. (`status`, `conflicts`, `held`, `history` had it already; `events`
# prints JSON lines.)
source "$(dirname "$0")/lib.sh"

keys() { # JSON KEY...: every KEY is in the JSON object (or in the first element of an array)
    python3 -c '
import json, sys
v = json.loads(sys.argv[1])
if isinstance(v, list):
    v = v[0] if v else {}
missing = [k for k in sys.argv[2:] if k not in v]
if missing: sys.exit("missing %s in %s" % (missing, sys.argv[1]))
' "$@" || fail "keys $*"
}

use_agent watch
mkdir -p "$DIR"
out=$("$SYNCAGENT" init --device watch --data "$DATA" --state "$STATE" --config "$CONFIG" --peer "phone=$(store_of phone)" --json) \
    || fail "init --json failed: $out"
keys "$out" config device data state store peers
assert_eq '["phone"]' "$(json_get peers <<<"$out")" "init --json peers"
init_device phone 50 "watch=$(store_of watch)"
start_device phone
start_device watch
printf 'one\n' >"$(data_of phone)/a.txt"
wait_until test -f "$(data_of watch)/a.txt"

switch_to phone
out=$("$SYNCAGENT" sync --json --config "$CONFIG") || fail "sync --json failed: $out"
keys "$out" peer
assert_eq watch "$(json_get 0 peer <<<"$out")" "sync --json peer"
rc=0; out=$("$SYNCAGENT" sync --peer nosuch --json --config "$CONFIG") || rc=$?
[ "$rc" = 1 ] || fail "sync --json of an unknown peer exited $rc"
keys "$out" peer error errorCode
assert_eq bad-config "$(json_get 0 errorCode <<<"$out")" "sync --json errorCode"

rc=0; out=$("$SYNCAGENT" send nothing-held.txt --json --config "$CONFIG") || rc=$?
keys "$out" message
rc=0; out=$("$SYNCAGENT" revert --json --config "$CONFIG") || rc=$?
keys "$out" message
printf 'two\n' >"$(data_of phone)/a.txt"
wait_until head_file_matches a.txt
first=$(g rev-list --reverse main | sed -n 1p)  # sed reads it all: no SIGPIPE under pipefail
out=$("$SYNCAGENT" restore a.txt --at "$first" --json --config "$CONFIG") || fail "restore --json failed: $out"
keys "$out" message
out=$("$SYNCAGENT" restore a.txt --at "$first" --to "$T/a-old.txt" --json --config "$CONFIG") || fail "restore --to --json failed: $out"
keys "$out" path at to files
assert_eq 1 "$(json_get files <<<"$out")" "restore --to --json files"
out=$("$SYNCAGENT" resolve --all --keep newest --json --config "$CONFIG") || fail "resolve --json failed: $out"
assert_eq '[]' "$out" "resolve --all --json with nothing open"
out=$("$SYNCAGENT" pause --json --config "$CONFIG") || fail "pause --json failed: $out"
keys "$out" paused message
out=$("$SYNCAGENT" resume --json --config "$CONFIG") || fail "resume --json failed: $out"
keys "$out" paused message
for cmd in "status --json" "conflicts --json" "held --json" "history a.txt --json"; do
    out=$("$SYNCAGENT" $cmd --config "$CONFIG") || fail "$cmd failed: $out"
    python3 -c 'import json,sys; json.loads(sys.argv[1])' "$out" || fail "$cmd: not JSON: $out"
done
stop_device phone
stop_device watch
log "ok"
