#!/usr/bin/env bash
# Editor temporaries never reach a commit as stand-alone files, while the file being edited does,
# with its final content: vim (.x.swp, 4913, x~, a temp renamed over x), emacs (.#x lock link, x~),
# and "write *.tmp then rename" saves. Some temporaries stay on disk to make sure they are ignored,
# not just missed.
source "$(dirname "$0")/lib.sh"

start_agent phone
printf 'version 1\n' >"$DATA/notes.txt"
printf 'doc 1\n' >"$DATA/doc.txt"
mkdir -p "$DATA/sub"
printf 'nested 1\n' >"$DATA/sub/nested.txt"
wait_until head_file_matches notes.txt
wait_until head_file_matches sub/nested.txt

# vim editing notes.txt: swap file, the 4913 write test, a backup, the new text written to a temp
# file renamed over the original
for round in 2 3 4; do
    printf 'b0VIM swap %d\n' "$round" >"$DATA/.notes.txt.swp"
    printf 'swap\n' >>"$DATA/.notes.txt.swp"
    : >"$DATA/4913"; rm -f "$DATA/4913"
    cp "$DATA/notes.txt" "$DATA/notes.txt~"
    printf 'version %d\n' "$round" >"$DATA/notes.txt.tmp"
    mv -f "$DATA/notes.txt.tmp" "$DATA/notes.txt"
    rm -f "$DATA/notes.txt~"
done
# vim's classic save: rename the original to the backup, write anew, remove the backup
mv "$DATA/sub/nested.txt" "$DATA/sub/nested.txt~"
: >"$DATA/sub/4913"; rm "$DATA/sub/4913"
printf 'nested 2\n' >"$DATA/sub/nested.txt"
rm "$DATA/sub/nested.txt~"
# temporaries that stay: more swap files, a backup, an emacs lock link, a 4913, a .tmp
printf 'swo\n' >"$DATA/.notes.txt.swo"
printf 'swx\n' >"$DATA/sub/.nested.txt.swx"
printf 'version 4 backup\n' >"$DATA/notes.txt~"
ln -s 'user@host.1234:1700000000' "$DATA/.#doc.txt"
printf 'emacs autosave-ish\n' >"$DATA/sub/.#nested.txt"
: >"$DATA/sub/4913"
printf 'left over\n' >"$DATA/leftover.tmp"
# an atomic "write a .tmp, rename over" save of doc.txt, with a hidden temp name too
printf 'doc 2\n' >"$DATA/doc.txt.tmp"; mv "$DATA/doc.txt.tmp" "$DATA/doc.txt"
printf 'doc 3\n' >"$DATA/.doc.txt.8f3a.tmp"; mv "$DATA/.doc.txt.8f3a.tmp" "$DATA/doc.txt"
# a new file born through a temp
printf 'fresh\n' >"$DATA/sub/fresh.txt.tmp"; mv "$DATA/sub/fresh.txt.tmp" "$DATA/sub/fresh.txt"

final_state() {
    [ "$(g cat-file blob HEAD:notes.txt)" = "version 4" ] &&
    [ "$(g cat-file blob HEAD:doc.txt)" = "doc 3" ] &&
    [ "$(g cat-file blob HEAD:sub/nested.txt)" = "nested 2" ] &&
    head_file_matches sub/fresh.txt
}
wait_until final_state
wait_until pending_is 0
# one more ordinary change after the temporaries, so that any event about them has been handled
printf 'after\n' >"$DATA/after.txt"
wait_until head_file_matches after.txt
wait_until pending_is 0

ignored='(^|/)(\.[^/]*\.sw[pox]|[^/]*~|\.#[^/]*|4913|[^/]*\.tmp)$'
assert_eq "" "$(head_list | grep -E "$ignored" || true)" "editor temporaries in HEAD"
assert_eq "" "$(all_committed_paths | grep -E "$ignored" || true)" "editor temporaries in any commit"
want=$(printf '%s\n' after.txt doc.txt notes.txt sub/fresh.txt sub/nested.txt)
assert_eq "$want" "$(head_list)" "the paths in HEAD"
for p in after.txt doc.txt notes.txt sub/fresh.txt sub/nested.txt; do
    head_file_matches "$p" || fail "HEAD:$p is not the file's final content"
done
# the temporaries are still on disk: they were ignored, not missed
[ -f "$DATA/notes.txt~" ] && [ -L "$DATA/.#doc.txt" ] && [ -f "$DATA/leftover.tmp" ] || fail "test setup: temporaries vanished"

# a restart's full scan ignores them too
stop_agent
assert_eq 0 "$(status_field pending)" "pending while stopped, with only temporaries around"
n=$(commit_count)
run_agent
printf 'marker\n' >"$DATA/marker.txt"
wait_until head_has marker.txt
assert_eq $((n + 1)) "$(commit_count)" "commits after a restart with temporaries on disk and one new file"
assert_eq "" "$(all_committed_paths | grep -E "$ignored" || true)" "editor temporaries in any commit after a restart"
stop_agent
