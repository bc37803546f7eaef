#!/usr/bin/env bash
# Issue 3, conflicts: with the watch's agent stopped, the same paths change differently on both devices
# (a text file with overlapping line changes, a binary file, modify/delete both ways, add/add) and one
# path changes identically. When the watch comes back: exactly one open record per conflicting path,
# none for the identical change; the same records (same ids) on both devices; both data directories
# hold the same bytes at every path — the newer version (by the author time of the commit that made
# that version, not of unrelated later commits), a modification beating a deletion; no conflict
# markers anywhere; `show --version` gives each side's exact bytes and the base.
source "$(dirname "$0")/lib.sh"
X="$T/expected"; mkdir -p "$X"   # the bytes of each version

# ---- a common starting point ---------------------------------------------------------------------
init_pair 50
seq -f 'line %g of the text' 1 10 >"$X/text.base"
head -c 3000 /dev/urandom >"$X/bin.base"
printf 'modified on phone, deleted on watch\n' >"$X/md.base"
printf 'deleted on phone, modified on watch\n' >"$X/dm.base"
printf 'before\n' >"$X/same.base"
printf 'edited early on the phone, later on the watch\n' >"$X/early.base"
for f in text bin md dm same early; do
    ext=txt; [ "$f" != bin ] || ext=dat
    cp "$X/$f.base" "$(data_of phone)/$f.$ext"
done
start_device phone
start_device watch
wait_until same_file watch bin.dat "$X/bin.base"
wait_converged
stop_device watch

# ---- both sides change the same paths while apart --------------------------------------------------
# times: the phone edits early.txt (now-100), the watch edits everything (now-50), then the phone edits
# the rest (now-20): early.txt's newer version is the watch's, every other path's is the phone's.
now=$(date +%s)
tp=$((now - 20)) tw=$((now - 50))
sed 's/^line 5 .*/line 5 as the PHONE has it/; s/^line 6 .*/line 6 phone/' "$X/text.base" >"$X/text.phone"
sed 's/^line 5 .*/line 5 as the WATCH has it/; s/^line 6 .*/line 6 watch/' "$X/text.base" >"$X/text.watch"
{ head -c 1000 "$X/bin.base"; printf '\0\1\2phone\377'; tail -c 1000 "$X/bin.base"; } >"$X/bin.phone"
{ head -c 1000 "$X/bin.base"; printf '\0\1\2watch\376'; tail -c 1000 "$X/bin.base"; } >"$X/bin.watch"
printf 'the phone changed this\n' >"$X/md.phone"
printf 'the watch changed this\n' >"$X/dm.watch"
printf 'added on the phone\n' >"$X/add.phone"
printf 'added on the watch, longer\n' >"$X/add.watch"
printf 'after: the same change on both\n' >"$X/same.both"
printf 'early.txt as the phone had it long ago\n' >"$X/early.phone"
printf 'early.txt as the watch has it\n' >"$X/early.watch"

put phone early.txt $((now - 100)) <"$X/early.phone"
on phone wait_until head_blob_is early.txt "$X/early.phone"
put phone text.txt "$tp" <"$X/text.phone"
put phone bin.dat "$tp" <"$X/bin.phone"
put phone md.txt "$tp" <"$X/md.phone"
rm "$(data_of phone)/dm.txt"
put phone add.txt "$tp" <"$X/add.phone"
put phone same.txt "$tp" <"$X/same.both"
on phone assert_head_matches_data
on phone wait_until pending_is 0

put watch text.txt "$tw" <"$X/text.watch"
put watch bin.dat "$tw" <"$X/bin.watch"
rm "$(data_of watch)/md.txt"
put watch dm.txt "$tw" <"$X/dm.watch"
put watch add.txt "$tw" <"$X/add.watch"
put watch same.txt "$tw" <"$X/same.both"
put watch early.txt "$tw" <"$X/early.watch"

start_device watch
open_is() { [ "$(on "$1" status_field conflicts open)" = "$2" ]; }
wait_until open_is watch 6
wait_until open_is phone 6
wait_converged

# ---- the records ------------------------------------------------------------------------------------
conflicts_json phone >"$T/phone.json"
conflicts_json watch >"$T/watch.json"
records_agree() { conflicts_json phone --all >"$T/phone.all.json" && conflicts_json watch --all >"$T/watch.all.json" \
    && cmp -s "$T/phone.all.json" "$T/watch.all.json"; }
