#!/usr/bin/env bash
# Photos copied while the copy still runs reach the peer: a batch of new files is due 250 ms after
# its first change with the files written and closed so far, without waiting for quiet. Here the
# quiet period is 3 s and the max delay 10 min, and a writer keeps a second file open, appending to
# it every 50 ms (the tree is never quiet): the first photo, copied in whole meanwhile, still reaches
# the watch. Once the writer closes the second, it follows whole. (A slice never takes an open file: DebouncerTests.
# A sync with a peer still commits whatever is pending first, an open file included, as it did
# before slices; the file is committed again, whole, at its close.)
source "$(dirname "$0")/lib.sh"

init_pair 3000
for d in phone watch; do (switch_to "$d"; set_watch max_delay_ms 600000); done
start_device phone
start_device watch
mkdir -p "$(data_of phone)/photos"
head -c 1500000 /dev/urandom >"$T/p1.jpg"
python3 - "$(data_of phone)/photos/p2.jpg" "$T/stop" "$T/p2.jpg" <<'PY' &
import os, sys, time
path, stop, copy = sys.argv[1:4]
written = b""
with open(path, "wb") as f:
    while not os.path.exists(stop):
        piece = os.urandom(16384)
        f.write(piece)
        f.flush()
        written += piece
        time.sleep(0.05)
open(copy, "wb").write(written)
PY
track_pid $!
# the writer has started (the tree is busy from now on), then the first photo is copied in whole
wait_until test -s "$(data_of phone)/photos/p2.jpg"
cp "$T/p1.jpg" "$(data_of phone)/photos/p1.jpg"
log "the closed photo reaches the watch while the other is still being written"
wait_until same_file watch photos/p1.jpg "$T/p1.jpg"
[ ! -e "$T/stop" ] || fail "the writer stopped early"
touch "$T/stop"
wait_until test -s "$T/p2.jpg"
log "closed, the second follows whole"
wait_until same_file watch photos/p2.jpg "$T/p2.jpg"
wait_converged
stop_device watch
stop_device phone
