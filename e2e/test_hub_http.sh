#!/usr/bin/env bash
# A hub over smart HTTP: Debian's lighttpd, started by the test on loopback, runs `git http-backend`
# behind basic authentication. The phone, the watch, a car and a bike (credentials = a mode-0600 file holding
# user:password) converge through http://127.0.0.1:PORT/git/family.git. A wrong password, a
# credentials file others can read and a repository that does not exist each show in `status`
# naming the peer and what to do; the password is never in a log or in status.
source "$(dirname "$0")/lib.sh"
X="$T/expected"; mkdir -p "$X"
LIGHTTPD=$(command -v lighttpd || echo /usr/sbin/lighttpd)
[ -x "$LIGHTTPD" ] || fail "lighttpd is not installed (make installs it)"

W="$T/www"; mkdir -p "$W/root" "$T/srv"
git init -q --bare "$T/srv/family.git"
printf 'alice:s3cret-Pa55\n' >"$W/users"
port=$(free_port)
cat >"$W/lighttpd.conf" <<CONF
server.modules = ("mod_alias", "mod_auth", "mod_authn_file", "mod_setenv", "mod_cgi")
server.document-root = "$W/root"
server.port = $port
server.bind = "127.0.0.1"
server.errorlog = "$W/error.log"
alias.url = ("/git" => "/usr/lib/git-core/git-http-backend")
\$HTTP["url"] =~ "^/git" {
    cgi.assign = ("" => "")
    setenv.add-environment = ("GIT_PROJECT_ROOT" => "$T/srv", "GIT_HTTP_EXPORT_ALL" => "")
    auth.backend = "plain"
    auth.backend.plain.userfile = "$W/users"
    auth.require = ("" => ("method" => "basic", "realm" => "git", "require" => "valid-user"))
}
CONF
"$LIGHTTPD" -D -f "$W/lighttpd.conf" >"$W/out.log" 2>&1 &
track_pid $!
url="http://127.0.0.1:$port/git/family.git"
http_up() { git ls-remote "http://alice:s3cret-Pa55@127.0.0.1:$port/git/family.git" >/dev/null 2>&1; }
wait_until http_up

# device NAME CREDENTIALS [URL]
device() {
    init_device "$1" 50
    join_hub "$1" "${3:-$url}"
    on "$1" set_peer hub credentials "\"$2\""
}
printf 'alice:s3cret-Pa55\n' >"$T/good.credentials"; chmod 600 "$T/good.credentials"
printf 'alice:wrong\n' >"$T/wrong.credentials"; chmod 600 "$T/wrong.credentials"
printf 'alice:s3cret-Pa55\n' >"$T/open.credentials"; chmod 644 "$T/open.credentials"
GOOD=(phone watch car bike)
for d in "${GOOD[@]}"; do device "$d" "$T/good.credentials"; done
printf 'over http\n' >"$X/p"
cp "$X/p" "$(data_of phone)/p.txt"
head -c 30000 /dev/urandom >"$X/w"
cp "$X/w" "$(data_of watch)/w.bin"
for d in "${GOOD[@]}"; do start_device "$d"; done
for d in watch car bike; do wait_until same_file "$d" p.txt "$X/p"; done
for d in phone car bike; do wait_until same_file "$d" w.bin "$X/w"; done
hub_ok() { [ "$(peer_get phone hub reachable)" = true ] && [ "$(peer_get phone hub lastError)" = null ]; }
wait_until hub_ok
git --git-dir="$T/srv/family.git" fsck --no-progress >"$T/fsck.out" 2>&1 || fail "git fsck on the hub: $(cat "$T/fsck.out")"
log "four devices converged over http"

device tablet "$T/wrong.credentials"
device laptop "$T/open.credentials"
device desk "$T/good.credentials" "http://127.0.0.1:$port/git/nowhere.git"
for d in tablet laptop desk; do start_device "$d"; done
has_error() { [ "$(peer_get "$1" hub lastError)" != null ]; }
for d in tablet laptop desk; do wait_until has_error "$d"; done
e=$(peer_get tablet hub lastError)
assert_contains "$e" "authentication failed" "a wrong password"
assert_contains "$e" "alice" "which user was tried"
e=$(peer_get laptop hub lastError)
assert_contains "$e" "chmod 600 $T/open.credentials" "a credentials file others can read"
e=$(peer_get desk hub lastError)
assert_contains "$e" "not found" "a repository that does not exist"
for d in "${GOOD[@]}" tablet laptop desk; do
    if grep -q "s3cret" "$T/$d"/run-*.log "$T/$d"/run-*.out 2>/dev/null; then fail "$d's log shows the password"; fi
    if on "$d" status_json | grep -q "s3cret"; then fail "$d's status shows the password"; fi
done
for d in "${GOOD[@]}" tablet laptop desk; do stop_device "$d"; done
log "ok"
