#!/usr/bin/env bash
# Issue 18.4: a merge killed while it was writing the data directory, where a file had changed
# during the write, is finished at the next start WITH the conflict record it would have had (not
# committed as a plain local change that hides the peer's version). The killed state is made
# exactly: the watch's commit is fetched into the phone's store, the phone's apply journal names it
# (as the agent writes it right before touching the data directory), and the file the merge must
# replace holds other bytes on disk.
source "$(dirname "$0")/lib.sh"

init_pair 50
sync_on() { on "$1" "$SYNCAGENT" sync --config "$T/$1/syncagent.toml" >>"$T/sync-$1.out" 2>&1 || true; }
printf 'base\n' >"$(data_of phone)/f.txt"
printf 'untouched\n' >"$(data_of phone)/g.txt"
sync_on phone; sync_on watch
same_file watch f.txt "$(data_of phone)/f.txt" || fail "f.txt did not reach the watch"

printf 'from the watch\n' >"$T/watch.want"; cp "$T/watch.want" "$(data_of watch)/f.txt"
printf 'also from the watch\n' >"$T/g.want"; cp "$T/g.want" "$(data_of watch)/g.txt"
sync_on watch   # commits on the watch
watch_main=$(main_of watch)
phone_main=$(main_of phone)
git --git-dir="$(store_of phone)" fetch -q "$(store_of watch)" "+refs/heads/main:refs/remotes/watch/main"
mkdir -p "$(store_of phone)/syncagent"
printf '%s %s watch\n' "$watch_main" "$phone_main" >"$(store_of phone)/syncagent/applying"
printf 'written on the phone during the merge\n' >"$T/phone.want"; cp "$T/phone.want" "$(data_of phone)/f.txt"

start_device phone
wait_until same_file phone g.txt "$T/g.want"   # the rest of the merge was finished
has_record() { [ "$(conflicts_json phone | python3 -c 'import json,sys; print(len([r for r in json.load(sys.stdin) if r["path"]=="f.txt"]))')" = 1 ]; }
wait_until has_record
conflicts_json phone >"$T/c.json"
python3 - "$T/c.json" "$(git --git-dir="$(store_of phone)" hash-object "$T/watch.want")" \
    "$(git --git-dir="$(store_of phone)" hash-object "$T/phone.want")" <<'PY' || fail "the record is wrong: $(cat "$T/c.json")"
import json, sys
r = [x for x in json.load(open(sys.argv[1])) if x["path"] == "f.txt"][0]
blobs = {v["device"]: v["blob"] for v in r["versions"]}
assert r["status"] == "open", r
assert blobs.get("watch") == sys.argv[2] and blobs.get("phone") == sys.argv[3], blobs
PY
same_file phone f.txt "$T/phone.want" || fail "the phone's bytes written during the merge were replaced"
[ ! -e "$(store_of phone)/syncagent/applying" ] || fail "the apply journal is still there"
start_device watch
wait_converged
wait_until same_file watch f.txt "$T/phone.want"
on watch "$SYNCAGENT" show "$(python3 -c 'import json,sys; print([r["id"] for r in json.load(open(sys.argv[1])) if r["path"]=="f.txt"][0])' "$T/c.json")" \
    --config "$T/watch/syncagent.toml" --version watch | cmp -s - "$T/watch.want" || fail "the watch's version is not kept in the record"
