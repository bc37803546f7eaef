#!/usr/bin/env bash
# A new user's first hour, the parts README's quick start (test_readme) and the ssh hub without an
# ssh-agent (test_ssh_keys) do not cover: every --help fits 80 columns with examples that never
# wrap mid-command, a mistyped subcommand gets a suggestion, `init --hub` and the template, and the
# messages a first hour meets, each saying what is wrong and what to do:
# --state inside --data, a peer that is this device's own store, a peer url that names a data
# directory, `restore` of a path that never existed, `resolve --keep` with a typo, a resolved
# record's "data holds", `status` of a stopped agent (as of when) with devices seen through a hub,
# and the demo's output when it is not a terminal.
source "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/.." && pwd)

# ---- help ------------------------------------------------------------------------------------------------
for c in "" run init status sync send held revert events conflicts show resolve history restore; do
    # shellcheck disable=SC2086
    out=$(COLUMNS=80 "$SYNCAGENT" $c --help 2>&1) || fail "syncagent $c --help failed: $out"
    wide=$(printf '%s\n' "$out" | awk 'length > 80')
    [ -z "$wide" ] || fail "syncagent $c --help has lines over 80 columns: $wide"
    # An example command that goes on to the next line says so with a trailing backslash.
    printf '%s\n' "$out" | awk -v c="syncagent $c" '
        # After an example line that does not end in a backslash comes a blank line or another example.
        prev ~ /^ *(Example: )?syncagent / && prev !~ /\\$/ && $0 != "" && $0 !~ /^ *(Example: )?syncagent / { print c ": an example wraps mid-command: " prev; bad = 1 }
        { prev = $0 } END { exit bad }' || fail "syncagent $c --help: an example wraps mid-command"
    if [ -n "$c" ]; then
        n=$(printf '%s\n' "$out" | grep -c -- '--version' || true)
        want=0; [ "$c" = show ] && want=3  # its example, its usage and its option
        assert_eq "$want" "$n" "--version lines in syncagent $c --help"
    fi
done
assert_eq "syncagent" "$("$SYNCAGENT" --version | cut -d' ' -f1)" "syncagent --version"
rc=0; out=$("$SYNCAGENT" statu 2>&1) || rc=$?
assert_eq 64 "$rc" "exit status of a mistyped subcommand"
assert_contains "$out" "did you mean 'status'?" "a mistyped subcommand's suggestion"
log "help: 80 columns, examples whole, --version only where it belongs, typos suggested"

# ---- init --------------------------------------------------------------------------------------------------
"$SYNCAGENT" init --device laptop --data "$T/laptop/data" --state "$T/laptop/state" --config "$T/laptop.toml" \
    --hub family=ssh://me@nas.example/srv/family.git >"$T/init.out" 2>&1 || fail "init --hub failed: $(cat "$T/init.out")"
grep -q '^hub = true$' "$T/laptop.toml" || fail "init --hub wrote no 'hub = true': $(cat "$T/laptop.toml")"
grep -q '^# \[safety\]$' "$T/laptop.toml" || fail "init's file documents no [safety] table"
"$SYNCAGENT" status --config "$T/laptop.toml" >/dev/null 2>&1 || fail "the file init --hub wrote does not load"
rc=0; out=$("$SYNCAGENT" init --device inner --data "$T/inner" --state "$T/inner/state" --config "$T/inner.toml" 2>&1) || rc=$?
[ "$rc" != 0 ] || fail "init accepted --state inside --data"
assert_contains "$out" "--state" "the option at fault"
assert_contains "$out" "Nothing was written" "init says nothing was written"
assert_not_contains "$out" "inner.toml:" "no line of a file init never wrote"
[ ! -e "$T/inner.toml" ] || fail "init wrote $T/inner.toml though it refused"
rc=0; out=$("$SYNCAGENT" init --device selfie --data "$T/selfie/data" --state "$T/selfie/state" --config "$T/selfie.toml" \
    --peer "me=$T/selfie/state/store.git" 2>&1) || rc=$?
