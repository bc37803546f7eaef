#!/usr/bin/env bash
# A file written over (`cp`, `>`, an app's save) is truncated first; on a busy machine the debounce
# may pass before its first write. The agent must not commit, nor send, the truncated file: a file
# written to and still open waits for its close (or max_delay_ms), while the rest of the batch goes.
# Here the writer truncates notes.txt, pauses until the other device holds a file it wrote meanwhile
# (many debounces), then writes and closes: the other device never sees an empty notes.txt, and the
# history holds no empty version.
source "$(dirname "$0")/lib.sh"
X="$T/expected"; mkdir -p "$X"
init_pair 50
# The hold ends with the close, not with time: max_delay_ms far past the test's pause.
for d in phone watch; do use_agent "$d"; set_watch max_delay_ms 600000; done
start_device phone
start_device watch

printf 'version 1 of the notes, a line a person wrote\n' >"$X/v1"
printf 'version 2 of the notes, written over version 1 by a slow writer\n' >"$X/v2"
printf 'written while notes.txt was open\n' >"$X/other"
cp "$X/v1" "$(data_of phone)/notes.txt"
wait_until same_file watch notes.txt "$X/v1"

python3 - "$(data_of phone)" "$(data_of watch)" "$X" <<'PY' || fail "the slow writer failed"
import filecmp, os, sys, time
phone, watch, x = sys.argv[1:4]
f = open(os.path.join(phone, "notes.txt"), "wb")  # O_TRUNC: the file is empty from here
with open(os.path.join(x, "other"), "rb") as src, open(os.path.join(phone, "other.txt"), "wb") as dst:
    dst.write(src.read())
deadline = time.monotonic() + 120
target = os.path.join(watch, "other.txt")
while not (os.path.exists(target) and filecmp.cmp(target, os.path.join(x, "other"), shallow=False)):
    if time.monotonic() > deadline:
        sys.exit("other.txt never reached the watch while notes.txt was open: the open file held back the batch")
    time.sleep(0.02)
with open(os.path.join(watch, "notes.txt"), "rb") as w, open(os.path.join(x, "v1"), "rb") as v1:
    if w.read() != v1.read():
        sys.exit("the watch's notes.txt changed while the phone's was still open (truncated, not yet written)")
with open(os.path.join(x, "v2"), "rb") as v2:
    f.write(v2.read())
f.close()
PY
wait_until same_file watch notes.txt "$X/v2"

switch_to phone
"$SYNCAGENT" history notes.txt --config "$CONFIG" --json >"$T/h.json" || fail "history --json failed"
python3 - "$T/h.json" "$(git hash-object "$X/v1")" "$(git hash-object "$X/v2")" <<'PY' || fail "notes.txt's history is wrong: $(cat "$T/h.json")"
import json, sys
h = json.load(open(sys.argv[1]))
blobs = [e.get("blob") for e in h]
assert "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391" not in blobs, f"an empty version was committed: {blobs}"
assert sorted(blobs) == sorted(sys.argv[2:4]), f"versions {blobs}, expected v1 and v2 only"
PY
assert_head_matches_data
stop_device phone
stop_device watch
