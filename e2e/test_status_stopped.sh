#!/usr/bin/env bash
# `status --json` while the agent is stopped tells the truth: after a conflict was opened and the
# devices synced, both agents are stopped; on each, conflicts.open is the real count (1, not 0) and the
# peer's lastSync is the time of the last sync the agent made (not null). After a restart with the peer
# unreachable (its store moved away, so no new sync can happen), lastSync is still that time and the
# conflict is still counted.
source "$(dirname "$0")/lib.sh"
X="$T/expected"; mkdir -p "$X"

init_pair 50
printf 'the common version\n' >"$(data_of phone)/note.txt"
printf 'no conflict here\n' >"$(data_of phone)/other.txt"
start_device phone
start_device watch
wait_until same_file watch note.txt "$(data_of phone)/note.txt"
wait_converged
stop_device watch

now=$(date +%s)
printf 'the phone edited it\n' >"$X/note.phone"
printf 'the watch edited it\n' >"$X/note.watch"
put phone note.txt $((now - 100)) <"$X/note.phone"
on phone assert_head_matches_data
on phone wait_until pending_is 0
put watch note.txt $((now - 50)) <"$X/note.watch"
start_device watch
open_is() { [ "$(on "$1" status_field conflicts open)" = "$2" ]; }
wait_until open_is watch 1
wait_until open_is phone 1
wait_converged
for d in phone watch; do
    other=$([ "$d" = phone ] && echo watch || echo phone)
    wait_until peer_is "$d" "$other" reachable true
    assert_ne null "$(peer_get "$d" "$other" lastSync)" "$d's lastSync of $other while running, after syncing"
done

# epoch ISO: seconds since the epoch of an ISO 8601 time (fails on anything else)
epoch() { python3 -c '
import datetime, sys
s = sys.argv[1].replace("Z", "+00:00")
print(int(datetime.datetime.fromisoformat(s).timestamp()))' "$1"; }

# ---- both stopped --------------------------------------------------------------------------------------
declare -A BEFORE=() STOPPED=()
for d in phone watch; do
    other=$([ "$d" = phone ] && echo watch || echo phone)
    BEFORE[$d]=$(peer_get "$d" "$other" lastSync)
    stop_device "$d"
    stopped_at=$(date +%s)
    js=$(on "$d" status_json) || fail "status --json on $d (stopped) failed"
    assert_eq false "$(json_get running <<<"$js")" "$d's running while stopped"
    assert_eq 1 "$(json_get conflicts open <<<"$js")" "$d's conflicts.open while stopped (one record is open)"
    last=$(peer_get "$d" "$other" lastSync)
    assert_ne null "$last" "$d's lastSync of $other while stopped (they synced before it stopped)"
    t=$(epoch "$last") || fail "$d's lastSync of $other while stopped is not an ISO 8601 time: '$last'"
    assert_ge "$t" "$(epoch "${BEFORE[$d]}")" "$d's lastSync while stopped vs while running (${BEFORE[$d]})"
    assert_le "$t" "$stopped_at" "$d's lastSync while stopped vs when it stopped"
    STOPPED[$d]=$last
done

# ---- the phone restarts with the watch unreachable: nothing new can sync ----------------------------------
mv "$(store_of watch)" "$T/watch-store.away"
start_device phone
wait_until peer_is phone watch reachable false
last=$(peer_get phone watch lastSync)
assert_ne null "$last" "phone's lastSync of the (unreachable) watch after a restart"
assert_eq "$(epoch "${STOPPED[phone]}")" "$(epoch "$last")" "phone's lastSync after a restart (no sync since: it was ${STOPPED[phone]})"
assert_eq 1 "$(on phone status_field conflicts open)" "phone's conflicts.open after a restart"

# the watch comes back: they sync again
mv "$T/watch-store.away" "$(store_of watch)"
start_device watch
wait_until peer_is phone watch reachable true
wait_converged
assert_eq 1 "$(on watch status_field conflicts open)" "watch's conflicts.open after everything restarted"
stop_device watch
stop_device phone

# ---- issue 18.6: a stopped status shows what a running agent would ----------------------------------
# Deletions the next start will hold (more than half of the tracked files at once), and when the
# agent last tried each peer.
assert_ne null "$(peer_get phone watch lastChecked)" "phone's lastChecked of the watch while stopped"
for i in $(seq 1 30); do printf '%s\n' "$i" >"$(data_of phone)/bulk-$i.txt"; done
start_device phone
wait_until on phone head_has bulk-30.txt
stop_device phone
rm "$(data_of phone)"/bulk-*.txt
problems=$(on phone status_field problems)
assert_contains "$problems" "send --deletes" "the stopped phone's problems (deletions the next start holds)"
# the data directory gone while stopped: said too
mv "$(data_of phone)" "$T/phone-data.away"
assert_contains "$(on phone status_field problems)" "is gone" "the stopped phone's problems (no data directory)"
mv "$T/phone-data.away" "$(data_of phone)"
# a device whose data directory was never made (nothing ever committed): told to make it, not to
# confirm deletions that never were (issue 46)
init_device fresh default
rmdir "$(data_of fresh)"
fresh=$(on fresh status_field problems)
assert_contains "$fresh" "does not exist, and nothing was ever committed from it" "a never-made data directory"
assert_contains "$fresh" "mkdir -p $(data_of fresh)" "the advice for a never-made data directory"
assert_not_contains "$fresh" "send --deletes" "a never-made data directory's advice"
