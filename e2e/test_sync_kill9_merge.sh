#!/usr/bin/env bash
# Issue 3, kill -9 in the middle of merges: phone and watch both write files non-stop (so that each
# keeps fetching and merging the other's commits) and the phone's agent is killed with SIGKILL six
# times while this goes on, each time restarted at once. In the end nothing is lost: every file
# written on either side is on both with its bytes (and nothing else is), no conflict records, and
# `git fsck --strict` is clean on both stores.
source "$(dirname "$0")/lib.sh"
X="$T/expected"; mkdir -p "$X"   # every file either side wrote, as it should end up

init_pair 50
for d in phone watch; do switch_to "$d"; set_watch max_delay_ms 200; done
start_device phone
start_device watch

# writer DEVICE ROUND COUNT: write COUNT files into DEVICE's data dir (and their final bytes into $X),
# modifying some of its own earlier files as it goes
writer() {
    local dev=$1 round=$2 count=$3 i dir f
    dir="$dev-r$round"
    mkdir -p "$X/$dir" "$(data_of "$dev")/$dir"
    for i in $(seq 1 "$count"); do
        f="$dir/f$i.txt"
        printf '%s round %s file %s %s\n' "$dev" "$round" "$i" "$RANDOM$RANDOM" >"$X/$f"
        cp "$X/$f" "$(data_of "$dev")/$f.tmp" && mv "$(data_of "$dev")/$f.tmp" "$(data_of "$dev")/$f"
        if [ $((i % 10)) = 0 ]; then
            f="$dir/f$((i / 2)).txt"
            printf 'changed again at %s\n' "$i" >>"$X/$f"
            cp "$X/$f" "$(data_of "$dev")/$f.tmp" && mv "$(data_of "$dev")/$f.tmp" "$(data_of "$dev")/$f"
            sleep 0.05
        fi
    done
}

for round in 1 2 3; do
    writer phone "$round" 150 &
    pw=$!
    writer watch "$round" 150 &
    ww=$!
    track_pid "$pw"; track_pid "$ww"
    # kill once the phone has merged some of this round's files from the watch; restart at once, and
    # kill again later in the round
    for n in 5 60; do
        merged_some() { on phone head_has "watch-r$round/f$n.txt"; }
        switch_to phone
        wait_until merged_some
        kill9_device phone
        log "round $round: phone killed with -9 after merging watch-r$round/f$n.txt (watch writer still running: $(kill -0 "$ww" 2>/dev/null && echo yes || echo no))"
        start_device phone
    done
    wait "$pw" "$ww"
done

WAIT_TIMEOUT=30 wait_converged
for d in phone watch; do
    diff -r "$X" "$(data_of "$d")" >"$T/diff.out" 2>&1 || fail "$d's data directory is not what both sides wrote: $(head -n 20 "$T/diff.out")"
    assert_eq "[]" "$(conflicts_json "$d" --all | tr -d ' \n')" "$d's conflict records (the devices wrote different paths)"
    git --git-dir="$(store_of "$d")" fsck --strict --no-progress >"$T/fsck.out" 2>&1 \
        || fail "git fsck --strict on $d's store: $(cat "$T/fsck.out")"
done
on phone g merge-base --is-ancestor "$(main_of watch)" main || fail "the watch's main is not in the phone's"
stop_device phone
stop_device watch
for d in phone watch; do
    git --git-dir="$(store_of "$d")" fsck --strict --no-progress >"$T/fsck.out" 2>&1 \
        || fail "git fsck --strict on $d's store after stopping: $(cat "$T/fsck.out")"
    assert_eq "" "$(find "$(store_of "$d")" -name '*.lock')" "lock files left in $d's store"
done
