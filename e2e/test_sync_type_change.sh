#!/usr/bin/env bash
# Issue 3, type changes ("file vs directory" in the issue's tests): while the watch's agent is stopped,
# the phone turns file `fd` into a directory holding fd/inner.txt and file `fl` into a symbolic link,
# while the watch modifies both files. When the watch comes back: one open record per path, of kind
# type-changed, the same on both devices; both data directories hold the same thing at each path; the
# watch's modified bytes stay retrievable (`show --version watch`), and the phone's new file
# fd/inner.txt is not silently dropped (it is on both devices, or the record keeps it).
source "$(dirname "$0")/lib.sh"
X="$T/expected"; mkdir -p "$X"

init_pair 50
printf 'a file\n' >"$X/fd.base"
printf 'another file\n' >"$X/fl.base"
cp "$X/fd.base" "$(data_of phone)/fd"
cp "$X/fl.base" "$(data_of phone)/fl"
start_device phone
start_device watch
wait_until same_file watch fl "$X/fl.base"
wait_converged
stop_device watch

printf 'inner, new on the phone\n' >"$X/inner"
rm "$(data_of phone)/fd"
mkdir "$(data_of phone)/fd"
cp "$X/inner" "$(data_of phone)/fd/inner.txt"
rm "$(data_of phone)/fl"
ln -s fd/inner.txt "$(data_of phone)/fl"
on phone wait_until head_has fd/inner.txt
on phone assert_head_matches_data

printf 'a file, changed on the watch\n' >"$X/fd.watch"
printf 'another file, changed on the watch\n' >"$X/fl.watch"
cp "$X/fd.watch" "$(data_of watch)/fd"
cp "$X/fl.watch" "$(data_of watch)/fl"
start_device watch

open_is() { [ "$(on "$1" status_field conflicts open)" = "$2" ]; }
wait_until open_is watch 2
wait_converged
wait_until open_is phone 2
for p in fd fl; do
    assert_eq "$(conflict_field phone "$p" id)" "$(conflict_field watch "$p" id)" "$p: record id on both devices"
    assert_eq type-changed "$(conflict_field phone "$p" kind)" "$p: kind of the record (file vs $( [ "$p" = fd ] && echo directory || echo link ))"
    assert_eq open "$(conflict_field watch "$p" status)" "$p: status"
    "$SYNCAGENT" show "$(conflict_field phone "$p" id)" --config "$T/watch/syncagent.toml" --version watch >"$T/show.out" \
        || fail "show $p --version watch failed"
    cmp -s "$T/show.out" "$X/$p.watch" || fail "show $p --version watch: not the watch's bytes"
done
# the phone's new file is not silently lost: on both devices at its path, or kept by the record
inner_kept() {
    same_file phone fd/inner.txt "$X/inner" && same_file watch fd/inner.txt "$X/inner" && return 0
    "$SYNCAGENT" show "$(conflict_field phone fd id)" --config "$T/phone/syncagent.toml" --version phone 2>/dev/null \
        | grep -qF "$(cat "$X/inner")"
}
inner_kept || fail "the phone's fd/inner.txt is in neither data directory ($(cd "$(data_of phone)" && find . | tr '\n' ' ')) nor in the record of fd"
