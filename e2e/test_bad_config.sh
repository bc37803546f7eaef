#!/usr/bin/env bash
# A bad config is refused before anything starts: the message names the file, the line and the key
# (an unknown key with the nearest valid one), the exit status is non-zero, and nothing runs or is
# created (no state directory, no commit of what is in the data directory).
source "$(dirname "$0")/lib.sh"

mkdir -p "$T/data"
printf 'must not be committed\n' >"$T/data/file.txt"

# expect_refused NAME LINE KEY [MORE]: a config NAME.toml (from stdin) makes `run` and `status`
# exit non-zero with "<file>:<line>:" and KEY (and MORE) in the message, before anything starts.
# KEY may be "" for TOML syntax errors, where the line is what matters.
expect_refused() {
    local name=$1 line=$2 key=$3 more=${4:-} conf="$T/$1.toml" rc msg
    cat >"$conf"
    rm -rf "$T/state-$name"
    rc=0
    timeout 30 "$SYNCAGENT" run --config "$conf" >"$T/$name.out" 2>"$T/$name.err" || rc=$?
    msg=$(cat "$T/$name.out" "$T/$name.err")
    [ "$rc" != 124 ] || fail "$name: run with a bad config was still running after 30 s"
    [ "$rc" != 0 ] || fail "$name: run with a bad config exited 0: $msg"
    log "$name: exit $rc: $msg"
    assert_contains "$msg" "$conf:$line:" "$name: the message"
    [ -z "$key" ] || assert_contains "$msg" "$key" "$name: the message"
    # MORE must be there besides KEY (a suggestion "debounce_ms" for "debounce_msec" is not the key itself)
    [ -z "$more" ] || assert_contains "${msg//$key/}" "$more" "$name: the message besides '$key'"
    [ ! -e "$T/state-$name" ] || fail "$name: run with a bad config created its state directory"
    [ ! -e "$T/data/.git" ] || fail "$name: a .git appeared in the data directory"

    rc=0
    timeout 30 "$SYNCAGENT" status --config "$conf" --json >"$T/$name.status" 2>&1 || rc=$?
    [ "$rc" != 0 ] || fail "$name: status with a bad config exited 0: $(cat "$T/$name.status")"
    assert_contains "$(cat "$T/$name.status")" "$conf:$line:" "$name: the status message"
}

# a wrong type (line 6)
expect_refused wrong-type 6 debounce_ms <<EOF2
device = "phone"
data = "$T/data"
state = "$T/state-wrong-type"

[watch]
debounce_ms = "fast"
EOF2

# an unknown key in [watch], with the nearest valid key suggested (line 5)
expect_refused unknown-watch-key 5 debounce_msec debounce_ms <<EOF2
device = "phone"
data = "$T/data"
state = "$T/state-unknown-watch-key"
[watch]
debounce_msec = 100
EOF2

# an unknown top-level key (line 2), suggesting "device"
expect_refused unknown-top-key 2 devcie device <<EOF2
# a comment on line 1
devcie = "phone"
data = "$T/data"
state = "$T/state-unknown-top-key"
EOF2

# TOML syntax errors: an unterminated string on line 3, a key without "=" on line 5, a duplicate
# key on line 4
expect_refused syntax-string 3 "" <<EOF2
data = "$T/data"
state = "$T/state-syntax-string"
device = "phone
EOF2
expect_refused syntax-no-equals 5 "" <<EOF2
device = "phone"
data = "$T/data"
state = "$T/state-syntax-no-equals"
[watch]
debounce_ms 100
EOF2
expect_refused syntax-duplicate 4 "" <<EOF2
device = "phone"
data = "$T/data"
state = "$T/state-syntax-duplicate"
device = "watch"
EOF2

# a value out of its range (line 7)
expect_refused out-of-range 7 max_delay_ms <<EOF2
device = "phone"
data = "$T/data"
state = "$T/state-out-of-range"

