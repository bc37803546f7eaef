#!/usr/bin/env bash
# A one-shot `syncagent sync` (no agent running) with two peers keeps what it learned of both: right
# after it, `status` of the stopped agent shows each peer's lastSync as of that sync. (An agent notes a
# round that only moved a peer's times in memory and writes them at a clean stop; a one-shot sync must
# write them before it exits, or the second peer's times were those of the sync before.)
source "$(dirname "$0")/lib.sh"

init_device watch 50 "phone=$(store_of phone)"
init_device tablet 50 "phone=$(store_of phone)"
init_device phone 50 "watch=$(store_of watch)"
on phone add_peer tablet "$(store_of tablet)"

# epoch ISO: seconds since the epoch of an ISO 8601 time (fails on anything else)
epoch() { python3 -c '
import datetime, sys
print(int(datetime.datetime.fromisoformat(sys.argv[1].replace("Z", "+00:00")).timestamp()))' "$1"; }
sync_phone() {
    "$SYNCAGENT" sync --config "$T/phone/syncagent.toml" >"$T/sync.out" 2>&1 || fail "phone sync: $(cat "$T/sync.out")"
}
# The ledger's times are whole seconds: the second sync starts in a later second than the first.
next_second() { local s; s=$(date +%s); while [ "$(date +%s)" = "$s" ]; do sleep 0.05; done; }

printf 'first\n' >"$(data_of phone)/a.txt"
sync_phone
for p in watch tablet; do
    assert_ne null "$(peer_get phone "$p" lastSync)" "phone's lastSync of $p after its first one-shot sync"
done

next_second
printf 'second\n' >"$(data_of phone)/b.txt"
before=$(date +%s)
sync_phone
for p in watch tablet; do
    last=$(peer_get phone "$p" lastSync)
    t=$(epoch "$last") || fail "phone's lastSync of $p is not an ISO 8601 time: '$last'"
    assert_ge "$t" "$before" "phone's lastSync of $p (stopped) after a second one-shot sync that began at $before"
done
log "ok"
