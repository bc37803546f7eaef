#!/usr/bin/env bash
# The user story of issue 2, on the default watch settings: init writes a commented config and the
# store; run commits a new file; status (text and --json) shows running, pid, head and pending; the
# data directory never gets a .git; SIGTERM exits 0; status while stopped says so and counts what
# changed; changes made while stopped are committed at the next start.
source "$(dirname "$0")/lib.sh"

use_agent phone
mkdir -p "$DIR"

# --- init -------------------------------------------------------------------------------------------
out=$("$SYNCAGENT" init --device phone --data "$DATA" --state "$STATE" --config "$CONFIG" 2>&1) \
    || fail "init failed: $out"
[ -f "$CONFIG" ] || fail "init did not write $CONFIG"
grep -q '^#' "$CONFIG" || fail "the config init wrote has no comments"
grep -Eq '^device *= *"phone"' "$CONFIG" || fail "the config does not set device = \"phone\": $(cat "$CONFIG")"
grep -Eq '^# *debounce_ms' "$CONFIG" || fail "the config does not document debounce_ms"
[ -d "$DATA" ] || fail "init did not create the data directory"
git --git-dir="$STORE" rev-parse --git-dir >/dev/null 2>&1 || fail "init did not create a git store at $STORE"
assert_eq refs/heads/main "$(g symbolic-ref HEAD)" "the store's HEAD"
assert_eq "" "$(head_oid)" "main right after init"
[ ! -e "$DATA/.git" ] || fail "init made $DATA/.git"

# init refuses to overwrite the config
cp "$CONFIG" "$T/config.before"
if out=$("$SYNCAGENT" init --device other --data "$T/other" --state "$T/other-state" --config "$CONFIG" 2>&1); then
    fail "a second init over an existing config succeeded: $out"
fi
cmp -s "$CONFIG" "$T/config.before" || fail "a refused init changed $CONFIG"

# --- status before the first run ---------------------------------------------------------------------
js=$(status_json) || fail "status --json failed before the first run"
assert_eq false "$(json_get running <<<"$js")" "running before the first run"
assert_eq null "$(json_get head <<<"$js")" "head before the first run"
assert_eq phone "$(json_get device <<<"$js")" "device"

# --- run (default debounce) --------------------------------------------------------------------------
run_agent
js=$(status_json)
assert_eq true "$(json_get running <<<"$js")" "running"
assert_eq "$AGENT_PID" "$(json_get pid <<<"$js")" "pid"
assert_eq "$STORE" "$(json_get store <<<"$js")" "store"
assert_eq "$DATA" "$(json_get data <<<"$js")" "data"
assert_eq "[]" "$(json_get peers <<<"$js")" "peers"
assert_eq 0 "$(json_get conflicts open <<<"$js")" "open conflicts"
# nothing in the data dir yet: an empty batch makes no commit
assert_eq null "$(json_get head <<<"$js")" "head with an empty data dir"

printf 'hello\n' >"$DATA/hello.txt"
wait_until head_file_matches hello.txt
assert_eq 1 "$(commit_count)" "commits after the first file"
assert_eq phone "$(g log -1 --format=%an main)" "author of the commit"
msg=$(g log -1 --format=%B main)
assert_contains "$msg" "phone: 1 added" "commit message"
assert_contains "$msg" "added: hello.txt" "commit message"

wait_until pending_is 0
js=$(status_json)
head=$(head_oid)
assert_eq "$head" "$(json_get head <<<"$js")" "status head"
assert_eq 0 "$(json_get pending <<<"$js")" "status pending"

text=$("$SYNCAGENT" status --config "$CONFIG") || fail "status (text) failed"
assert_contains "$text" "running" "status text"
assert_contains "$text" "$AGENT_PID" "status text"
assert_contains "$text" "$head" "status text"
assert_contains "$text" "pending" "status text"

# a modification and a nested file
printf 'hello again\n' >>"$DATA/hello.txt"
mkdir -p "$DATA/notes"
printf 'todo\n' >"$DATA/notes/today.txt"
assert_head_matches_data
[ ! -e "$DATA/.git" ] || fail "the data directory got a .git"
assert_eq "" "$(find "$DATA" -name .git)" ".git anywhere under the data directory"

# --- stop, change things, status while stopped, start again --------------------------------------------
stop_agent TERM
head=$(head_oid)

printf 'written while stopped\n' >"$DATA/offline.txt"
printf 'changed while stopped\n' >"$DATA/notes/today.txt"
js=$(status_json) || fail "status --json failed while stopped"
assert_eq false "$(json_get running <<<"$js")" "running while stopped"
assert_eq null "$(json_get pid <<<"$js")" "pid while stopped"
assert_eq "$head" "$(json_get head <<<"$js")" "head while stopped"
assert_eq 2 "$(json_get pending <<<"$js")" "pending while stopped (one added, one modified)"
text=$("$SYNCAGENT" status --config "$CONFIG") || fail "status (text) failed while stopped"
assert_contains "$text" "stopped" "status text while stopped"
assert_eq "$head" "$(head_oid)" "main while stopped"

run_agent
assert_head_matches_data
msg=$(g log -1 --format=%B main)
assert_contains "$msg" "added: offline.txt" "start-up commit message"
assert_contains "$msg" "modified: notes/today.txt" "start-up commit message"
wait_until pending_is 0
assert_eq "$(head_oid)" "$(status_field head)" "status head after start-up commit"

# an idle agent makes no new commits: a restart with nothing changed commits nothing
n=$(commit_count)
stop_agent INT
run_agent
printf 'marker\n' >"$DATA/marker.txt"
wait_until head_has marker.txt
assert_eq $((n + 1)) "$(commit_count)" "commits after a restart with nothing changed and one new file"
stop_agent TERM
[ ! -e "$DATA/.git" ] || fail "the data directory got a .git"
