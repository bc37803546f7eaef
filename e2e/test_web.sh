#!/usr/bin/env bash
# Issue 47: `syncagent web` in a real browser (Debian's chromium, headless, driven by selenium from
# Debian's python3-selenium through chromedriver; e2e/web_browser.py). Two devices with a conflict
# on notes.txt and both agents running; the page is opened with the token from `syncagent web
# --url`, shows both devices, shows a live progress bar while 300 photos of 2 MB go from the phone
# to the watch, and settles the conflict by a click on "Keep phone's": both devices' data then hold
# the phone's version. Screenshots of each step are kept in .build/artifacts/test_web/. Then the
# refusals: no token, a foreign Host (DNS rebinding), a foreign or missing Origin on a change, and
# no answer on any address but loopback.
source "$(dirname "$0")/lib.sh"
for p in /usr/bin/chromium /usr/bin/chromedriver; do [ -x "$p" ] || fail "$p is needed (make deps installs chromium and chromium-driver)"; done
/usr/bin/python3 -c 'import selenium' 2>/dev/null || fail "python3-selenium is needed (make deps installs it)"
WEB=$(dirname "$SYNCAGENT")/syncagent-web
[ -x "$WEB" ] || fail "$WEB is not built (make build builds it beside syncagent)"
SHOTS=${WEB_SHOTS:-$(cd "$(dirname "$0")/.." && pwd)/.build/artifacts/test_web}
rm -rf "$SHOTS"

# a conflict on notes.txt: one-shot syncs with the agents stopped, the watch's edit the newer
init_pair 50
printf 'shopping: milk\n' >"$(data_of phone)/notes.txt"
on phone "$SYNCAGENT" sync --config "$T/phone/syncagent.toml" >/dev/null 2>&1 || fail "phone's first sync failed"
on watch "$SYNCAGENT" sync --config "$T/watch/syncagent.toml" >/dev/null 2>&1 || fail "watch's first sync failed"
printf 'shopping: milk, eggs (the phone)\n' >"$T/phone.version"
cp "$T/phone.version" "$(data_of phone)/notes.txt"
touch -d '-100 seconds' "$(data_of phone)/notes.txt"
on phone "$SYNCAGENT" sync --config "$T/phone/syncagent.toml" >/dev/null 2>&1 || fail "phone's second sync failed"
printf 'shopping: milk, bread (the watch)\n' >"$(data_of watch)/notes.txt"
on watch "$SYNCAGENT" sync --config "$T/watch/syncagent.toml" >/dev/null 2>&1 || true   # the conflict: a record
on phone "$SYNCAGENT" sync --config "$T/phone/syncagent.toml" >/dev/null 2>&1 || true
assert_eq 1 "$(on phone status_field conflicts open)" "open conflicts on the phone before the page"
start_device phone
start_device watch

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
URL=$("$SYNCAGENT" web --config "$T/phone/syncagent.toml" --config "$T/watch/syncagent.toml" --port "$PORT" --url) \
    || fail "syncagent web --url failed"
[[ "$URL" =~ ^http://127\.0\.0\.1:$PORT/\?token=[0-9a-f]{64}$ ]] || fail "syncagent web --url printed '$URL'"
TOKEN=${URL##*token=}
assert_eq 600 "$(stat -c %a "$T/phone/state/web-token")" "the token file's mode"
"$SYNCAGENT" web --config "$T/phone/syncagent.toml" --config "$T/watch/syncagent.toml" --port "$PORT" >"$T/web.log" 2>&1 &
track_pid $!
wait_until grep -q "syncagent web: open" "$T/web.log"

/usr/bin/python3 "$(dirname "$0")/web_browser.py" "$URL" "$(data_of phone)" "$(data_of watch)" 300 phone "$SHOTS" \
    >"$T/browser.out" 2>&1 || fail "in the browser: $(cat "$T/browser.out")"
sed 's/^/    /' "$T/browser.out" >&2
wait_until same_file watch notes.txt "$T/phone.version"
wait_until same_file phone notes.txt "$T/phone.version"
assert_eq 0 "$(on watch status_field conflicts open)" "open conflicts on the watch after the click"
assert_eq 300 "$(find "$(data_of watch)/photos" -type f | wc -l)" "photos on the watch"
for s in 1-devices 2-progress 3-conflict 4-resolved; do [ -s "$SHOTS/$s.png" ] || fail "no screenshot $s.png in $SHOTS"; done
log "browser: two devices, a live bar during 300 photos, a conflict settled by a click on both devices (screenshots in $SHOTS)"

# refusals
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
assert_eq 401 "$(code "http://127.0.0.1:$PORT/")" "the page without the token"
assert_eq 401 "$(code "http://127.0.0.1:$PORT/?token=0000")" "the page with a wrong token"
assert_eq 303 "$(code "http://127.0.0.1:$PORT/?token=$TOKEN")" "the page with the token (a redirect setting the cookie)"
SESSION=$(curl -s -D - -o /dev/null "http://127.0.0.1:$PORT/?token=$TOKEN" | tr -d '\r' | sed -n 's/^Set-Cookie: syncagent_web=\([0-9a-f]*\);.*/\1/p')
[ -n "$SESSION" ] && [ "$SESSION" != "$TOKEN" ] || fail "the cookie is not a session value of its own: '$SESSION'"
assert_eq 401 "$(code -H "Cookie: syncagent_web=$TOKEN" "http://127.0.0.1:$PORT/api/state")" "the token itself as a cookie"
C="Cookie: syncagent_web=$SESSION"
assert_eq 200 "$(code -H "$C" "http://127.0.0.1:$PORT/api/state")" "the state with the cookie"
assert_eq 403 "$(code -H "$C" -H "Host: attacker.example:$PORT" "http://127.0.0.1:$PORT/api/state")" "a foreign Host (DNS rebinding)"
body='{"agent":0,"id":"x","keep":"phone"}'
assert_eq 403 "$(code -H "$C" -H "Origin: http://attacker.example" -H 'Content-Type: application/json' -d "$body" "http://127.0.0.1:$PORT/api/resolve")" \
    "a change from another site"
assert_eq 403 "$(code -H "$C" -H 'Content-Type: application/json' -d "$body" "http://127.0.0.1:$PORT/api/resolve")" "a change without Origin"
assert_eq 401 "$(code -H "Origin: http://127.0.0.1:$PORT" -H 'Content-Type: application/json' -d "$body" "http://127.0.0.1:$PORT/api/resolve")" \
    "a change without the cookie"
listeners=$(ss -Hltn "sport = :$PORT" | awk '{print $4}')
assert_eq "127.0.0.1:$PORT" "$listeners" "the addresses the page listens on"
for addr in $(hostname -I 2>/dev/null); do
    case "$addr" in 127.*|::1) continue ;; esac
    [[ "$addr" == *:* ]] && addr="[$addr]"
    if curl -s --max-time 5 -o /dev/null "http://$addr:$PORT/"; then fail "the page answered on $addr"; fi
done
log "refused: no or a wrong token, a foreign Host, a foreign or missing Origin on a change; listening on 127.0.0.1 only"
