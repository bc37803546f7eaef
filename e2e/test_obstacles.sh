#!/usr/bin/env bash
# Issue 18.1: something syncagent does not sync (a FIFO, a socket) sitting where a peer's change must
# go is never a deletion of the tracked path, on any device, in either order of syncs; the peer's
# version waits (status shows it, running or stopped, and `conflicts` lists it) and lands by itself
# when the obstacle goes away; the obstacle is never removed or replaced.
# Driven by one-shot `syncagent sync` with both agents stopped (the order of syncs is the test's),
# then by running agents.
source "$(dirname "$0")/lib.sh"

init_pair 50
sync_on() { on "$1" "$SYNCAGENT" sync --config "$T/$1/syncagent.toml" >"$T/sync-$1.out" 2>&1 || true; }
is_fifo() { [ -p "$(data_of "$1")/$2" ]; }
problems_of() { on "$1" status_field problems; }
has_problem_naming() { problems_of "$1" | grep -qF "$2"; }
no_problems() { [ "$(problems_of "$1")" = "[]" ]; }

# a first file so both stores have a common history
printf 'seed\n' >"$(data_of phone)/seed.txt"
sync_on phone; sync_on watch; sync_on phone
same_file watch seed.txt "$(data_of phone)/seed.txt" || fail "seed.txt did not reach the watch"

# round WRITER BLOCKED NAME: WRITER creates a regular file NAME while BLOCKED has a FIFO at NAME.
round() {
    local writer=$1 blocked=$2 name=$3
    printf 'made on %s\n' "$writer" >"$T/$name.want"
    cp "$T/$name.want" "$(data_of "$writer")/$name"
    mkfifo "$(data_of "$blocked")/$name"
    sync_on "$writer"; sync_on "$blocked"; sync_on "$blocked"; sync_on "$writer"
    sync_on "$blocked"; sync_on "$writer"
    is_fifo "$blocked" "$name" || fail "$blocked's FIFO at $name was removed or replaced"
    same_file "$writer" "$name" "$T/$name.want" || fail "$writer's new file $name is gone from its disk"
    for d in phone watch; do
        git --git-dir="$(store_of "$d")" cat-file blob "main:$name" 2>/dev/null | cmp -s - "$T/$name.want" \
            || fail "$d's main does not hold $writer's $name"
    done
    assert_eq "" "$(git --git-dir="$(store_of "$writer")" log --format=%s -- "$name" | grep -i delet || true)" \
        "commits deleting $name"
    # the blocked device says so while stopped, naming the path and what stands there
    has_problem_naming "$blocked" "$name" || fail "$blocked's stopped status does not name $name: $(problems_of "$blocked")"
    problems_of "$blocked" | grep -qF FIFO || fail "$blocked's status does not say a FIFO is in the way: $(problems_of "$blocked")"
    on "$blocked" "$SYNCAGENT" conflicts --config "$T/$blocked/syncagent.toml" >"$T/conflicts.out"
    grep -qF "$name" "$T/conflicts.out" || fail "conflicts on $blocked does not list $name: $(cat "$T/conflicts.out")"
    # a running agent says the same, and writes the file once the FIFO goes
    start_device "$blocked"
    wait_until has_problem_naming "$blocked" "$name"
    rm "$(data_of "$blocked")/$name"
    wait_until same_file "$blocked" "$name" "$T/$name.want"
    wait_until no_problems "$blocked"
    stop_device "$blocked"
}
round phone watch root
round watch phone other

# A FIFO put in place of a tracked file while the agent runs: not a deletion anywhere, and the
# file comes back when the FIFO goes.
start_device phone
start_device watch
printf 'tracked\n' >"$T/tracked.want"
cp "$T/tracked.want" "$(data_of watch)/tracked.txt"
wait_until same_file phone tracked.txt "$T/tracked.want"
# (renamed over it in one step: an rm, then a mkfifo later than the debounce, is a real deletion)
mkfifo "$T/fifo"; mv "$T/fifo" "$(data_of watch)/tracked.txt"
printf 'after the fifo\n' >"$(data_of watch)/later.txt"
wait_until same_file phone later.txt "$(data_of watch)/later.txt"
same_file phone tracked.txt "$T/tracked.want" || fail "the FIFO in place of tracked.txt deleted it on the phone"
on watch head_has tracked.txt || fail "the FIFO in place of tracked.txt deleted it from the watch's main"
# and a socket (made by python) in place of a file the phone then modifies
printf 'v2\n' >"$T/tracked.want"; cp "$T/tracked.want" "$(data_of phone)/tracked.txt"
wait_until has_problem_naming watch tracked.txt
is_fifo watch tracked.txt || fail "the merge replaced the watch's FIFO"
rm "$(data_of watch)/tracked.txt"
wait_until same_file watch tracked.txt "$T/tracked.want"
python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$(data_of phone)/sock"
printf 'sock file\n' >"$T/sock.want"; cp "$T/sock.want" "$(data_of watch)/sock.tmp.x" 2>/dev/null || true
rm -f "$(data_of watch)/sock.tmp.x"
cp "$T/sock.want" "$(data_of watch)/sock"
wait_until has_problem_naming phone sock
[ -S "$(data_of phone)/sock" ] || fail "the merge replaced the phone's socket"
same_file watch sock "$T/sock.want" || fail "the socket on the phone deleted the watch's sock"
rm "$(data_of phone)/sock"
wait_until same_file phone sock "$T/sock.want"
wait_converged
for d in phone watch; do
    git --git-dir="$(store_of "$d")" fsck --no-progress >"$T/fsck.out" 2>&1 || fail "git fsck on $d: $(cat "$T/fsck.out")"
done