poll_until records_agree || fail "phone's and watch's records differ: $(diff "$T/phone.all.json" "$T/watch.all.json" | head -n 40)"
summary() { python3 -c '
import json, sys
for r in sorted(json.load(open(sys.argv[1])), key=lambda r: r["path"]):
    print(r["path"], r["kind"], r["status"], r["current"], r["id"])' "$1"; }
summary "$T/phone.json" >"$T/phone.summary"
summary "$T/watch.json" >"$T/watch.summary"
cmp -s "$T/phone.summary" "$T/watch.summary" || fail "records differ between devices: $(diff "$T/phone.summary" "$T/watch.summary")"
assert_eq "add.txt both-added open phone
bin.dat both-modified open phone
dm.txt modified-deleted open watch
early.txt both-modified open watch
md.txt modified-deleted open phone
text.txt both-modified open phone" "$(cut -d' ' -f1-4 "$T/phone.summary")" "records (path kind status current)"
ids=$(awk '{print $5}' "$T/phone.summary")
assert_eq 6 "$(sort -u <<<"$ids" | grep -c '^c-')" "distinct record ids"

# each record's fields, against the bytes each side wrote
blob_of() { git hash-object --stdin <"$1"; }
check_record() { # PATH BASEFILE|- PHONEFILE|- WATCHFILE|-
    local path=$1 base=$2 pv=$3 wv=$4 js
    js=$(conflict_field phone "$path" base)
    if [ "$base" = - ]; then assert_eq null "$js" "$path: base"
    else assert_eq "{\"blob\": \"$(blob_of "$base")\"}" "$js" "$path: base"; fi
    local dev file i
    for i in 0 1; do
        dev=$(conflict_field phone "$path" versions "$i" device)
        case "$dev" in phone) file=$pv ;; watch) file=$wv ;; *) fail "$path: version $i is from '$dev'" ;; esac
        if [ "$file" = - ]; then assert_eq null "$(conflict_field phone "$path" versions "$i" blob)" "$path: $dev's blob (deleted)"
        else assert_eq "$(blob_of "$file")" "$(conflict_field phone "$path" versions "$i" blob)" "$path: $dev's blob"; fi
        assert_ne "" "$(conflict_field phone "$path" versions "$i" commit)" "$path: $dev's commit"
        assert_ne "" "$(conflict_field phone "$path" versions "$i" time)" "$path: $dev's time"
    done
    assert_eq 2 "$(conflict_field phone "$path" versions | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" "$path: number of versions"
    assert_eq null "$(conflict_field phone "$path" resolution)" "$path: resolution"
    assert_contains "$(conflict_field phone "$path" detectedBy)" "$(conflict_field watch "$path" detectedBy)" "$path: detectedBy on both"
    # show --version: every version's exact bytes, on both devices
    for dev in phone watch; do
        for v in base phone watch; do
            case "$v" in base) file=$base ;; phone) file=$pv ;; watch) file=$wv ;; esac
            if [ "$file" = - ]; then
                if "$SYNCAGENT" show "$(conflict_field phone "$path" id)" --config "$T/$dev/syncagent.toml" --version "$v" >"$T/show.out" 2>"$T/show.err"; then
                    fail "show $path --version $v on $dev succeeded though there is no such version: $(head -c 200 "$T/show.out")"
                fi
            else
                "$SYNCAGENT" show "$(conflict_field phone "$path" id)" --config "$T/$dev/syncagent.toml" --version "$v" >"$T/show.out" 2>"$T/show.err" \
                    || fail "show $path --version $v on $dev failed: $(cat "$T/show.err")"
                cmp -s "$T/show.out" "$file" || fail "show $path --version $v on $dev: not the bytes $v wrote"
            fi
        done
    done
}
check_record text.txt "$X/text.base" "$X/text.phone" "$X/text.watch"
check_record bin.dat "$X/bin.base" "$X/bin.phone" "$X/bin.watch"
check_record md.txt "$X/md.base" "$X/md.phone" -
check_record dm.txt "$X/dm.base" - "$X/dm.watch"
check_record add.txt - "$X/add.phone" "$X/add.watch"
check_record early.txt "$X/early.base" "$X/early.phone" "$X/early.watch"

# ---- the data directories: the same bytes on both, the newer version, a modification over a deletion -----
for d in phone watch; do
    wait_until same_file "$d" text.txt "$X/text.phone"
    wait_until same_file "$d" bin.dat "$X/bin.phone"
    wait_until same_file "$d" md.txt "$X/md.phone"
    wait_until same_file "$d" dm.txt "$X/dm.watch"
    wait_until same_file "$d" add.txt "$X/add.phone"
    wait_until same_file "$d" same.txt "$X/same.both"
    wait_until same_file "$d" early.txt "$X/early.watch"
    if grep -rlE '^(<<<<<<<|>>>>>>>|=======)' "$(data_of "$d")" >&2; then fail "conflict markers in $d's data directory"; fi
    if on "$d" g grep -lE '^(<<<<<<<|>>>>>>>)' main -- >&2; then fail "conflict markers in $d's main"; fi
    assert_eq "add.txt bin.dat dm.txt early.txt md.txt same.txt text.txt" "$(on "$d" data_list | tr '\n' ' ' | sed 's/ $//')" "$d's data directory (no record files, no extra copies)"
done
# records live in the store only, and no version was lost: every version's blob is in both stores
for d in phone watch; do
    for f in "$X"/*; do
        on "$d" g cat-file -e "$(blob_of "$f")" || fail "$d's store lacks the version $(basename "$f")"
    done
done
# idle: no ping-pong of merge commits
head=$(main_of phone)
sleep 2
wait_converged
assert_eq "$head" "$(main_of phone)" "phone's main after 2 s idle with open conflicts"
assert_eq "$head" "$(main_of watch)" "watch's main after 2 s idle with open conflicts"
