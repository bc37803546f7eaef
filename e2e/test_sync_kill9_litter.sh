#!/usr/bin/env bash
# kill -9 during a large checkout leaves no litter: the phone adds 2000 files of a few KB at once (one
# directory moved into its data dir), and the watch's agent is killed with SIGKILL as soon as the first
# of them appears in its data directory, i.e. while it writes the incoming change. Restarted, the watch
# converges with the phone: every one of the phone's files with its bytes, nothing deleted on either
# side, and no name containing "syncagent" (nor ".tmp") anywhere in either data directory. Two rounds,
# then a third in which the phone deletes the new directory again while the watch is down: the files
# the watch had half written must not come back as the watch's own (nor their temporaries stay).
source "$(dirname "$0")/lib.sh"
X="$T/expected"; mkdir -p "$X"
ROUNDS=${ROUNDS:-2}
FILES=${FILES:-2000}

init_pair 50
# (The third round deletes 2000 of ~6000 tracked files: a third, under the default safety hold.)
printf 'seed\n' >"$(data_of phone)/seed.txt"
start_device phone
start_device watch
wait_until same_file watch seed.txt "$(data_of phone)/seed.txt"
wait_converged

# stage DIR COUNT: COUNT files of 2-6 KB under $T/stage/DIR (in 10 subdirectories), copied to $X/DIR
stage() {
    python3 - "$T/stage/$1" "$2" <<'PY'
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    d = os.path.join(root, "s%d" % (i % 10))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%04d.bin" % i), "wb") as f:
        f.write(os.urandom(random.randint(2048, 6144)))
PY
    cp -a "$T/stage/$1" "$X/$1"
}
litter() { find "$(data_of "$1")" \( -name '*syncagent*' -o -name '*.tmp*' \) -printf '%P\n' 2>/dev/null; }
files_in() { find "$(data_of "$1")/$2" -type f 2>/dev/null | wc -l; }

# one_round N [gone]: the phone adds rN/ (FILES files); the watch is killed while it writes them; with
# "gone", the phone deletes rN/ again while the watch is down (so its restart must not take the files it
# had half written for its own new files); then the watch restarts and both must converge on exactly
# what the phone holds, with no litter.
one_round() {
    local round=$1 gone=${2:-} d="r$1" deadline n l dev
    stage "$d" "$FILES"
    mv "$T/stage/$d" "$(data_of phone)/$d"
    # kill the watch as soon as the first file of this round appears in its data directory
    switch_to watch
    deadline=$(( $(date +%s) + 60 ))
    until [ -n "$(find "$(data_of watch)/$d" -type f -print -quit 2>/dev/null)" ]; do
        agent_alive || fail "the watch's agent died before round $round's files arrived"
        [ "$(date +%s)" -lt "$deadline" ] || fail "no file of $d reached the watch within 60 s"
        sleep 0.01
    done
    kill9_device watch
    n=$(files_in watch "$d")
    log "round $round: watch killed with -9 with $n of $FILES files of $d written; litter then: $(litter watch | head -n 3 | tr '\n' ' ')"
    on phone wait_until head_has "$d/s9/f$(printf '%04d' $((FILES - 1))).bin"
    if [ -n "$gone" ]; then
        rm -rf "$(data_of phone)/$d" "$X/$d"
        on phone wait_until head_lacks "$d/s9/f$(printf '%04d' $((FILES - 1))).bin"
        on phone wait_until pending_is 0
    fi
    start_device watch
    WAIT_TIMEOUT=60 wait_converged
    for dev in phone watch; do
        l=$(litter "$dev")
        [ -z "$l" ] || fail "round $round: the agent's litter is left in $dev's data directory: $(head -n 5 <<<"$l" | tr '\n' ' ')"
        diff -r "$X" "$(data_of "$dev")" -x seed.txt >"$T/diff.out" 2>&1 \
            || fail "round $round: $dev's data directory is not exactly the files the phone wrote and kept: $(head -n 4 "$T/diff.out") ($(grep -c . "$T/diff.out") lines of diff -r)"
    done
}

for round in $(seq 1 "$ROUNDS"); do one_round "$round"; done
one_round $((ROUNDS + 1)) gone
stop_device watch
stop_device phone
for dev in phone watch; do
    git --git-dir="$(store_of "$dev")" fsck --no-progress >"$T/fsck.out" 2>&1 || fail "git fsck on $dev's store: $(head -n 10 "$T/fsck.out")"
done