[watch]
debounce_ms = 500
max_delay_ms = 100
EOF2

# an invalid device name (line 1)
expect_refused bad-device 1 device <<EOF2
device = "my phone!"
data = "$T/data"
state = "$T/state-bad-device"
EOF2

# a [[peer]] without a url (line 5, where the table starts), peers parse even before sync exists
expect_refused peer-without-url 5 url <<EOF2
device = "phone"
data = "$T/data"
state = "$T/state-peer-without-url"

[[peer]]
name = "watch"
EOF2

# [[rule]] and [[hook]] (issue 8): a bad sync value, max_bytes without auto, a hook for an event type
# that does not exist, a mode nobody knows
expect_refused rule-sync 7 rule.sync "auto, manual, never" <<EOF2
device = "phone"
data = "$T/data"
state = "$T/state-rule-sync"

[[rule]]
path = "drafts/**"
sync = "sometimes"
EOF2
expect_refused rule-max-bytes 8 rule.max_bytes 'only used with sync' <<EOF2
device = "phone"
data = "$T/data"
state = "$T/state-rule-max-bytes"

[[rule]]
path = "drafts/**"
sync = "manual"
max_bytes = 10
EOF2
expect_refused hook-event 6 hook.events "conflict-opened" <<EOF2
device = "phone"
data = "$T/data"
state = "$T/state-hook-event"

[[hook]]
events = ["recieved"]
command = ["true"]
EOF2
expect_refused mode 4 mode "receive-only" <<EOF2
device = "phone"
data = "$T/data"
state = "$T/state-mode"
mode = "read-only"
EOF2

# what is legal but surely a mistake is a warning with file:line:key, and the agent still starts
cat >"$T/warn.toml" <<EOF2
device = "phone"
data = "$T/data"
state = "$T/state-warn"

[[peer]]
name = "watch"
url = "$T/nowhere.git"

[[rule]]
path = "/photos/**"
devices = ["phone", "tablte"]
EOF2
"$SYNCAGENT" status --config "$T/warn.toml" >"$T/warn.out" 2>"$T/warn.err" || true
assert_contains "$(cat "$T/warn.err")" "warning: $T/warn.toml:10: rule.path: '/photos/**' can never match"
assert_contains "$(cat "$T/warn.err")" "warning: $T/warn.toml:11: rule.devices: 'tablte' is neither this device (phone) nor one of its peers (watch)"

# a config that init wrote and a user then broke: refused, and nothing of the data is committed
init_agent edited
printf 'must wait for a good config\n' >"$DATA/waiting.txt"
set_watch debounse_ms 100
line=$(grep -n '^debounse_ms' "$CONFIG" | cut -d: -f1)
rc=0
timeout 30 "$SYNCAGENT" run --config "$CONFIG" >"$T/edited.out" 2>&1 || rc=$?
msg=$(cat "$T/edited.out")
log "edited: exit $rc: $msg"
[ "$rc" != 124 ] && [ "$rc" != 0 ] || fail "run with a broken config exited $rc: $msg"
assert_contains "$msg" "$CONFIG:$line:" "the message for the edited config"
assert_contains "${msg//debounse_ms/}" debounce_ms "the suggestion for debounse_ms"
assert_eq "" "$(head_oid)" "main after a refused run"
sed -i '/^debounse_ms/d' "$CONFIG"   # status needs a good config too
assert_eq false "$(status_field running)" "running after a refused run"

# the same config, fixed, runs: the refusals above were about the config, not the setup
cat >"$T/good.toml" <<EOF2
device = "phone"
data = "$T/data"
state = "$T/state-good"
[watch]
debounce_ms = 100
EOF2
use_agent good
CONFIG="$T/good.toml"; DATA="$T/data"; STATE="$T/state-good"; STORE="$STATE/store.git"; DIR="$T/good"
mkdir -p "$DIR"
run_agent
wait_until head_file_matches file.txt
stop_agent
