#!/usr/bin/env bash
# Issue 18.2: empty directories sync like files: created, nested, filled, emptied, renamed, deleted,
# made while the agent was stopped, and in a conflict with a file of the same name. The store keeps
# an empty directory as an empty `.syncagent-keep` file in it (plain git reads it like .gitkeep);
# no data directory ever holds that file.
source "$(dirname "$0")/lib.sh"

init_pair 50
start_device phone
start_device watch

is_dir() { [ -d "$(data_of "$1")/$2" ] && [ ! -L "$(data_of "$1")/$2" ]; }
no_dir() { [ ! -e "$(data_of "$1")/$2" ]; }
marker_in() { git --git-dir="$(store_of "$1")" cat-file -e "main:$2/.syncagent-keep" 2>/dev/null; }
no_marker_in() { ! marker_in "$@"; }
no_marker_files() { [ -z "$(find "$(data_of phone)" "$(data_of watch)" -name .syncagent-keep)" ]; }

# (a file too, so that deleting every directory never empties a data directory: that is held)
printf 'stays\n' >"$(data_of phone)/stays.txt"
wait_until same_file watch stays.txt "$(data_of phone)/stays.txt"
mkdir "$(data_of phone)/inbox"
wait_until is_dir watch inbox
wait_until marker_in watch inbox
marker_in phone inbox || fail "phone's main lacks inbox/.syncagent-keep"

mkdir -p "$(data_of watch)/a/b/c"
wait_until is_dir phone a/b/c
wait_until marker_in phone a/b/c
no_marker_in phone a/b || fail "a/b has a marker while a/b/c is in it"

# filled: the file arrives and the marker goes, on both
printf 'mail\n' >"$(data_of watch)/inbox/x.txt"
wait_until same_file phone inbox/x.txt "$(data_of watch)/inbox/x.txt"
wait_until no_marker_in phone inbox
wait_until no_marker_in watch inbox
# emptied: the directory stays on both
rm "$(data_of phone)/inbox/x.txt"
wait_until absent watch inbox/x.txt
wait_until marker_in watch inbox
is_dir watch inbox || fail "the watch lost inbox when its last file was deleted on the phone"
is_dir phone inbox || fail "the phone lost inbox when its last file was deleted"

# renamed
mv "$(data_of phone)/inbox" "$(data_of phone)/outbox"
wait_until is_dir watch outbox
wait_until no_dir watch inbox
# deleted
rmdir "$(data_of watch)/outbox"
wait_until no_dir phone outbox
# a tree of empty directories deleted at once
rm -r "$(data_of phone)/a"
wait_until no_dir watch a
wait_converged
no_marker_files || fail "a .syncagent-keep file is in a data directory: $(find "$(data_of phone)" "$(data_of watch)" -name .syncagent-keep)"

# made while stopped: committed at start-up, synced
stop_device phone
mkdir -p "$(data_of phone)/offline/made"
start_device phone
wait_until is_dir watch offline/made
stop_device phone
stop_device watch

# An empty directory against a file of the same name: a type change, one record, settled.
mkdir "$(data_of phone)/drafts"
printf 'a file named drafts\n' >"$(data_of watch)/drafts"
sync_on() { on "$1" "$SYNCAGENT" sync --config "$T/$1/syncagent.toml" >"$T/sync-$1.out" 2>&1 || true; }
sync_on phone; sync_on watch; sync_on phone; sync_on watch
assert_eq "$(tree_of phone)" "$(tree_of watch)" "both trees after the dir/file conflict"
conflicts_json phone >"$T/c.json"
python3 - "$T/c.json" <<'PY' || fail "no single open type-changed record for drafts: $(cat "$T/c.json")"
import json, sys
recs = [r for r in json.load(open(sys.argv[1])) if r["path"] in ("drafts", "drafts/.syncagent-keep")]
assert len(recs) == 1 and recs[0]["status"] == "open", recs
PY
id=$(python3 -c 'import json,sys; print([r["id"] for r in json.load(open(sys.argv[1])) if r["path"].startswith("drafts")][0])' "$T/c.json")
# both disks agree on what drafts is
if is_dir phone drafts; then is_dir watch drafts || fail "phone holds drafts/ but the watch does not"
else same_file watch drafts "$(data_of phone)/drafts" || fail "the devices disagree on drafts"; fi
on watch "$SYNCAGENT" resolve "$id" --config "$T/watch/syncagent.toml" --keep phone >"$T/resolve.out" 2>&1 \
    || fail "resolve --keep phone: $(cat "$T/resolve.out")"
sync_on watch; sync_on phone; sync_on watch
is_dir phone drafts || fail "after keep phone, drafts is not a directory on the phone"
is_dir watch drafts || fail "after keep phone, drafts is not a directory on the watch"
assert_eq "$(tree_of phone)" "$(tree_of watch)" "both trees after the resolution"
no_marker_files || fail "a .syncagent-keep file is in a data directory"
for d in phone watch; do
    git --git-dir="$(store_of "$d")" fsck --no-progress >"$T/fsck.out" 2>&1 || fail "git fsck on $d: $(cat "$T/fsck.out")"
done
