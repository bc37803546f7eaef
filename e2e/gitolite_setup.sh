# Sourced by the gitolite tests: Debian's gitolite3 set up as README's recipe says, behind the
# test's sshd ($S, $port, $user), with the notify-changes command, keys for phone, watch, car and
# stranger in $S, and the repository `family` ruled by $GITOLITE_CONF. Sets GL (gitolite's home),
# gl (its command) and url (the hub's ssh url).
GL="$T/gitolite"
mkdir -p "$GL"
ssh-keygen -q -t ed25519 -N '' -f "$S/admin"
for d in phone watch car stranger; do ssh-keygen -q -t ed25519 -N '' -f "$S/$d"; done
gl() { HOME="$GL" USER=git gitolite "$@"; }
gl setup -pk "$S/admin.pub" >"$T/gl-setup.out" 2>&1 || fail "gitolite setup: $(cat "$T/gl-setup.out")"
for d in phone watch car; do cp "$S/$d.pub" "$GL/.gitolite/keydir/$d.pub"; done
{ printf 'repo gitolite-admin\n    RW+ = admin\n\n'; cat "$GITOLITE_CONF"; } >"$GL/.gitolite/conf/gitolite.conf"
sed -i -e 's|^\( *\)# LOCAL_CODE *=> *"$ENV{HOME}/local",|\1LOCAL_CODE => "$ENV{HOME}/local",|' \
       -e "s|^\( *\)'writable',|&\n\1'notify-changes',|" "$GL/.gitolite.rc"
grep -q "^ *LOCAL_CODE => " "$GL/.gitolite.rc" && grep -q "'notify-changes'," "$GL/.gitolite.rc" \
    || fail "could not enable LOCAL_CODE and notify-changes in $GL/.gitolite.rc"
mkdir -p "$GL/local/commands"
install -m 755 "$SAMPLES/notify-changes" "$GL/local/commands/notify-changes"
gl compile >"$T/gl-compile.out" 2>&1 && gl trigger POST_COMPILE >>"$T/gl-compile.out" 2>&1 \
    || fail "gitolite compile: $(cat "$T/gl-compile.out")"
[ -d "$GL/repositories/family.git" ] || fail "gitolite made no family.git"
# This test's sshd logs in as the test's user: gitolite's home and syncagent come through the
# environment (on a real server they are the git account's own).
bindir=$(dirname "$SYNCAGENT")
sed "s|^command=|environment=\"HOME=$GL\",environment=\"PATH=$bindir:/usr/bin:/bin\",command=|" \
    "$GL/.ssh/authorized_keys" >"$S/authorized_keys"
info() { ssh -p "$port" -i "$S/phone" -o BatchMode=yes -o UserKnownHostsFile="$S/known_hosts" "$user@127.0.0.1" info 2>&1; }
gitolite_up() { info | grep -q 'R W	family'; }
wait_until gitolite_up
url="ssh://$user@127.0.0.1:$port/family"
