#!/usr/bin/env bash
# Long names: a file whose name is 250 bytes and one whose name is 255 bytes (the most Linux allows
# in one name) are created on the phone. Both reach the watch byte-exactly (names and bytes); files
# written after them sync too (the long names do not stop the sync); and neither data directory holds
# anything else (no temporaries or copies of the agent's own).
source "$(dirname "$0")/lib.sh"
X="$T/expected"; mkdir -p "$X"

init_pair 50
printf 'before the long names\n' >"$(data_of phone)/before.txt"
start_device phone
start_device watch
wait_until same_file watch before.txt "$(data_of phone)/before.txt"
wait_converged

n250=$(printf 'a%.0s' $(seq 1 246)).txt    # 250 bytes
n255=$(printf 'b%.0s' $(seq 1 251)).dat    # 255 bytes
assert_eq 250 "${#n250}" "length of the first name"
assert_eq 255 "${#n255}" "length of the second name"
printf 'a file with a 250-byte name\n' >"$X/n250"
head -c 5000 /dev/urandom >"$X/n255"
cp "$X/n250" "$(data_of phone)/$n250"
cp "$X/n255" "$(data_of phone)/$n255"
on phone wait_until head_has "$n255"
on phone wait_until head_has "$n250"

wait_until same_file watch "$n250" "$X/n250"
wait_until same_file watch "$n255" "$X/n255"

# files written after the long names still sync, both ways
printf 'after, from the phone\n' >"$X/after-phone"
printf 'after, from the watch\n' >"$X/after-watch"
cp "$X/after-phone" "$(data_of phone)/after-phone.txt"
wait_until same_file watch after-phone.txt "$X/after-phone"
cp "$X/after-watch" "$(data_of watch)/after-watch.txt"
wait_until same_file phone after-watch.txt "$X/after-watch"
printf 'changed after the long names\n' >"$X/before"
cp "$X/before" "$(data_of phone)/before.txt"
wait_until same_file watch before.txt "$X/before"
WAIT_TIMEOUT=30 wait_converged

# exactly these names, byte for byte, in both data directories and both stores
printf '%s\0' after-phone.txt after-watch.txt before.txt "$n250" "$n255" | sort -z >"$T/want"
for d in phone watch; do
    (cd "$(data_of "$d")" && find . -mindepth 1 -printf '%P\0' | sort -z) >"$T/have.$d"
    cmp -s "$T/want" "$T/have.$d" || fail "$d's data directory holds other names than the five files: $(tr '\0' '\n' <"$T/have.$d" | cut -c1-60 | tr '\n' ' ')"
    on "$d" head_files | sort -z >"$T/head.$d"
    cmp -s "$T/want" "$T/head.$d" || fail "$d's HEAD holds other names than the five files: $(tr '\0' '\n' <"$T/head.$d" | cut -c1-60 | tr '\n' ' ')"
    on "$d" agent_alive || fail "$d's agent died"
done
for d in phone watch; do
    assert_eq "[]" "$(conflicts_json "$d" --all | tr -d ' \n')" "$d's conflict records"
done
stop_device watch
stop_device phone
