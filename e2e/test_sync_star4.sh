#!/usr/bin/env bash
# Four devices in a star: the phone is the centre and peers with the watch, the tablet and the laptop;
# each of those peers only with the phone. With every agent stopped, all four edit the SAME path
# photos/p1.jpg differently (the tablet's edit is the newest) and each adds a file of its own. When
# all four run again: they converge (the same main, the same data directory), no agent dies, and every
# device holds exactly ONE open record for photos/p1.jpg, with the same id everywhere, holding the four
# versions (one per device, each with its bytes). `syncagent resolve photos/p1.jpg --keep newest` on
# the watch (a leaf) settles it on every device: the record resolved by the watch, zero open
# conflicts, the tablet's bytes everywhere, converged again.
source "$(dirname "$0")/lib.sh"
X="$T/expected"; mkdir -p "$X"

DEVICES=(phone watch tablet laptop)
LEAVES=(watch tablet laptop)
peers=()
for d in "${LEAVES[@]}"; do
    init_device "$d" 50 "phone=$(store_of phone)"
    peers+=("$d=$(store_of "$d")")
done
init_device phone 50 "${peers[@]}"

# all_converged: every leaf converged with the phone
all_converged() { local d; for d in "${LEAVES[@]}"; do converged phone "$d" || return 1; done; }
wait_all_converged() {
    poll_until all_converged && return 0
    local d
    for d in "${LEAVES[@]}"; do converged phone "$d" || wait_converged phone "$d"; done
}
alive_all() {
    local d
    for d in "${DEVICES[@]}"; do
        on "$d" agent_alive || fail "$d's agent (pid ${DEVICE_PID[$d]}) died: $(tail -n 5 "${DEVICE_LOG[$d]}")"
    done
    if grep -l -E 'Illegal instruction|Fatal error|Segmentation fault' "$T"/*/run-*.log "$T"/*/run-*.out >&2 2>/dev/null; then
        fail "a crash is reported in the logs above"
    fi
}

mkdir -p "$(data_of phone)/photos"
head -c 4000 /dev/urandom >"$X/p1.base"
cp "$X/p1.base" "$(data_of phone)/photos/p1.jpg"
printf 'common\n' >"$(data_of phone)/common.txt"
for d in "${DEVICES[@]}"; do start_device "$d"; done
for d in "${LEAVES[@]}"; do wait_until same_file "$d" photos/p1.jpg "$X/p1.base"; done
WAIT_TIMEOUT=45 wait_all_converged

# ---- the partition: all four edit photos/p1.jpg, and each adds its own file ------------------------------
for d in "${DEVICES[@]}"; do stop_device "$d"; done
now=$(date +%s)
declare -A AGE=([phone]=200 [watch]=150 [tablet]=20 [laptop]=100)   # the tablet's is the newest
for d in "${DEVICES[@]}"; do
    { head -c 1000 "$X/p1.base"; printf '\0edited on the %s\377' "$d"; head -c $((500 + ${#d})) /dev/urandom; } >"$X/p1.$d"
    put "$d" photos/p1.jpg $((now - AGE[$d])) <"$X/p1.$d"
    printf 'only made on the %s\n' "$d" >"$X/own.$d"
    put "$d" "own-$d.txt" $((now - AGE[$d])) <"$X/own.$d"
done
for d in "${DEVICES[@]}"; do start_device "$d"; done

WAIT_TIMEOUT=60 wait_all_converged
alive_all
for d in "${DEVICES[@]}"; do
    for o in "${DEVICES[@]}"; do wait_until same_file "$d" "own-$o.txt" "$X/own.$o"; done
done

# ---- one N-way record, the same on every device ---------------------------------------------------------
# record_summary NAME: "COUNT ID DEVICES" for the open records of photos/p1.jpg on NAME, DEVICES being
# the sorted devices of the versions with the blob each one holds
record_summary() {
    conflicts_json "$1" | python3 -c '
import json, sys
rs = [r for r in json.load(sys.stdin) if r["path"] == "photos/p1.jpg"]
print(len(rs), " ".join(r["id"] for r in rs),
      " ".join(sorted("%s:%s" % (v["device"], v["blob"]) for r in rs for v in r["versions"])))'
}
open_is() { [ "$(on "$1" status_field conflicts open)" = "$2" ]; }
for d in "${DEVICES[@]}"; do
    poll_until open_is "$d" 1 || fail "$d has $(on "$d" status_field conflicts open) open records, expected one (for photos/p1.jpg): $(conflicts_json "$d" | python3 -c 'import json,sys; print([(r["id"], r["path"], len(r["versions"])) for r in json.load(sys.stdin)])')"
done
records_agree() {
    local d first
    first=$(record_summary phone) || return 1
    for d in "${LEAVES[@]}"; do [ "$(record_summary "$d")" = "$first" ] || return 1; done
}
poll_until records_agree || true
summary=$(record_summary phone)
for d in "${DEVICES[@]}"; do
    s=$(record_summary "$d")
    assert_eq 1 "${s%% *}" "open records for photos/p1.jpg on $d ($s)"
    assert_eq "$summary" "$s" "the record of photos/p1.jpg on $d vs the phone"
done
id=$(cut -d' ' -f2 <<<"$summary")
want=""
for d in $(printf '%s\n' "${DEVICES[@]}" | sort); do want+="$d:$(git hash-object --stdin <"$X/p1.$d") "; done
assert_eq "${want% }" "$(cut -d' ' -f3- <<<"$summary")" "versions of the record (device:blob), one per device"
for d in "${DEVICES[@]}"; do
    "$SYNCAGENT" show "$id" --config "$T/watch/syncagent.toml" --version "$d" >"$T/show.out" 2>"$T/show.err" \
        || fail "show $id --version $d on the watch failed: $(cat "$T/show.err")"
    cmp -s "$T/show.out" "$X/p1.$d" || fail "show $id --version $d on the watch: not the $d's bytes"
done
# while open, every device holds the newest version (the tablet's)
for d in "${DEVICES[@]}"; do wait_until same_file "$d" photos/p1.jpg "$X/p1.tablet"; done

# ---- one resolution, on a leaf, settles it everywhere ----------------------------------------------------
"$SYNCAGENT" resolve photos/p1.jpg --keep newest --config "$T/watch/syncagent.toml" >"$T/resolve.out" 2>&1 \
    || fail "syncagent resolve photos/p1.jpg --keep newest on the watch failed: $(cat "$T/resolve.out")"
for d in "${DEVICES[@]}"; do
    WAIT_TIMEOUT=30 wait_until record_status_is "$d" "$id" resolved
    assert_eq watch "$(conflict_field "$d" "$id" resolution by)" "resolution.by on $d"
    wait_until open_is "$d" 0
done
WAIT_TIMEOUT=60 wait_all_converged
for d in "${DEVICES[@]}"; do
    same_file "$d" photos/p1.jpg "$X/p1.tablet" || fail "$d's photos/p1.jpg after resolve --keep newest is not the tablet's (newest) version"
    assert_eq 1 "$(conflicts_json "$d" --all | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')" "records on $d (open or resolved)"
    assert_eq "common.txt own-laptop.txt own-phone.txt own-tablet.txt own-watch.txt photos/p1.jpg" \
        "$(on "$d" data_list | tr '\n' ' ' | sed 's/ $//')" "$d's data directory"
done
alive_all
for d in "${DEVICES[@]}"; do stop_device "$d"; done
