#!/usr/bin/env bash
# The table-driven two-device reconciliation suite: every row is (ancestor, phone's state, watch's
# state) at one path x: absent, a file, other bytes, an executable file, a symbolic link, an empty
# directory, a directory with files, and (on the devices only) a FIFO, an unreadable file and an
# unreadable directory (mode 000). Each row runs in both merge orders, each on a fresh pair driven by
# one-shot `syncagent sync` with the agents stopped; the agents run as `nobody` (root reads
# everything). e2e/reconcile_table.py holds the rows, the model of what `main` must hold, and every
# invariant checked (trees and disks agree, no byte lost, a record exactly where both sides changed x
# differently, obstacles never removed nor taken for deletions and named in status problems, git
# fsck); it prints a table of what failed.
#
# `make e2e` runs the short table (46 rows x 2 orders); FULL=1 (`make soak-reconcile`, part of
# `make soak`) runs the whole cross product: 5 ancestors x 10 x 10 states = 500 rows x 2 orders.
# One row: python3 e2e/reconcile_table.py --binary "$SYNCAGENT" --rows '^file/fifo/fileB$' --keep

# ---- KNOWN FAILING ROWS ---------------------------------------------------------------------------
# Rows the agent is known to get wrong, as "ancestor/phone/watch" (both orders) or
# "ancestor/phone/watch@pw" / "@wp" (one order). They are still run and reported, but do not fail
# the test. Empty unless someone decided that `make e2e` must be green despite them.
KNOWN_FAILING=(
)
# ----------------------------------------------------------------------------------------------------

source "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || fail "python3 is needed"
if [ "$(id -u)" = 0 ]; then
    command -v setpriv >/dev/null || fail "as root, setpriv (util-linux) is needed to run the agents as nobody"
    chmod 755 "$T"     # the rows' dirs under it belong to nobody
fi

args=()
for r in "${KNOWN_FAILING[@]}"; do args+=(--known-failing "$r"); done
[ "${FULL:-0}" != 1 ] || args+=(--full)
python3 "$(dirname "$0")/reconcile_table.py" --binary "$SYNCAGENT" --tmp "$T" ${JOBS:+--jobs "$JOBS"} "${args[@]}" \
    || fail "rows of the reconciliation table failed (the table above; their dirs are kept under $T)"
