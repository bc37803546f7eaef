#!/usr/bin/env bash
# The randomized convergence suite, short form: every regression seed in convergence-seeds.txt, then
# one fixed extra seed, each for 2 rounds on 3 devices, mesh and star in turn (e2e/convergence.py does
# the work and states the invariants; `make soak` is the long run), then one fixed seed with --policy
# (per-path [[rule]]s on every device, the last one receive-only; 2 rounds, 3 devices, mesh), then the
# hub seeds (5 devices through one bare repository) and one fixed seed with 12 devices through a hub. Exit
# status non-zero when any seed fails; each failure prints `FAILED seed=N round=R: reason`, the kept
# temp dir and the agents' logs. Every seed runs every time; e2e/run.sh gives this test 8 minutes.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)

: "${SYNCAGENT:?set SYNCAGENT to the syncagent binary (make e2e does)}"
case "$SYNCAGENT" in /*) ;; *) SYNCAGENT="$PWD/$SYNCAGENT" ;; esac
[ -x "$SYNCAGENT" ] || { echo "SYNCAGENT=$SYNCAGENT is not an executable file" >&2; exit 2; }
command -v python3 >/dev/null || { echo "python3 is needed by the convergence suite" >&2; exit 2; }

EXTRA_SEED=20261122
POLICY_SEED=20261123
MANY_SEED=20261125   # 12 devices through one hub, 2 rounds

# A line "N" is a plain seed; "N policy TOPOLOGY DEVICES ROUNDS" replays a seed of the --policy mode;
# "N hub DEVICES ROUNDS" a seed of --topology hub (every device meets the others through a bare repo).
seeds=()
policy=()
hub=()
while read -r seed kind rest; do
    case "$kind" in
        policy) policy+=("$seed $rest") ;;
        hub) hub+=("$seed $rest") ;;
        *) seeds+=("$seed") ;;
    esac
done < <(sed 's/#.*//' "$here/convergence-seeds.txt" | awk 'NF')
seeds+=("$EXTRA_SEED")
policy+=("$POLICY_SEED mesh 3 2")
hub+=("$MANY_SEED 12 2")

# Every seed runs, every time (a regression seed that is skipped proves nothing). A failing seed
# fails fast: quiescence gets 40 s here (the soak run gives 120 s).
start=$SECONDS
i=0
failed=()
for seed in "${seeds[@]}"; do
    topology=mesh
    [ $((i % 2)) = 0 ] || topology=star
    i=$((i + 1))
    python3 "$here/convergence.py" --binary "$SYNCAGENT" --seed "$seed" --rounds 2 --devices 3 \
        --topology "$topology" --timeout 40 --idle-seconds 1 || failed+=("$seed($topology)")
done
for line in "${policy[@]}"; do
    read -r seed topology devices rounds <<<"$line"
    python3 "$here/convergence.py" --binary "$SYNCAGENT" --policy --seed "$seed" --rounds "$rounds" \
        --devices "$devices" --topology "$topology" --timeout 40 --idle-seconds 1 \
        || failed+=("$seed($topology, policy)")
done

for line in "${hub[@]}"; do
    read -r seed devices rounds <<<"$line"
    python3 "$here/convergence.py" --binary "$SYNCAGENT" --seed "$seed" --rounds "$rounds" \
        --devices "$devices" --topology hub --timeout 40 --idle-seconds 1 || failed+=("$seed(hub)")
done

echo "convergence: ${#seeds[@]} seeds, ${#policy[@]} policy seeds and ${#hub[@]} hub seeds, $((SECONDS - start))s"
if [ "${#failed[@]}" -gt 0 ]; then
    echo "convergence: FAILED seeds: ${failed[*]}"
    exit 1
fi
