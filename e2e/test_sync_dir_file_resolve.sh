#!/usr/bin/env bash
# File against directory, settled with `syncagent resolve`: while the watch's agent is stopped, the
# phone edits file NAME (the newer change) and the watch replaces it with a directory NAME/ holding
# a.txt and sub/b.txt. When both run: one open record per NAME. Every option of `resolve`, run on the
# phone and the watch in turn, must exit 0, leave the record resolved on both devices, let them
# converge, and leave at NAME what the option says:
#   --all --keep newest (the phone's file is newer) / --keep phone: the phone's file, no directory;
#   --keep watch: the directory's files, no copy of the file; --keep both: the directory stays and the
#   file is kept beside it as NAME.conflict-phone-YYYYMMDD-HHMMSS; --with FILE: FILE's bytes at NAME,
#   no directory; --delete: nothing at NAME and no copy.
# Round 1 settles one record with `--all`; round 2 makes five records (fresh names) and settles each.
source "$(dirname "$0")/lib.sh"
X="$T/expected"; mkdir -p "$X"

init_pair 50
printf 'seed\n' >"$(data_of phone)/seed.txt"
start_device phone
start_device watch
wait_until same_file watch seed.txt "$(data_of phone)/seed.txt"
wait_converged
open_is() { [ "$(on "$1" status_field conflicts open)" = "$2" ]; }

# make_conflicts NAME...: file NAME on both; then, apart, the phone edits it and the watch makes it a directory
make_conflicts() {
    local n now
    for n in "$@"; do
        printf '%s: the common file\n' "$n" >"$X/$n.base"
        cp "$X/$n.base" "$(data_of phone)/$n"
    done
    for n in "$@"; do wait_until same_file watch "$n" "$X/$n.base"; done
    wait_converged
    stop_device watch
    now=$(date +%s)
    for n in "$@"; do
        printf '%s: the file, as the phone edited it\n' "$n" >"$X/$n.phone"
        put phone "$n" $((now - 10)) <"$X/$n.phone"
    done
    on phone assert_head_matches_data
    on phone wait_until pending_is 0
    for n in "$@"; do
        printf '%s/a.txt: the watch made a directory\n' "$n" >"$X/$n.a"
        printf '%s/sub/b.txt: deeper in it\n' "$n" >"$X/$n.b"
        rm "$(data_of watch)/$n"
        put watch "$n/a.txt" $((now - 100)) <"$X/$n.a"
        put watch "$n/sub/b.txt" $((now - 100)) <"$X/$n.b"
    done
    start_device watch
    for n in "$@"; do
        wait_until record_status_is watch "$n" open
        wait_until record_status_is phone "$n" open
    done
    WAIT_TIMEOUT=30 wait_converged
}

# resolve_on DEV ARGS...: `syncagent resolve ARGS` on DEV; it must exit 0.
resolve_on() {
    local dev=$1; shift
    "$SYNCAGENT" resolve "$@" --config "$T/$dev/syncagent.toml" >"$T/resolve.out" 2>&1 \
        || fail "syncagent resolve $* on $dev exited non-zero: $(cat "$T/resolve.out")"
}
# entries DEV NAME: the files and links at NAME, under NAME/ and beside NAME (NAME.*) on DEV
entries() { on "$1" data_list | grep -E "^$2(/|\.|\$)" | tr '\n' ' ' | sed 's/ $//'; }
# settled NAME BY [EXPECTED-ENTRIES]: on both devices the record is resolved by BY, the devices converge,
# and (when given) NAME's entries are EXPECTED
settled() {
    local n=$1 by=$2 d
    for d in phone watch; do
        wait_until record_status_is "$d" "$n" resolved
        assert_eq "$by" "$(conflict_field "$d" "$n" resolution by)" "$n: resolution.by on $d"
    done
    WAIT_TIMEOUT=30 wait_converged
    [ "$#" -ge 3 ] || return 0
    local want=$3
    for d in phone watch; do
        assert_eq "$want" "$(entries "$d" "$n")" "$n: what is at and beside it on $d"
    done
}

# ---- round 1: --all --keep newest, on the phone --------------------------------------------------------
make_conflicts dof-newest
for d in phone watch; do wait_until open_is "$d" 1; done
resolve_on phone --all --keep newest
settled dof-newest phone "dof-newest"
for d in phone watch; do
    same_file "$d" dof-newest "$X/dof-newest.phone" || fail "dof-newest on $d after --keep newest: not the phone's (newer) file"
done

# ---- round 2: one record per option -------------------------------------------------------------------
make_conflicts dof-phone dof-watch dof-both dof-with dof-delete
for d in phone watch; do wait_until open_is "$d" 5; done
id_of() { conflict_field phone "$1" id; }

resolve_on watch "$(id_of dof-phone)" --keep phone
settled dof-phone watch "dof-phone"
for d in phone watch; do same_file "$d" dof-phone "$X/dof-phone.phone" || fail "dof-phone on $d: not the phone's file"; done

resolve_on phone "$(id_of dof-watch)" --keep watch
settled dof-watch phone "dof-watch/a.txt dof-watch/sub/b.txt"
for d in phone watch; do
    same_file "$d" dof-watch/a.txt "$X/dof-watch.a" && same_file "$d" dof-watch/sub/b.txt "$X/dof-watch.b" \
        || fail "dof-watch/ on $d: not the watch's files"
done

resolve_on watch "$(id_of dof-both)" --keep both
settled dof-both watch
copy=$(cd "$(data_of phone)" && ls -d dof-both.conflict-* 2>/dev/null | head -n 1)
[[ "$copy" =~ ^dof-both\.conflict-phone-[0-9]{8}-[0-9]{6}$ ]] || fail "the file kept beside dof-both/ is named '$copy', expected dof-both.conflict-phone-YYYYMMDD-HHMMSS"
settled dof-both watch "$copy dof-both/a.txt dof-both/sub/b.txt"
for d in phone watch; do
    same_file "$d" "$copy" "$X/dof-both.phone" || fail "$copy on $d: not the phone's file"
    same_file "$d" dof-both/a.txt "$X/dof-both.a" || fail "dof-both/a.txt on $d: not the watch's file"
done

printf 'dof-with: written by hand\n' >"$X/dof-with.hand"
resolve_on phone "$(id_of dof-with)" --with "$X/dof-with.hand"
settled dof-with phone "dof-with"
for d in phone watch; do same_file "$d" dof-with "$X/dof-with.hand" || fail "dof-with on $d: not FILE's bytes"; done

resolve_on watch "$(id_of dof-delete)" --delete
settled dof-delete watch ""
for d in phone watch; do absent "$d" dof-delete || fail "something is still at dof-delete on $d"; done

# the end: nothing open anywhere, converged
for d in phone watch; do wait_until open_is "$d" 0; done
WAIT_TIMEOUT=30 wait_converged
stop_device watch
stop_device phone
