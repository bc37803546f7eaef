#!/usr/bin/env bash
# Issue 3, story 3: conflicts settled with `syncagent resolve`, run on the device that did not detect
# them, with each option: --keep phone, --keep newest, --keep both (the other version is written beside
# the path as NAME.conflict-DEVICE-YYYYMMDD-HHMMSS.EXT and syncs), --with FILE, --delete, and a record
# named by its path. The other device sees the record resolved and holds the same bytes. Then `resolve`
# while that device's agent is stopped (it takes the store lock itself) and the settlement syncs when
# the agent runs again.
source "$(dirname "$0")/lib.sh"
X="$T/expected"; mkdir -p "$X"

other_of() { case "$1" in phone) echo watch ;; watch) echo phone ;; *) fail "unexpected device '$1'" ;; esac; }

init_pair 50
for i in 1 2 3 4 5 6 7; do
    printf 'k%s: the common version\n' "$i" >"$(data_of phone)/k$i.txt"
done
start_device phone
start_device watch
wait_until same_file watch k7.txt "$(data_of phone)/k7.txt"
wait_converged
stop_device watch

# both change k1..k7 while apart; the watch's versions are the newer ones
now=$(date +%s)
for i in 1 2 3 4 5 6 7; do
    printf 'k%s: as the phone has it\n' "$i" >"$X/k$i.phone"
    printf 'k%s: as the watch has it, a bit longer\n' "$i" >"$X/k$i.watch"
    put phone "k$i.txt" $((now - 100)) <"$X/k$i.phone"
done
on phone assert_head_matches_data
on phone wait_until pending_is 0
stop_device phone
for i in 1 2 3 4 5 6 7; do put watch "k$i.txt" $((now - 50)) <"$X/k$i.watch"; done
# the watch comes back first and merges the phone's store; then the phone
start_device watch
open_is() { [ "$(on "$1" status_field conflicts open)" = "$2" ]; }
wait_until open_is watch 7
start_device phone
wait_until open_is phone 7
wait_converged
for i in 1 2 3 4 5 6 7; do assert_eq watch "$(conflict_field phone "k$i.txt" current)" "k$i.txt: current (the newer version)"; done

# resolve_on DEV ARGS...: `syncagent resolve ARGS` on DEV, which must succeed.
resolve_on() {
    local dev=$1; shift
    "$SYNCAGENT" resolve "$@" --config "$T/$dev/syncagent.toml" >"$T/resolve.out" 2>&1 \
        || fail "syncagent resolve $* on $dev failed: $(cat "$T/resolve.out")"
}
# settled PATH BY FILE|-: on both devices the record is resolved by BY and PATH holds FILE (- : absent).
settled() {
    local path=$1 by=$2 file=$3 d
    for d in phone watch; do
        wait_until record_status_is "$d" "$path" resolved
        assert_eq "$by" "$(conflict_field "$d" "$path" resolution by)" "$path: resolution.by on $d"
        if [ "$file" = - ]; then wait_until absent "$d" "$path"; else wait_until same_file "$d" "$path" "$file"; fi
    done
    assert_eq "$(conflict_field phone "$path" resolution)" "$(conflict_field watch "$path" resolution)" "$path: resolution on both devices"
}
id_of() { conflict_field phone "$1" id; }
resolver_of() { other_of "$(conflict_field phone "$1" detectedBy)"; }

# --keep phone: the watch's (newer) version gives way on both devices
r=$(resolver_of k1.txt); resolve_on "$r" "$(id_of k1.txt)" --keep phone
settled k1.txt "$r" "$X/k1.phone"
assert_eq keep:phone "$(conflict_field watch k1.txt resolution strategy)" "k1.txt: resolution.strategy"

# --keep newest: the watch's
r=$(resolver_of k2.txt); resolve_on "$r" "$(id_of k2.txt)" --keep newest
settled k2.txt "$r" "$X/k2.watch"

# --keep both: the newer (watch) keeps the path, the phone's is written beside it, on both devices
r=$(resolver_of k3.txt); resolve_on "$r" "$(id_of k3.txt)" --keep both
settled k3.txt "$r" "$X/k3.watch"
copy_on() { (cd "$(data_of "$1")" && ls -d k3.conflict-* 2>/dev/null); }
copy_synced() { [ -n "$(copy_on phone)" ] && [ "$(copy_on phone)" = "$(copy_on watch)" ]; }
wait_until copy_synced
copy=$(copy_on phone)
[[ "$copy" =~ ^k3\.conflict-phone-[0-9]{8}-[0-9]{6}\.txt$ ]] || fail "conflict copy of k3.txt is named '$copy', expected k3.conflict-phone-YYYYMMDD-HHMMSS.txt"
for d in phone watch; do wait_until same_file "$d" "$copy" "$X/k3.phone"; done

# --with FILE: bytes from neither side
printf 'k4: merged by hand\n' >"$X/k4.hand"
r=$(resolver_of k4.txt); resolve_on "$r" "$(id_of k4.txt)" --with "$X/k4.hand"
settled k4.txt "$r" "$X/k4.hand"

# --delete
r=$(resolver_of k5.txt); resolve_on "$r" "$(id_of k5.txt)" --delete
settled k5.txt "$r" -

# a record named by its path
r=$(resolver_of k6.txt); resolve_on "$r" k6.txt --keep phone
settled k6.txt "$r" "$X/k6.phone"

# only k7 is still open, on both
for d in phone watch; do
    wait_until open_is "$d" 1
    assert_eq "k7.txt" "$(conflicts_json "$d" | python3 -c 'import json,sys; print(" ".join(r["path"] for r in json.load(sys.stdin)))')" "$d's open records"
done

# ---- resolve while the agent is stopped: under the store lock, synced at the next start ----------------
r=$(resolver_of k7.txt)
stop_device "$r"
resolve_on "$r" "$(id_of k7.txt)" --keep phone
same_file "$r" k7.txt "$X/k7.phone" || fail "resolve with the agent stopped did not put the phone's k7.txt in $r's data directory"
record_status_is "$r" k7.txt resolved || fail "resolve with the agent stopped: $r's record is not resolved"
start_device "$r"
settled k7.txt "$r" "$X/k7.phone"

# the end: nothing open, the same records everywhere, converged and idle
for d in phone watch; do wait_until open_is "$d" 0; done
wait_converged
records_agree() { conflicts_json phone --all >"$T/phone.all.json" && conflicts_json watch --all >"$T/watch.all.json" \
    && cmp -s "$T/phone.all.json" "$T/watch.all.json"; }
poll_until records_agree || fail "phone's and watch's records differ: $(diff "$T/phone.all.json" "$T/watch.all.json" | head -n 40)"
assert_eq 7 "$(python3 -c 'import json,sys; print(sum(r["status"] == "resolved" for r in json.load(open(sys.argv[1]))))' "$T/phone.all.json")" "resolved records"
head=$(main_of phone)
sleep 2
assert_eq "$head" "$(main_of phone)" "phone's main after 2 s idle"
assert_eq "$head" "$(main_of watch)" "watch's main after 2 s idle"
