#!/usr/bin/env bash
# Names that are not UTF-8 sync byte-exactly: a file $'bad-\xff\xfe-utf8', a directory $'d\xe9j\xe0'
# (Latin-1 "déjà") with a file inside, and a symbolic link whose target is not UTF-8, all created on
# the phone, arrive on the watch with exactly the same name and content bytes, and nothing mangled
# (a lossy re-encoding of a name) travels back: both devices end with exactly the phone's files.
# Then a conflict on a non-UTF-8 path (both devices edit it while their agents are stopped): one
# open record on both; `show ID --version phone` prints the phone's bytes; `resolve PATH --keep phone`
# (and, for the path's next conflict, `resolve PATH --with FILE` where FILE's name is not UTF-8 either)
# with PATH given as the raw bytes settles it, and both devices converge on the phone's bytes.
source "$(dirname "$0")/lib.sh"
X="$T/expected"; mkdir -p "$X"

bad=$'bad-\xff\xfe-utf8'
dir=$'d\xe9j\xe0'
inner="$dir/"$'inn\xe9r.txt'
link=$'link-\xfe'
target=$'target-\xff\xe9'

init_pair 50
printf 'plain\n' >"$(data_of phone)/plain.txt"
start_device phone
start_device watch
wait_until same_file watch plain.txt "$(data_of phone)/plain.txt"
wait_converged

printf 'bad name\n\xff\x00bytes\n' >"$X/bad"
printf 'inside a Latin-1 directory\n' >"$X/inner"
cp "$X/bad" "$(data_of phone)/$bad"
mkdir "$(data_of phone)/$dir"
cp "$X/inner" "$(data_of phone)/$inner"
ln -s "$target" "$(data_of phone)/$link"

wait_until same_file watch "$bad" "$X/bad"
wait_until same_file watch "$inner" "$X/inner"
link_arrived() { [ -L "$(data_of watch)/$link" ] && [ "$(readlink "$(data_of watch)/$link")" = "$target" ]; }
wait_until link_arrived
WAIT_TIMEOUT=30 wait_converged

# exactly the phone's names, byte for byte, everywhere
names_of() { (cd "$(data_of "$1")" && find . -mindepth 1 \( -type f -o -type l \) -printf '%P\0' | sort -z); }
printf '%s\0' plain.txt "$bad" "$inner" "$link" | sort -z >"$T/want"
show_names() { tr '\0' '\n' <"$1" | od -c | head -n 12 >&2; }
for d in phone watch; do
    names_of "$d" >"$T/have.$d"
    cmp -s "$T/want" "$T/have.$d" || { show_names "$T/have.$d"; fail "$d's data directory does not hold exactly the phone's four names (above, od -c)"; }
    on "$d" head_files | sort -z >"$T/head.$d"
    cmp -s "$T/want" "$T/head.$d" || { show_names "$T/head.$d"; fail "$d's HEAD does not hold exactly the phone's four names (above, od -c)"; }
    assert_eq "$dir" "$(cd "$(data_of "$d")" && find . -mindepth 1 -type d -printf '%P')" "$d's only directory"
done
[ "$(on watch g cat-file blob "HEAD:$link")" = "$target" ] || fail "the watch's store does not hold the link target byte-exactly"
assert_eq 120000 "$(on watch g ls-tree -z HEAD | tr '\0' '\n' | grep -a "	$link\$" | cut -d' ' -f1)" "mode of the link in the watch's store"
# and nothing travelled back: the phone's history only ever held these names
on phone all_committed_paths >"$T/phone.paths"
assert_eq 0 "$(grep -ac $'\xef\xbf\xbd' "$T/phone.paths" || true)" "paths with U+FFFD (a mangled name) in the phone's history"
assert_eq "[]" "$(conflicts_json phone --all | tr -d ' \n')" "conflict records after syncing non-UTF-8 names"

# ---- a conflict on a non-UTF-8 path ---------------------------------------------------------------------
stop_device watch
stop_device phone
now=$(date +%s)
printf 'the phone edited the bad name\n' >"$X/bad.phone"
printf 'the watch edited the bad name, later\n' >"$X/bad.watch"
put phone "$bad" $((now - 100)) <"$X/bad.phone"
put watch "$bad" $((now - 50)) <"$X/bad.watch"
start_device phone
start_device watch
open_is() { [ "$(on "$1" status_field conflicts open)" = "$2" ]; }
wait_until open_is watch 1
wait_until open_is phone 1
WAIT_TIMEOUT=30 wait_converged
id_of() { conflicts_json "$1" | python3 -c 'import json, sys; rs = json.load(sys.stdin); print(rs[0]["id"] if len(rs) == 1 else "")'; }
id=$(id_of phone)
assert_ne "" "$id" "id of the open record on the phone"
assert_eq "$id" "$(id_of watch)" "id of the open record on the watch"
# the newer version (the watch's) is on both while the record is open
wait_until same_file phone "$bad" "$X/bad.watch"
wait_until same_file watch "$bad" "$X/bad.watch"
for d in phone watch; do
    "$SYNCAGENT" show "$id" --config "$T/$d/syncagent.toml" --version phone >"$T/show.out" 2>"$T/show.err" \
        || fail "show $id --version phone on $d failed: $(cat "$T/show.err")"
    cmp -s "$T/show.out" "$X/bad.phone" || fail "show $id --version phone on $d: not the phone's bytes ($(head -c 100 "$T/show.out"))"
done

# resolve by the path, given as its raw bytes
"$SYNCAGENT" resolve "$bad" --keep phone --config "$T/watch/syncagent.toml" >"$T/resolve.out" 2>&1 \
    || fail "syncagent resolve <non-UTF-8 path> --keep phone on the watch failed: $(cat "$T/resolve.out")"
for d in phone watch; do
    wait_until record_status_is "$d" "$id" resolved
    wait_until open_is "$d" 0
    wait_until same_file "$d" "$bad" "$X/bad.phone"
done
WAIT_TIMEOUT=30 wait_converged
for d in phone watch; do
    names_of "$d" >"$T/have.$d"
    cmp -s "$T/want" "$T/have.$d" || { show_names "$T/have.$d"; fail "$d's data directory after the resolution does not hold exactly the four names"; }
done

# ---- the path's next conflict, settled on the phone with --with a file whose name is not UTF-8 either
stop_device watch
stop_device phone
now=$(date +%s)
printf 'phone, second time\n' | put phone "$bad" $((now - 40))
printf 'watch, second time\n' | put watch "$bad" $((now - 30))
start_device phone
start_device watch
wait_until open_is phone 1
wait_until open_is watch 1
WAIT_TIMEOUT=30 wait_converged
hand="$T/hand-"$'\xff\xfe'".txt"
printf 'chosen by hand\n' >"$hand"
cp "$hand" "$X/hand"
"$SYNCAGENT" resolve "$bad" --with "$hand" --config "$T/phone/syncagent.toml" >"$T/resolve2.out" 2>&1 \
    || fail "syncagent resolve <non-UTF-8 path> --with <non-UTF-8 file> on the phone failed: $(cat "$T/resolve2.out")"
for d in phone watch; do
    wait_until open_is "$d" 0
    wait_until same_file "$d" "$bad" "$X/hand"
done
WAIT_TIMEOUT=30 wait_converged
stop_device watch
stop_device phone
