#!/usr/bin/env bash
# README's quick start, run as written by a new user: the ```sh block under "## Quick start",
# unchanged, by bash in a fresh $HOME whose PATH does not hold ~/.local/bin, from the top of a
# checkout. It must build, install, init, run, commit and show the commit with plain git; then the
# sample configs do what their headers say.
source "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
fresh="$T/fresh-home"
mkdir -p "$fresh"
block="$T/quickstart.sh"
awk '/^## Quick start/ {q=1; next} q && /^```sh/ {b=1; next} b && /^```/ {exit} b {print}' "$root/README.md" >"$block"
[ -s "$block" ] || fail "no \`\`\`sh block under '## Quick start' in README.md"
grep -q 'syncagent init' "$block" || fail "the quick start block has no 'syncagent init': $(cat "$block")"
log "quick start block: $(wc -l <"$block") lines"
# A fresh user: their own HOME and XDG dirs unset (the defaults apply), ~/.local/bin not on PATH.
clean_path=$(printf '%s' "$PATH" | tr ':' '\n' | grep -v "/.local/bin" | paste -sd:)
(cd "$root" && env -u XDG_CONFIG_HOME -u XDG_STATE_HOME -u SSH_AUTH_SOCK HOME="$fresh" PATH="$clean_path" \
    bash -e "$block") >"$T/quickstart.out" 2>&1 || fail "README's quick start failed as written: $(tail -30 "$T/quickstart.out")"
out=$(cat "$T/quickstart.out")
assert_contains "$out" "phone: 1 added" "git log shows the commit of hello.txt"
assert_contains "$out" "hello.txt" "git log --stat names the file"
[ -x "$fresh/.local/bin/syncagent" ] || fail "the quick start did not install ~/.local/bin/syncagent"
[ -f "$fresh/.config/syncagent/config.toml" ] || fail "no ~/.config/syncagent/config.toml after the quick start"
git --git-dir="$fresh/.local/state/syncagent/phone/store.git" fsck --no-progress >"$T/fsck.out" 2>&1 \
    || fail "git fsck of the quick start's store: $(cat "$T/fsck.out")"
log "quick start ran as written"

# README's "Use it from Swift" code is Samples/UseFromSwift/main.swift, which the build compiles.
python3 - "$root/README.md" "$root/Samples/UseFromSwift/main.swift" <<'PY' || fail "README's Swift example differs from Samples/UseFromSwift/main.swift (the compiled copy): update one from the other"
import re, sys
readme = open(sys.argv[1]).read()
m = re.search(r"^## Use it from Swift.*?^```swift\n(.*?)^```", readme, re.S | re.M)
sys.exit(0 if m and m.group(1) in open(sys.argv[2]).read() else 1)
PY
log "README's Swift example is the compiled sample"

# Samples/phone.toml's header: the lines that try the pair, run as written with the built binary on PATH.
sample="$T/sample.sh"
sed -n 's/^#   //p' "$root/Samples/phone.toml" >"$sample"
grep -q 'syncagent run --config Samples/phone.toml' "$sample" || fail "Samples/phone.toml's header has no run line: $(cat "$sample")"
wait_until rm -rf /tmp/syncagent-sample
(cd "$root" && PATH="$(dirname "$SYNCAGENT"):$clean_path" bash -e "$sample") >"$T/sample.out" 2>&1 \
    || fail "Samples/phone.toml's header failed as written: $(tail -20 "$T/sample.out"; cat /tmp/syncagent-sample/*.log 2>/dev/null | tail -20)"
assert_contains "$(cat "$T/sample.out")" "hello" "the watch holds the phone's file"
# `kill %1 %2` only asks: wait until both agents have let go of their state before removing it.
stopped() { "$SYNCAGENT" status --json --config "$root/Samples/$1.toml" 2>/dev/null | grep -q '"running" *: *false'; }
wait_until stopped phone
wait_until stopped watch
wait_until rm -rf /tmp/syncagent-sample
log "Samples/phone.toml's header ran as written"
log "ok"
