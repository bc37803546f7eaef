#!/usr/bin/env bash
# Issue 8, events: `syncagent events` prints JSON lines with a sequence number that grows by one and
# survives restarts; `committed` on the device that wrote, `received` (with the peer and the paths)
# on the one that got it; `events --follow` on the watch sees a change made on the phone while it
# streams; `--since` across a restart continues the sequence without duplicates; conflict-opened and
# conflict-resolved on both devices; peer-unreachable for a peer nobody answers; started/stopped.
# A [[hook]] that sleeps past its timeout gets the event on stdin, is stopped and logged, and never
# holds up commits.
source "$(dirname "$0")/lib.sh"

init_pair 50
port=$(free_port)
switch_to phone
add_peer ghost "git://127.0.0.1:$port/nobody.git"
cat >>"$CONFIG" <<EOF

[[hook]]
events = ["committed"]
command = ["sh", "-c", "cat >>'$T/hook.in'; sleep 30"]
timeout_seconds = 1
EOF
start_device phone
start_device watch
P=$(data_of phone) W=$(data_of watch)
events_of() { "$SYNCAGENT" events --config "$T/$1/syncagent.toml" "${@:2}"; }
# has_event NAME FILTER: NAME's events include one for which the python expression FILTER (over e) holds
has_event() {
    events_of "$1" | python3 -c '
import json, sys
f = sys.argv[1]
sys.exit(0 if any(eval(f, {}, {"e": json.loads(l)}) for l in sys.stdin) else 1)' "$2"
}
# seqs_ok NAME: NAME's sequence numbers are 1, 2, 3, ... with none missing or repeated
seqs_ok() {
    events_of "$1" | python3 -c '
import json, sys
s = [json.loads(l)["seq"] for l in sys.stdin]
if s != list(range(1, len(s) + 1)): sys.exit("sequence numbers are not 1..%d: %s" % (len(s), s[-20:]))'
}

log "committed and received"
"$SYNCAGENT" events --config "$T/watch/syncagent.toml" --follow >"$T/follow.out" 2>"$T/follow.err" &
FOLLOW=$!
track_pid $FOLLOW
echo "hello" >"$T/a"; cp "$T/a" "$P/a.txt"
wait_until same_file watch a.txt "$T/a"
wait_until has_event phone 'e["type"] == "committed" and "a.txt" in e["paths"] and e["count"] >= 1 and len(e["commit"]) == 40'
wait_until has_event watch 'e["type"] == "received" and e["peer"] == "phone" and "a.txt" in e["paths"]'
has_event phone 'e["type"] == "started"' || fail "no started event on the phone"
log "events --follow streams the watch's events as they happen"
wait_until grep -q '"type":"received".*"a.txt"' "$T/follow.out"
echo "second" >"$T/b"; cp "$T/b" "$P/b.txt"
wait_until grep -q '"type":"received".*"b.txt"' "$T/follow.out"
kill -0 $FOLLOW 2>/dev/null || fail "events --follow exited: $(cat "$T/follow.err")"

log "peer-unreachable for a peer nobody answers"
wait_until has_event phone 'e["type"] == "peer-unreachable" and e["peer"] == "ghost" and e["error"]'

log "the hook got its event, was stopped at its timeout, and commits went on"
wait_until grep -q '"type":"committed"' "$T/hook.in"
for i in 1 2 3; do
    echo "during the hook $i" >"$T/h$i"; cp "$T/h$i" "$P/h$i.txt"
done
wait_until same_file watch h3.txt "$T/h3"
wait_until grep -q "did not finish within 1 s" "${DEVICE_LOG[phone]}"
on phone agent_alive || fail "the phone's agent died"

log "a conflict: opened and resolved on both devices"
stop_device watch
now=$(date +%s)
printf 'phone version\n' | put phone c.txt $((now - 2))
on phone wait_until head_has c.txt
printf 'watch version\n' | put watch c.txt $((now - 1))
start_device watch
wait_until has_event watch 'e["type"] == "conflict-opened" and e["path"] == "c.txt"'
wait_until has_event phone 'e["type"] == "conflict-opened" and e["path"] == "c.txt"'
log "events --follow went on through the watch's restart (woken by the new agent's socket)"
wait_until grep -q '"type":"conflict-opened".*"c.txt"' "$T/follow.out"
kill -0 $FOLLOW 2>/dev/null || fail "events --follow exited across the restart: $(cat "$T/follow.err")"
on phone "$SYNCAGENT" resolve --config "$T/phone/syncagent.toml" c.txt --keep phone >/dev/null
wait_until has_event phone 'e["type"] == "conflict-resolved" and e["path"] == "c.txt" and e["by"] == "phone"'
wait_until has_event watch 'e["type"] == "conflict-resolved" and e["path"] == "c.txt" and e["by"] == "phone"'

log "the sequence survives a restart, with no duplicates"
last=$(events_of watch | tail -n 1 | json_get seq)
stop_device watch
has_event watch 'e["type"] == "stopped"' || fail "no stopped event after the watch stopped"
echo "while the watch was down" >"$T/c"; cp "$T/c" "$P/down.txt"
on phone wait_until head_has down.txt
start_device watch
wait_until same_file watch down.txt "$T/c"
wait_until has_event watch 'e["type"] == "received" and "down.txt" in e["paths"]'
after=$(events_of watch --since "$last")
first=$(head -n 1 <<<"$after" | json_get seq)
assert_eq $((last + 1)) "$first" "first sequence number after --since $last"
assert_contains "$after" '"type":"started"'
seqs_ok watch
seqs_ok phone
log "events --follow goes on across the restart"
wait_until grep -q '"type":"received".*"down.txt"' "$T/follow.out"
python3 - "$T/follow.out" <<'PY' || fail "events --follow repeated or skipped sequence numbers"
import json, sys
s = [json.loads(l)["seq"] for l in open(sys.argv[1])]
sys.exit(0 if s == list(range(s[0], s[0] + len(s))) else "follow: %s" % s)
PY
log "--since in the future prints nothing; the stopped agent's log is readable"
assert_eq "" "$(events_of watch --since 999999)" "events after the last one"
kill $FOLLOW
