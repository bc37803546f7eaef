#!/usr/bin/env bash
# SIGTERM and SIGINT commit the batch in hand before exiting 0: a change the agent has seen (it is
# pending in the debounce window) when the signal arrives is in HEAD as soon as the agent has exited.
# The debounce is long (30 s) and the file is still open for writing when the signal comes (a whole
# save after a quiet spell is committed at once, README "What gets committed"; an open file waits for
# the debounce), so that only the shutdown can have made that commit.
source "$(dirname "$0")/lib.sh"

init_agent phone 30000
set_watch max_delay_ms 60000

for sig in TERM INT; do
    run_agent
    exec 3>"$DATA/before-$sig.txt"
    printf 'last words before SIG%s\n' "$sig" >&3
    # the agent has seen the change and holds it in its batch
    wait_until pending_is 1
    head_lacks "before-$sig.txt" || fail "before-$sig.txt committed before the debounce ran out or the signal came"
    stop_agent "$sig"
    exec 3>&-
    head_file_matches "before-$sig.txt" || fail "before-$sig.txt is not in HEAD after SIG$sig (the batch in hand was not committed)"
    js=$(status_json)
    assert_eq false "$(json_get running <<<"$js")" "running after SIG$sig"
    assert_eq 0 "$(json_get pending <<<"$js")" "pending after SIG$sig"
done
assert_head_matches_data
