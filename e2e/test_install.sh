#!/usr/bin/env bash
# Issue 11, install as a Linux service: `make install PREFIX=<tmp>` puts the binary, the man pages,
# bash/zsh/fish completions and the systemd user unit in place, and each works: the installed binary
# syncs a file, `man` finds the pages (subcommands too), bash completes a subcommand, the unit runs
# the installed binary as Type=notify. `make uninstall` removes every file it installed.
source "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
prefix="$T/prefix with space"

make -C "$root" install PREFIX="$prefix" >"$T/install.out" 2>&1 || fail "make install failed: $(tail -20 "$T/install.out")"
find "$prefix" -type f | sort >"$T/installed.list"
log "installed: $(sed "s|$prefix/||" "$T/installed.list" | tr '\n' ' ')"

# the binary
bin="$prefix/bin/syncagent"
[ -x "$bin" ] || fail "no executable $bin"
assert_contains "$("$bin" --version)" "syncagent" "installed binary's --version"
SYNCAGENT=$bin init_agent installed 50
SYNCAGENT=$bin run_agent
printf 'synced by the installed binary\n' >"$DATA/hello.txt"
wait_until head_file_matches hello.txt
SYNCAGENT=$bin stop_agent TERM

# --help at 80 columns: no line longer, and every subcommand shows an example
subcommands=$(COLUMNS=80 "$bin" --help | awk '/^SUBCOMMANDS:/ { on = 1; next } on && /^  [a-z]/ { print $1 }')
[ -n "$subcommands" ] || fail "syncagent --help lists no subcommands"
for c in "" $subcommands; do
    [ "$c" != help ] || continue
    COLUMNS=80 "$bin" $c --help >"$T/help.out" 2>&1 || fail "syncagent $c --help failed"
    long=$(awk 'length($0) > 80' "$T/help.out")
    [ -z "$long" ] || fail "syncagent $c --help has lines over 80 columns: $long"
    grep -Eq '^(Example: syncagent |Examples?:$)' "$T/help.out" || fail "syncagent $c --help shows no example"
done

# man pages: the top page and one per subcommand
man1="$prefix/share/man/man1"
for page in syncagent syncagent.history syncagent.restore syncagent.status; do
    [ -s "$man1/$page.1" ] || fail "no man page $man1/$page.1 (have: $(ls "$man1"))"
done
grep -q '^\.Dt SYNCAGENT 1' "$man1/syncagent.1" || fail "syncagent.1 is not a man page"
grep -q 'restore' "$man1/syncagent.1" || fail "syncagent.1 does not list restore"
# Every page renders without a warning (groff's mdoc checks on), syncagent(1) lists the commands and
# points at the config page, which documents every table.
man5="$prefix/share/man/man5"
[ -s "$man5/syncagent.toml.5" ] || fail "no man page $man5/syncagent.toml.5"
for page in "$man1"/syncagent*.1 "$man5/syncagent.toml.5"; do
    warnings=$(groff -mandoc -ww -z "$page" 2>&1)
    [ -z "$warnings" ] || fail "$(basename "$page") renders with warnings: $warnings"
done
grep -q '^\.Sh COMMANDS' "$man1/syncagent.1" || fail "syncagent.1 has no COMMANDS section"
grep -q '^\.Xr syncagent.toml 5' "$man1/syncagent.1" || fail "syncagent.1 does not point at syncagent.toml(5)"
for table in watch peer resolver rule hook safety store; do
    grep -q "\[$table\]" "$man5/syncagent.toml.5" || fail "syncagent.toml(5) does not document [$table]"
done
grep -q '^\.Bd -literal' "$man1/syncagent.init.1" || fail "syncagent.init(1)'s examples are not literal blocks"
if command -v man >/dev/null; then
    MANPATH="$prefix/share/man" man -P cat syncagent.restore 2>/dev/null | grep -q "ISO 8601" || fail "man syncagent.restore does not render"
    MANPATH="$prefix/share/man" man -P cat syncagent.toml 2>/dev/null | grep -q "max_delete_percent" || fail "man syncagent.toml does not render"
fi

# completions
bash_completion="$prefix/share/bash-completion/completions/syncagent"
out=$(bash -c 'source "$1"; COMP_WORDS=(syncagent hist); COMP_CWORD=1; COMP_LINE="syncagent hist"; COMP_POINT=${#COMP_LINE}; _syncagent syncagent hist syncagent; printf "%s\n" "${COMPREPLY[@]}"' _ "$bash_completion" 2>&1)
assert_contains "$out" "history" "bash completes 'syncagent hist'"
head -1 "$prefix/share/zsh/site-functions/_syncagent" | grep -q '^#compdef syncagent' || fail "the zsh completion has no #compdef line"
grep -q "complete -c 'syncagent'.*history" "$prefix/share/fish/vendor_completions.d/syncagent.fish" || fail "the fish completion completes nothing"
if command -v zsh >/dev/null; then zsh -n "$prefix/share/zsh/site-functions/_syncagent" || fail "zsh cannot parse its completion"; fi

# the systemd unit runs the installed binary, Type=notify
unit="$prefix/lib/systemd/user/syncagent.service"
grep -qx "ExecStart=$prefix/bin/syncagent run --config %h/.config/syncagent/config.toml" "$unit" || fail "ExecStart in $unit: $(grep ExecStart "$unit")"
grep -qx "Type=notify" "$unit" || fail "$unit is not Type=notify"
if command -v systemd-analyze >/dev/null; then
    systemd-analyze verify --user "$unit" 2>&1 | grep -v "Failed to prepare\|bus\|XDG_RUNTIME" | grep -i "error\|invalid" && fail "systemd-analyze finds errors in $unit"
fi

# uninstall leaves nothing behind
make -C "$root" uninstall PREFIX="$prefix" >"$T/uninstall.out" 2>&1 || fail "make uninstall failed: $(cat "$T/uninstall.out")"
left=$(find "$prefix" -type f)
[ -z "$left" ] || fail "make uninstall left: $left"
log "make install / uninstall: ok ($(wc -l <"$T/installed.list") files)"
