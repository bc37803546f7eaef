#!/usr/bin/env bash
# Issue 3, story 1: phone and watch, each the other's peer by the path of its store.git. In both start
# orders (phone then watch, then watch then phone), a file written on one appears on the other with
# the same bytes, a modification, a deletion and a rename propagate; once both are idle their mains
# point at the same commit and neither makes new commits.
source "$(dirname "$0")/lib.sh"

init_pair 50

# round ROUND FIRST SECOND: start FIRST then SECOND, change files on both, check the other side.
round() {
    local r=$1 first=$2 second=$3
    start_device "$first"
    # FIRST already has work of its own before SECOND comes up
    printf 'written on %s before %s started (round %s)\n' "$first" "$second" "$r" >"$T/early$r"
    cp "$T/early$r" "$(data_of "$first")/early$r.txt"
    on "$first" wait_until head_has "early$r.txt"
    start_device "$second"
    wait_until same_file "$second" "early$r.txt" "$T/early$r"

    # a new file each way, with bytes that are not text
    head -c 4096 /dev/urandom >"$T/p$r.bin"
    head -c 4096 /dev/urandom >"$T/w$r.bin"
    mkdir -p "$(data_of phone)/from-phone" "$(data_of watch)/from-watch"
    cp "$T/p$r.bin" "$(data_of phone)/from-phone/p$r.bin"
    cp "$T/w$r.bin" "$(data_of watch)/from-watch/w$r.bin"
    wait_until same_file watch "from-phone/p$r.bin" "$T/p$r.bin"
    wait_until same_file phone "from-watch/w$r.bin" "$T/w$r.bin"

    # a modification each way
    printf 'modified on watch\n' >>"$T/p$r.bin"
    cp "$T/p$r.bin" "$(data_of watch)/from-phone/p$r.bin"
    wait_until same_file phone "from-phone/p$r.bin" "$T/p$r.bin"
    printf 'modified on phone\n' >>"$T/w$r.bin"
    cp "$T/w$r.bin" "$(data_of phone)/from-watch/w$r.bin"
    wait_until same_file watch "from-watch/w$r.bin" "$T/w$r.bin"

    # a deletion on phone, a rename on watch
    rm "$(data_of phone)/early$r.txt"
    wait_until absent watch "early$r.txt"
    mv "$(data_of watch)/from-watch/w$r.bin" "$(data_of watch)/from-watch/renamed-w$r.bin"
    wait_until same_file phone "from-watch/renamed-w$r.bin" "$T/w$r.bin"
    wait_until absent phone "from-watch/w$r.bin"
    # and a rename on phone
    mv "$(data_of phone)/from-phone/p$r.bin" "$(data_of phone)/p$r-moved.bin"
    wait_until same_file watch "p$r-moved.bin" "$T/p$r.bin"
    wait_until absent watch "from-phone/p$r.bin"

    # idle: same commit on both, every file on both, and no new commits
    wait_converged
    local head pc wc
    head=$(main_of phone)
    pc=$(on phone commit_count) wc=$(on watch commit_count)
    sleep 3
    assert_eq "$head" "$(main_of phone)" "phone's main after 3 s idle (round $r)"
    assert_eq "$head" "$(main_of watch)" "watch's main after 3 s idle (round $r)"
    assert_eq "$pc" "$(on phone commit_count)" "phone's commit count after 3 s idle (round $r)"
    assert_eq "$wc" "$(on watch commit_count)" "watch's commit count after 3 s idle (round $r)"
    for d in phone watch; do
        assert_eq 0 "$(on "$d" status_field conflicts open)" "$d's open conflicts (round $r)"
        assert_eq true "$(peer_field "$d" reachable)" "$d's peer reachable (round $r)"
        assert_eq null "$(peer_field "$d" lastError)" "$d's peer lastError (round $r)"
        assert_ne null "$(peer_field "$d" lastSync)" "$d's peer lastSync (round $r)"
        assert_eq 0 "$(peer_field "$d" ahead)" "$d's peer ahead (round $r)"
        assert_eq 0 "$(peer_field "$d" behind)" "$d's peer behind (round $r)"
    done
    stop_device "$second"
    stop_device "$first"
}

round 1 phone watch
round 2 watch phone

# the data directories never got a .git, and the stores are sound
for d in phone watch; do
    assert_eq "" "$(find "$(data_of "$d")" -name .git)" ".git under $d's data directory"
    git --git-dir="$(store_of "$d")" fsck --strict --no-progress >"$T/fsck.out" 2>&1 \
        || fail "git fsck --strict on $d's store: $(cat "$T/fsck.out")"
done
