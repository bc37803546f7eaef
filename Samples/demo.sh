#!/usr/bin/env bash
# `make demo`: one device, end to end, in a temporary directory.
set -euo pipefail
BIN=${SYNCAGENT:-$(cd "$(dirname "$0")/.." && pwd)/.build/release/syncagent}
DIR=$(mktemp -d /tmp/syncagent-demo.XXXXXX)
trap 'kill $AGENT 2>/dev/null || true; rm -rf "$DIR"' EXIT
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
cd "$DIR"

say "syncagent init --device phone --data phone/data --state phone/state --config phone.toml"
"$BIN" init --device phone --data phone/data --state phone/state --config phone.toml
sed -i 's/^# debounce_ms = 200/debounce_ms = 100/' phone.toml

say "syncagent run (in the background, logs in $DIR/agent.log)"
"$BIN" run --config phone.toml 2> agent.log & AGENT=$!
until "$BIN" status --config phone.toml --json 2>/dev/null | grep -q '"running":true'; do sleep 0.1; done

say "the app writes some data"
mkdir -p phone/data/notes
echo "buy milk" > phone/data/notes/today.txt
echo '{"theme": "dark"}' > phone/data/settings.json
ln -s notes/today.txt phone/data/latest
sleep 0.5
"$BIN" status --config phone.toml

say "an editor saves over a file (temporary + rename), then a file is renamed and one deleted"
echo "buy milk and eggs" > phone/data/notes/.today.txt.tmp && mv phone/data/notes/.today.txt.tmp phone/data/notes/today.txt
mv phone/data/settings.json phone/data/prefs.json
sleep 0.5

say "git --git-dir=phone/state/store.git log --stat   (plain git reads the store)"
git --git-dir=phone/state/store.git log --stat --format='%h %an %ad%n    %s' --date=iso | cat

say "stop with SIGTERM: the batch in hand is committed, exit status 0"
echo "written just before stopping" > phone/data/last.txt
kill -TERM $AGENT; wait $AGENT && echo "agent exited 0"
git --git-dir=phone/state/store.git show --stat --format='%s' HEAD | cat

say "agent log"
cat agent.log
