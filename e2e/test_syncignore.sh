#!/usr/bin/env bash
# Issue 46.5: `.syncignore` at the top of the data directory, read while the agent runs. A pattern
# added to it stops the next change of a matching file from syncing (and new matching files), at
# once, no restart; the file itself never syncs; taking the pattern out sends what it kept back.
source "$(dirname "$0")/lib.sh"

init_pair 50
start_device watch
start_device phone
P=$(data_of phone) W=$(data_of watch)
mkdir -p "$P/cache"
printf 'v1\n' >"$P/cache/a.bin"
printf 'shared\n' >"$P/notes.txt"
wait_until test -f "$W/cache/a.bin"
wait_until test -f "$W/notes.txt"

switch_to phone
printf '# kept on this device\ncache/\n*.log\n!keep.log\n' >"$P/.syncignore"
printf 'v2\n' >"$P/cache/a.bin"
printf 'new\n' >"$P/cache/b.bin"
printf 'log\n' >"$P/run.log"
printf 'kept\n' >"$P/keep.log"
printf 'marker\n' >"$P/marker.txt"
wait_until test -f "$W/marker.txt"
wait_until test -f "$W/keep.log"
assert_eq "v1" "$(cat "$W/cache/a.bin")" "the watch's cache/a.bin (its change is ignored on the phone)"
[ ! -e "$W/cache/b.bin" ] || fail "an ignored new file reached the watch"
[ ! -e "$W/run.log" ] || fail "an ignored *.log reached the watch"
[ ! -e "$W/.syncignore" ] || fail ".syncignore itself reached the watch"
head_lacks .syncignore || fail ".syncignore is in the phone's main"
head_lacks cache/b.bin || fail "an ignored file is in the phone's main"
assert_contains "$(cat "$LOG")" ".syncignore changed" "the log says the rules were read again"

# A file the watch adds under the ignored directory: in the phone's store, not on its disk.
printf 'from the watch\n' >"$W/cache/from-watch.bin"
on watch wait_until head_has cache/from-watch.bin
wait_until head_has cache/from-watch.bin
[ ! -e "$P/cache/from-watch.bin" ] || fail "a peer's file under an ignored directory was written on the phone"

# The pattern taken out: what it kept back goes, and the watch's file comes to the phone (not
# committed as a deletion because the phone's disk lacked it).
printf '*.log\n' >"$P/.syncignore"
wait_until test -f "$W/cache/b.bin"
wait_until grep -qx v2 "$W/cache/a.bin"
wait_until test -f "$P/cache/from-watch.bin"
head_has cache/from-watch.bin || fail "the phone committed the deletion of the watch's file under the pattern taken out"
on watch head_has cache/from-watch.bin || fail "the watch's file under the pattern taken out was deleted on the watch"
[ ! -e "$W/run.log" ] || fail "run.log went though *.log is still ignored"
stop_device phone
stop_device watch
log "ok"
