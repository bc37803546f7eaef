#!/usr/bin/env bash
# Issue 18.3: a conflict that arises after a resolution is a new record, on every device, whatever
# order the news arrives in. Three devices (one-shot syncs set the order): the phone resolves a
# conflict; before the watch and the tablet hear of it, they make a new conflict at the same path
# between themselves. The resolution must not close the new conflict: once everyone has synced,
# every device has the old record resolved and one new open record (the same id everywhere: the
# follow-up of the old one) holding
# the new versions; nothing either device wrote is lost.
source "$(dirname "$0")/lib.sh"

init_device phone 50 "watch=$(store_of watch)" "tablet=$(store_of tablet)"
init_device watch 50 "phone=$(store_of phone)" "tablet=$(store_of tablet)"
init_device tablet 50 "phone=$(store_of phone)" "watch=$(store_of watch)"
sync_on() { on "$1" "$SYNCAGENT" sync --config "$T/$1/syncagent.toml" "${@:2}" >>"$T/sync-$1.out" 2>&1 || true; }
everyone() { local i; for i in 1 2 3; do sync_on phone; sync_on watch; sync_on tablet; done; }

printf 'base\n' >"$(data_of phone)/p.txt"
everyone
for d in watch tablet; do same_file "$d" p.txt "$(data_of phone)/p.txt" || fail "p.txt did not reach $d"; done

# the first conflict: phone and watch
printf 'phone 1\n' >"$(data_of phone)/p.txt"
printf 'watch 1\n' >"$(data_of watch)/p.txt"
everyone
old=$(conflicts_json phone | python3 -c 'import json,sys; r=[x for x in json.load(sys.stdin) if x["path"]=="p.txt"]; assert len(r)==1, r; print(r[0]["id"])') \
    || fail "no single open record for p.txt on the phone"
for d in watch tablet; do
    assert_eq open "$(conflict_field "$d" "$old" status)" "the first record on $d"
done

# the phone settles it; the watch and the tablet do not hear of it yet
on phone "$SYNCAGENT" resolve "$old" --config "$T/phone/syncagent.toml" --keep phone >"$T/resolve.out" 2>&1 \
    || fail "resolve: $(cat "$T/resolve.out")"
# a new conflict between watch and tablet, synced only between them. A record orders two versions
# of one device by their commit time, which has whole seconds (a tie goes to the larger commit id):
# the watch's second version comes in a later second than its first, as a person's would.
later_second() { [ "$(date +%s)" -gt "$(git --git-dir="$(store_of watch)" log -1 --format=%at refs/heads/main)" ]; }
wait_until later_second
printf 'watch 2\n' >"$T/w2"; cp "$T/w2" "$(data_of watch)/p.txt"
printf 'tablet 2\n' >"$T/t2"; cp "$T/t2" "$(data_of tablet)/p.txt"
sync_on watch --peer tablet; sync_on tablet --peer watch; sync_on watch --peer tablet
# now the news of the resolution travels
everyone; everyone

for d in phone watch tablet; do
    conflicts_json "$d" --all >"$T/c-$d.json"
    python3 - "$T/c-$d.json" "$old" "$(git --git-dir="$(store_of "$d")" hash-object "$T/w2")" \
        "$(git --git-dir="$(store_of "$d")" hash-object "$T/t2")" >"$T/new-$d" <<'PY' || fail "$d's records are wrong: $(cat "$T/c-$d.json")"
import json, sys
recs, old, w2, t2 = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3], sys.argv[4]
mine = [r for r in recs if r["path"] == "p.txt"]
first = [r for r in mine if r["id"] == old]
assert len(first) == 1 and first[0]["status"] == "resolved", ("the first record", first)
new = [r for r in mine if r["status"] == "open"]
assert len(new) == 1, ("open records for p.txt", new)
blobs = {v["blob"] for v in new[0]["versions"]}
assert w2 in blobs and t2 in blobs, ("the new versions are not in the open record", new[0]["versions"])
print(new[0]["id"])
PY
done
assert_eq "$(cat "$T/new-phone")" "$(cat "$T/new-watch")" "the new record's id on phone and watch"
assert_eq "$(cat "$T/new-phone")" "$(cat "$T/new-tablet")" "the new record's id on phone and tablet"
assert_ne "$old" "$(cat "$T/new-phone")" "the new record's id"
assert_eq "$(tree_of phone)" "$(tree_of watch)" "phone and watch trees"
assert_eq "$(tree_of phone)" "$(tree_of tablet)" "phone and tablet trees"