[ "$rc" != 0 ] || fail "init accepted a peer that is this device's own store"
assert_contains "$out" "own store" "a peer that is this device's own store"
log "init: --hub, [safety], --state inside --data and a peer that is its own store"

# ---- a pair, a conflict, resolved ---------------------------------------------------------------------------
init_pair default
printf 'phone\n' >"$(data_of phone)/a.txt"
printf 'watch!\n' >"$(data_of watch)/a.txt"
"$SYNCAGENT" sync --config "$T/phone/syncagent.toml" >/dev/null 2>&1 || true  # the watch has nothing yet
"$SYNCAGENT" sync --config "$T/watch/syncagent.toml" >"$T/sync.out" 2>&1 || fail "watch sync: $(cat "$T/sync.out")"
id=$(conflict_field watch a.txt id)
[ -n "$id" ] || fail "no conflict record for a.txt on the watch"
rc=0; out=$("$SYNCAGENT" resolve a.txt --keep newset --config "$T/watch/syncagent.toml" 2>&1) || rc=$?
[ "$rc" != 0 ] || fail "resolve --keep newset succeeded"
assert_contains "$out" "did you mean 'newest'?" "resolve --keep with a typo"
assert_contains "$out" "newest, both" "resolve lists newest and both"
"$SYNCAGENT" resolve a.txt --keep phone --config "$T/watch/syncagent.toml" >"$T/resolve.out" 2>&1 || fail "resolve --keep phone: $(cat "$T/resolve.out")"
out=$("$SYNCAGENT" conflicts --all --config "$T/watch/syncagent.toml")
assert_contains "$out" "data holds: phone" "a record resolved with --keep phone"
log "resolve: a typo is named, the resolved record holds the kept device"

# ---- restore of a path that never existed --------------------------------------------------------------------
rc=0; out=$("$SYNCAGENT" restore no/such/file.txt --config "$T/watch/syncagent.toml" 2>&1) || rc=$?
[ "$rc" != 0 ] || fail "restore of a path that never existed succeeded"
assert_contains "$out" "never committed" "restore of a path that never existed"
assert_eq 1 "$(printf '%s' "$out" | grep -o 'no/such/file.txt' | wc -l)" "times the path is named"

# ---- a peer url that names a data directory ------------------------------------------------------------------
init_device tablet default "phone=$(data_of phone)"
rc=0; out=$("$SYNCAGENT" sync --config "$T/tablet/syncagent.toml" 2>&1) || rc=$?
[ "$rc" != 0 ] || fail "sync from a peer url that is a data directory succeeded"
assert_contains "$out" "is a directory but not a store" "a peer url that names a data directory"
assert_contains "$out" "<its state>/store.git" "what a peer url must be"
assert_not_contains "$out" $'\n          ' "a one-line error"
log "messages: restore, a data directory as a peer url"

# ---- status of stopped agents through a hub -------------------------------------------------------------------
git init -q --bare "$T/hub.git"
for d in desk car; do
    init_device "$d" default
    join_hub "$d" "$T/hub.git"
    printf '%s\n' "$d" >"$(data_of "$d")/$d.txt"
done
"$SYNCAGENT" sync --config "$T/desk/syncagent.toml" >/dev/null 2>&1 || fail "desk sync through the hub"
"$SYNCAGENT" sync --config "$T/car/syncagent.toml" >/dev/null 2>&1 || fail "car sync through the hub"
"$SYNCAGENT" sync --config "$T/desk/syncagent.toml" >/dev/null 2>&1 || fail "desk sync through the hub"
out=$("$SYNCAGENT" status --config "$T/desk/syncagent.toml")
assert_contains "$out" "car (through hub hub)" "a device seen through the hub"
assert_contains "$out" "peers as of 20" "a stopped agent's peer figures say when they are from"
log "status: devices through the hub, figures as of when"

# ---- the demo, piped -----------------------------------------------------------------------------------------
SYNCAGENT=$SYNCAGENT bash "$root/Samples/demo.sh" >"$T/demo.out" 2>&1 || fail "the demo failed: $(tail -20 "$T/demo.out")"
if grep -q $'\033' "$T/demo.out"; then fail "the demo writes escape codes into a pipe"; fi
log "ok"
