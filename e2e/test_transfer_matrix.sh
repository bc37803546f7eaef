#!/usr/bin/env bash
# Transfers, phone -> watch, over every transport x content x batch size. Six watches, each pulling
# one way over one transport (rows):
#   path   phone-path's store.git by path: the object copy (Sources/Git/ObjectCopy.swift)
#   file   phone-file's, by file:// URL (the same copy); its big round is copied from a pack
#   git    phone-net's, through `git daemon` on loopback (git://)
#   ssh    phone-net's, through a real sshd on loopback (ssh://, a key of its own, known_hosts)
#   http   phone-net's, through lighttpd + git http-backend on loopback (smart HTTP)
#   hub    a bare repository by path that phone-net and the watch join with hub = true
# (the network rows share one phone: they receive the same commits). Three rounds, each one batch
# on every phone (one commit, or slices of 64 MiB for a bigger one: phone-path's round 3 is two):
#   1. one file (4,097 random bytes);
#   2. edges, over the copy's 64 loose objects: empty files, 1-byte files, 4,095/4,096/4,097 random
#      bytes, 1 MiB and 1 MiB + 1 of random bytes and of text (the agent reads, hashes and writes
#      out files over 1 MiB in 1 MiB chunks), compressible text, 70 small random files, an executable;
#   3. more than every batch limit in total. phone-path (the row that broke: 10,000 random files
#      never arrived): 64 small files that take the copy's loose slots, then 16 MiB - 1 and 16 MiB
#      random and one byte, so the copy's batch of blobs alone reaches exactly 32 MiB; 17 MiB random
#      (over the 16 MiB streaming limit: through the 1 MiB buffer), 17 MiB - 14 bytes of text (with
#      its "blob <size>\0" header the stream is exactly 17 full buffers), 10,000 files of 4 KiB
#      random bytes, empty, 1-byte, 4,096/4,097-byte files and some text, all in one commit. The
#      phone packs its loose objects (slices of 4,096 objects / 16 MiB, from 2 s after the commit)
#      while the watch copies. phone-file: its watch is stopped while it commits and packs, so the
#      copy reads a pack: text this time, 16 MiB - 1, 16 MiB and 2 bytes (the batch crosses 32 MiB by
#      one byte), 16 MiB + 1 (the smallest blob the phone keeps loose and the copy streams), 1,000
#      random files. phone-net: 1,000 random files, 2 MiB + 1 random, 16 MiB - 1 and 17 MiB of text
#      (packed and kept loose by the phone). Big random blobs over every transport: FULL=1.
# After each round, on every row: the watch's main is its phone's commit and a listing of both data
# directories (sha256, mode, path of every file) is the same. After round 3: the path and file
# watches hold a pack of exactly the three blobs of the first batch (the limit was crossed where
# this test says), `git fsck --full` is clean on every watch's store and on the hub, no watch's peer
# has a lastError, and no agent logged a warning or an error ("could not be read", "not found"...).
# Each round's timings (phone committed, watch had it) are logged.
# FULL=1 (`make soak-transfer`, part of `make soak`): every phone gets the heavy round 3 (12,000
# random files and six big random blobs, ~140 MiB), then a fourth heavy round written while the
# phones pack the third.
source "$(dirname "$0")/lib.sh"
FULL=${FULL:-0}
command -v python3 >/dev/null || fail "python3 is needed to make the content"
git daemon --help >/dev/null 2>&1 || fail "git daemon is not available (it ships with git)"
LIGHTTPD=$(command -v lighttpd || echo /usr/sbin/lighttpd)
[ -x "$LIGHTTPD" ] || fail "lighttpd is not installed (make installs it)"
HTTP_BACKEND=$(git --exec-path)/git-http-backend
[ -x "$HTTP_BACKEND" ] || fail "git http-backend is not at $HTTP_BACKEND"

ROWS=(path file git ssh http hub)
PHONES=(phone-path phone-file phone-net)
declare -A PHONE=([path]=phone-path [file]=phone-file [git]=phone-net [ssh]=phone-net [http]=phone-net [hub]=phone-net)
MiB=$((1 << 20))
STARTED=$(date +%s%3N)
elapsed() { awk -v ms=$(( $(date +%s%3N) - ${1:-$STARTED} )) 'BEGIN { printf "%.1f", ms / 1000 }'; }

# ---- content ------------------------------------------------------------------------------------------
# gen DIR < SPEC: make files under DIR, one line of SPEC each:
#   rand PATH SIZE         SIZE random bytes
#   text PATH SIZE         SIZE bytes of text (compresses ~10:1)
#   bytes PATH STRING      exactly STRING
#   many DIR SIZE COUNT    COUNT files of SIZE random bytes, DIR/NNN/rNNNNN.bin, 1,000 a directory
#   loose PREFIX COUNT     COUNT small distinct texts PREFIXNN.txt (they take the copy's loose slots)
#   exec PATH              a small executable script
cat >"$T/gen.py" <<'PY'
import os, sys
root = sys.argv[1]
def put(rel, data, mode=0o644):
    p = os.path.join(root, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "wb") as f:
        f.write(data)
    os.chmod(p, mode)
def text(size, seed):
    out, n = bytearray(), 0
    while len(out) < size:
        out += b"line %d of %s: the quick brown fox jumps over the lazy dog, again and again\n" % (n, seed.encode())
        n += 1
    return bytes(out[:size])
for line in open(0):
    w = line.split()
    if not w: continue
    kind, rel = w[0], w[1]
    if kind == "rand":
        size = int(w[2]); data = bytearray()
        while len(data) < size: data += os.urandom(min(size - len(data), 1 << 20))
        put(rel, bytes(data))
    elif kind == "text": put(rel, text(int(w[2]), rel))
    elif kind == "bytes": put(rel, w[2].encode())
    elif kind == "many":
        size, count = int(w[2]), int(w[3])
        for i in range(count): put("%s/%03d/r%05d.bin" % (rel, i // 1000, i), os.urandom(size))
    elif kind == "loose":
        for i in range(int(w[2])): put("%s%02d.txt" % (rel, i), b"loose slot %d of %s\n" % (i, rel.encode()))
    elif kind == "exec": put(rel, b"#!/bin/sh\necho synced\n", 0o755)
    else: sys.exit("gen: unknown kind " + kind)
PY
gen() { python3 "$T/gen.py" "$1"; }

# edges DIR [light]: 1-byte, around 4 KiB, text, an executable; unless light, also around 1 MiB (the
# agent reads, hashes and writes out files over 1 MiB in 1 MiB chunks) and 70 small random files
# (over the copy's 64 loose objects). Empty files: edges_empty.
edges() {
    local d=$1 i
    cat <<SPEC
bytes $d/one-a.txt a
bytes $d/one-dot.txt .
rand $d/r4095.bin 4095
rand $d/r4096.bin 4096
rand $d/r4097.bin 4097
text $d/t4096.txt 4096
text $d/t100k.txt 102400
exec $d/run.sh
SPEC
    [ "${2:-}" != light ] || return 0
    cat <<SPEC
text $d/t1m.txt $MiB
text $d/t1m1.txt $((MiB + 1))
rand $d/r1m.bin $MiB
rand $d/r1m1.bin $((MiB + 1))
SPEC
    for i in $(seq -w 1 70); do echo "rand $d/small/s$i.bin $(( (10#$i * 37) % 3000 + 1 ))"; done
}
edges_empty() { mkdir -p "$1/$2"; : >"$1/$2/empty-1"; : >"$1/$2/empty-2.txt"; }

# round_content PHONE N DIR: round N's content for PHONE, into DIR (then moved into its data dir)
round_content() {
    local phone=$1 n=$2 dir=$3 big=rand
    mkdir -p "$dir"
    case "$n" in
    1) echo "rand one.bin 4097" | gen "$dir" ;;
    2) edges e | gen "$dir"; edges_empty "$dir" e ;;
    3)
        if [ "$phone" = phone-net ] && [ "$FULL" != 1 ]; then
            { echo "many photos 4096 1000"
              echo "rand 1-r $((2 * MiB + 1))"
              echo "text 1-a $((16 * MiB - 1))"
              echo "text 1-e $((17 * MiB))"
            } | gen "$dir"
            return
        fi
        # 64 small objects take the copy's loose slots; then 16 MiB - 1 + 16 MiB of blobs in the
        # batch, and one more blob: 1 byte makes it exactly 32 MiB, 2 bytes 32 MiB + 1 (phone-file)
        [ "$phone" != phone-file ] || [ "$FULL" = 1 ] || big=text
        { echo "loose 0-l 64"
          echo "$big 1-a $((16 * MiB - 1))"
          echo "$big 1-b $((16 * MiB))"
          if [ "$phone" = phone-file ]; then echo "bytes 1-c cc"; else echo "bytes 1-c c"; fi
          if [ "$phone" = phone-file ] || [ "$FULL" = 1 ]; then echo "$big 1-f $((16 * MiB + 1))"; fi
          if [ "$phone" = phone-file ] && [ "$FULL" != 1 ]; then
              echo "many photos 4096 1000"
          else
              echo "rand 1-d $((17 * MiB))"
              echo "text 1-e $((17 * MiB - 14))"
              echo "many photos 4096 $([ "$FULL" = 1 ] && echo 12000 || echo 10000)"
              edges e2 light
              for i in 1 2 3; do echo "text texts/notes-$i.txt $((200000 * i))"; done
          fi
        } | gen "$dir"
        edges_empty "$dir" e2
        ;;
    4)
        # FULL only: a second heavy batch while the phone packs the third
        { echo "loose 3-l 64"; echo "rand 3-a $((16 * MiB - 1))"; echo "rand 3-d $((17 * MiB))"
          echo "many more 4096 6000"; } | gen "$dir"
        ;;
    esac
}

# ---- servers --------------------------------------------------------------------------------------------
# git daemon: every store under $T (the git row reads phone-net's)
git_port=$(free_port)
git daemon --reuseaddr --base-path="$T" --export-all --port="$git_port" --listen=127.0.0.1 >"$T/daemon.log" 2>&1 &
track_pid $!

# sshd with its own host key and one authorized key
S="$T/ssh"
start_sshd "$S"
ssh_port=$SSHD_PORT
user=$(id -un)

# lighttpd + git http-backend, no authentication (fetch only)
W="$T/www"; mkdir -p "$W/root"
http_port=$(free_port)
cat >"$W/lighttpd.conf" <<CONF
server.modules = ("mod_alias", "mod_setenv", "mod_cgi")
server.document-root = "$W/root"
server.port = $http_port
server.bind = "127.0.0.1"
server.errorlog = "$W/error.log"
alias.url = ("/git" => "$HTTP_BACKEND")
\$HTTP["url"] =~ "^/git" {
    cgi.assign = ("" => "")
    setenv.add-environment = ("GIT_PROJECT_ROOT" => "$T", "GIT_HTTP_EXPORT_ALL" => "")
}
CONF
"$LIGHTTPD" -D -f "$W/lighttpd.conf" >"$W/out.log" 2>&1 &
track_pid $!

HUB="$T/hub.git"
git init -q --bare "$HUB"

declare -A URL=(
    [path]="$(store_of phone-path)"
    [file]="file://$(store_of phone-file)"
    [git]="git://127.0.0.1:$git_port/phone-net/state/store.git"
    [ssh]="ssh://$user@127.0.0.1:$ssh_port$(store_of phone-net)"
    [http]="http://127.0.0.1:$http_port/git/phone-net/state/store.git"
    [hub]="$HUB"
)
# what the watch of a row calls its peer
peer_name() { if [ "$1" = hub ]; then echo hub; else echo "${PHONE[$1]}"; fi; }

# ---- devices ----------------------------------------------------------------------------------------------
for p in "${PHONES[@]}"; do init_device "$p" 100; done
join_hub phone-net "$HUB"
for r in "${ROWS[@]}"; do
    if [ "$r" = hub ]; then
        init_device watch-hub 100
        join_hub watch-hub "$HUB"
    else
        init_device "watch-$r" 100 "${PHONE[$r]}=${URL[$r]}"
        case "$r" in git|ssh|http) on "watch-$r" set_peer "${PHONE[$r]}" poll_seconds 1 ;; esac
    fi
done
on watch-ssh set_peer phone-net identity "\"$S/id_device\""
on watch-ssh set_peer phone-net known_hosts "\"$S/known_hosts\""
# A transfer that shows no progress for timeout_seconds is abandoned and retried, with a warning
# (which fails this test). The default, 20 s, was too short on a 2-core machine under this test's
# load: the copy's flush (packing a 32 MiB batch of random blobs) and a server preparing a pack
# went silent for longer, and the path, file and http rows were each abandoned once.
PEER_TIMEOUT=${PEER_TIMEOUT:-120}
for r in "${ROWS[@]}"; do on "watch-$r" set_peer "$(peer_name "$r")" timeout_seconds "$PEER_TIMEOUT"; done
on phone-net set_peer hub timeout_seconds "$PEER_TIMEOUT"

# ---- checks -------------------------------------------------------------------------------------------------
# listing NAME: "sha256 mode path" of every file in NAME's data directory, sorted
listing() {
    python3 - "$(data_of "$1")" <<'PY'
import hashlib, os, stat, sys
root = sys.argv[1].encode()
out = []
for d, dirs, files in os.walk(root):
    for n in files:
        p = os.path.join(d, n); st = os.lstat(p)
        h = hashlib.sha256(open(p, "rb").read()).hexdigest() if stat.S_ISREG(st.st_mode) else "link"
        out.append(b"%s %o %s" % (h.encode(), stat.S_IMODE(st.st_mode), os.path.relpath(p, root)))
sys.stdout.buffer.write(b"\n".join(sorted(out)) + b"\n")
PY
}
# same_listing ROW: the row's phone and watch hold the same files
same_listing() {
    listing "${PHONE[$1]}" >"$T/list.phone.$1" && listing "watch-$1" >"$T/list.watch.$1" \
        && cmp -s "$T/list.phone.$1" "$T/list.watch.$1"
}

files_in_data() { find "$(data_of "$1")" -type f | wc -l; }
files_in_head() { git --git-dir="$(store_of "$1")" ls-tree -r --name-only refs/heads/main 2>/dev/null | wc -l; }
# phone_committed PHONE: every file of its data directory is in its main
phone_committed() { [ -n "$(main_of "$1")" ] && [ "$(files_in_head "$1")" = "$(files_in_data "$1")" ]; }

# read_main NAME: the commit NAME's main names, into $REPLY; polled often, so no process is started
# while the reference is a loose file
read_main() {
    REPLY=""
    local f="$T/$1/state/store.git/refs/heads/main"
    if [ -f "$f" ]; then read -r REPLY <"$f" || true; fi
    [ -n "$REPLY" ] || REPLY=$(main_of "$1")
}
# arrived ROW: the row's phone made a commit since the round began and the watch's main is it
declare -A BEFORE=() COMMITS_BEFORE=()
arrived() {
    local p
    read_main "${PHONE[$1]}"; p=$REPLY
    [ -n "$p" ] && [ "$p" != "${BEFORE[${PHONE[$1]}]:-}" ] || return 1
    read_main "watch-$1"
    [ "$REPLY" = "$p" ]
}

agents_alive() {
    local d
    for d in "${!DEVICE_PID[@]}"; do
        [ -z "${DEVICE_PID[$d]}" ] || kill -0 "${DEVICE_PID[$d]}" 2>/dev/null || { DEAD="$d (pid ${DEVICE_PID[$d]})"; return 1; }
    done
}
# all_arrived ROW...: every row arrived (or an agent died: $DEAD says which)
all_arrived() {
    local r
    agents_alive || return 0
    for r in "$@"; do arrived "$r" || return 1; done
}

# time_row ROW ROUND: in the background, note when the phone's main moves and when the watch's main
# is the phone's (seconds since the round's content landed), for the log only
time_row() {
    local r=$1 n=$2 start p
    start=$(date +%s%3N)
    while :; do
        read_main "${PHONE[$r]}"; p=$REPLY
        if [ -n "$p" ] && [ "$p" != "${BEFORE[${PHONE[$r]}]:-}" ]; then
            [ -s "$T/time.$r.$n.phone" ] || elapsed "$start" >"$T/time.$r.$n.phone"
            read_main "watch-$r"
            if [ "$REPLY" = "$p" ]; then elapsed "$start" >"$T/time.$r.$n.watch"; return 0; fi
        fi
        sleep 0.1
    done
}
start_timers() { local n=$1 r; for r in "${ROWS[@]}"; do time_row "$r" "$n" & track_pid $!; done; }

# wait_rows ROUND: wait until every row's watch has its phone's commit and the same files
wait_rows() {
    local round=$1 r p line
    DEAD=""
    poll_until all_arrived "${ROWS[@]}" || true
    [ -z "$DEAD" ] || fail "round $round: agent $DEAD died"
    for r in "${ROWS[@]}"; do
        if ! arrived "$r"; then
            p=${PHONE[$r]}
            read_main "$p"; log "round $round, $r: $p's main $REPLY (before the round ${BEFORE[$p]:-none})"
            read_main "watch-$r"; log "round $round, $r: watch-$r's main $REPLY"
            log "round $round, $r: watch-$r's peers: $(on "watch-$r" status_field peers 2>/dev/null)"
            fail "round $round: the $r row did not arrive within ${WAIT_TIMEOUT}s"
        fi
    done
    for p in "${PHONES[@]}"; do
        poll_until phone_committed "$p" \
            || fail "round $round: $p's main has $(files_in_head "$p") files, its data directory $(files_in_data "$p")"
    done
    for r in "${ROWS[@]}"; do
        p=${PHONE[$r]}
        # (a watch moves main once the files are written: the same at once, or soon)
        if ! WAIT_TIMEOUT=60 poll_until same_listing "$r"; then
            log "round $round, $r: $p (<) / watch-$r (>) listings differ:"
            diff "$T/list.phone.$r" "$T/list.watch.$r" | grep '^[<>]' | head -n 20 >&2 || true
            fail "round $round: the $r row's data directories differ"
        fi
        poll_until test -s "$T/time.$r.$round.watch" || true
        line=$(printf 'round %s %-4s %6s files %4s MiB: %s committed at %5s s (%s commit(s)), watch-%s had it at %5s s' \
            "$round" "$r" "$(files_in_data "$p")" "$(du -sm --apparent-size "$(data_of "$p")" | cut -f1)" "$p" \
            "$(cat "$T/time.$r.$round.phone" 2>/dev/null || echo '?')" "$(( $(on "$p" commit_count) - ${COMMITS_BEFORE[$p]} ))" \
            "$r" "$(cat "$T/time.$r.$round.watch" 2>/dev/null || echo '?')")
        log "$line"
    done
}

# start_round N: make round N's content for each phone, then move it into every phone at once
start_round() {
    local n=$1 p pids=() pid
    for p in "${PHONES[@]}"; do round_content "$p" "$n" "$T/stage-$p-$n" & pids+=($!); done
    for pid in "${pids[@]}"; do wait "$pid" || fail "making round $n's content failed"; done
    for p in "${PHONES[@]}"; do
        COMMITS_BEFORE[$p]=$(on "$p" commit_count)
        BEFORE[$p]=$(main_of "$p")
    done
    for p in "${PHONES[@]}"; do
        mv -t "$(data_of "$p")" -- "$T/stage-$p-$n"/*
        rmdir "$T/stage-$p-$n"
    done
    start_timers "$n"
}

# ---- round 1: one file; the phones start with it (a store with a main to serve), then the watches ----
for p in "${PHONES[@]}"; do round_content "$p" 1 "$(data_of "$p")"; COMMITS_BEFORE[$p]=0; done
start_timers 1
for p in "${PHONES[@]}"; do start_device "$p"; done
daemon_up() { git ls-remote "${URL[git]}" >/dev/null 2>&1; }
http_up() { git ls-remote "${URL[http]}" >/dev/null 2>&1; }
committed_first() { local p; for p in "${PHONES[@]}"; do phone_committed "$p" || return 1; done; }
WAIT_TIMEOUT=60 wait_until committed_first
wait_until daemon_up
wait_until sshd_answers "$S"
wait_until http_up
for r in "${ROWS[@]}"; do start_device "watch-$r"; done
log "servers and 9 agents up in $(elapsed) s"
WAIT_TIMEOUT=60 wait_rows 1

# ---- round 2: edges over the loose limit ----------------------------------------------------------------------
start_round 2
WAIT_TIMEOUT=60 wait_rows 2

# ---- round 3: over every batch limit -----------------------------------------------------------------------------
# watch-file is away while phone-file commits and packs: then it copies from phone-file's packs.
stop_device watch-file
start_round 3
loose_count() { find "$(store_of "$1")/objects" -path '*/objects/[0-9a-f][0-9a-f]/*' -type f 2>/dev/null | wc -l; }
packed_all() { read_main phone-file; [ "$REPLY" != "${BEFORE[phone-file]}" ] && [ "$(loose_count phone-file)" -lt 256 ]; }
# (fast: a row that never arrives fails within run.sh's 180 s, saying what it saw)
BIG_WAIT=$([ "$FULL" = 1 ] && echo 900 || echo 110)
WAIT_TIMEOUT=$BIG_WAIT wait_until packed_all
log "phone-file: $(loose_count phone-file) loose objects left after packing; starting watch-file"
start_device watch-file
if [ "$FULL" = 1 ]; then
    # round 4 while the phones pack round 3 (and watch-file copies it). A phone whose big batch
    # went straight into packs may be left with too few loose objects to pack (under 256): it has
    # nothing to pack, so it is not waited for.
    packing() { [ "$(loose_count "$1")" -lt 256 ] || grep -q "packed [0-9]* loose objects" "${DEVICE_LOG[$1]}"; }
    for p in "${PHONES[@]}"; do WAIT_TIMEOUT=$BIG_WAIT wait_until packing "$p"; done
    start_round 4
    WAIT_TIMEOUT=$BIG_WAIT wait_rows 4
else
    WAIT_TIMEOUT=$BIG_WAIT wait_rows 3
    # One batch of ~106 MB, committed in slices of about 64 MiB (README "What gets committed"):
    # the files (1-a ... 1-e, 66 MiB in path order) in the first, the folders (the 10,000 photos)
    # in the second. `mv` moves its entries one by one: a pause between two on a loaded machine
    # makes a batch of its own (seen once: 3 commits), so 2 and up to 4 pass: never the whole
    # batch as one commit, never a commit per file.
    batch_commits=$(( $(on phone-path commit_count) - COMMITS_BEFORE[phone-path] ))
    [ "$batch_commits" -ge 2 ] && [ "$batch_commits" -le 4 ] \
        || fail "phone-path committed its 10,000-file batch as $batch_commits commit(s); expected 2 (or up to 4 on a loaded machine)"
fi
# The path and file rows crossed the batch limit where this test says: the watch holds a pack of
# exactly 1-a, 1-b and 1-c (written when the batch reached 32 MiB, path, or 32 MiB + 1, file).
# If this fails while the files arrived, the copy's limits or its order changed: move the sizes.
first_batch_packed() {
    local store want idx
    store=$(store_of "watch-$1")
    want=$(git --git-dir="$store" rev-parse main:1-a main:1-b main:1-c | sort | tr '\n' ' ')
    for idx in "$store"/objects/pack/*.idx; do
        [ "$(git show-index <"$idx" | awk '{ print $2 }' | sort | tr '\n' ' ')" = "$want" ] && return 0
    done
    return 1
}
# Or the copy took the phone's pack of those blobs whole (a pack mostly of objects the watch lacks
# goes through the indexer as it is): then the watch holds a pack of the very same name.
took_pack_whole() {
    local mine theirs
    mine=$(cd "$(store_of "watch-$1")/objects/pack" && ls -- *.pack 2>/dev/null | sort)
    theirs=$(cd "$(store_of "phone-$1")/objects/pack" && ls -- *.pack 2>/dev/null | sort)
    [ -n "$(comm -12 <(printf '%s\n' "$mine") <(printf '%s\n' "$theirs") | grep .)" ]
}
for r in path file; do
    if first_batch_packed "$r"; then
        log "watch-$r: the copy's batch ended at the 32 MiB limit"
    elif took_pack_whole "$r"; then
        log "watch-$r: took phone-$r's packs whole"
    else
        fail "watch-$r has no pack of exactly 1-a, 1-b and 1-c (the copy's batch did not end at the 32 MiB limit) and took no pack of phone-$r whole"
    fi
done
log "phone-path packed $(grep -c "packed [0-9]* loose objects" "${DEVICE_LOG[phone-path]}") slices so far"

# ---- the receiving stores, the hub, the logs ----------------------------------------------------------------------------
fsck_dir() { git --git-dir="$1" fsck --full --no-dangling --no-progress >"$T/fsck.$2" 2>&1; }
declare -A FSCK=()
for r in "${ROWS[@]}"; do fsck_dir "$(store_of "watch-$r")" "watch-$r" & FSCK[watch-$r]=$!; done
fsck_dir "$HUB" hub & FSCK[hub]=$!
for w in "${!FSCK[@]}"; do wait "${FSCK[$w]}" || fail "git fsck on $w: $(head -n 20 "$T/fsck.$w")"; done
for r in "${ROWS[@]}"; do
    poll_until peer_is "watch-$r" "$(peer_name "$r")" lastError null \
        || fail "watch-$r's lastError for $(peer_name "$r") is not null: $(on "watch-$r" status_json 2>&1 | head -c 2000)"
done
# stop every agent at once (each may be finishing a slice of packing), then check each exited 0
for d in "${!DEVICE_PID[@]}"; do [ -z "${DEVICE_PID[$d]}" ] || kill -TERM "${DEVICE_PID[$d]}"; done
all_exited() {
    local d state
    for d in "${!DEVICE_PID[@]}"; do
        [ -n "${DEVICE_PID[$d]}" ] || continue
        state=$(awk '{ print $3 }' "/proc/${DEVICE_PID[$d]}/stat" 2>/dev/null) || continue
        [ "$state" = Z ] || return 1
    done
}
AGENT_PID=""
WAIT_TIMEOUT=60 wait_until all_exited
for d in "${!DEVICE_PID[@]}"; do
    [ -n "${DEVICE_PID[$d]}" ] || continue
    rc=0; wait "${DEVICE_PID[$d]}" || rc=$?
    [ "$rc" = 0 ] || fail "$d exited with status $rc after SIGTERM"
    DEVICE_PID[$d]=""
done
for d in "${PHONES[@]}" "${ROWS[@]/#/watch-}"; do
    if grep -i -h -E "could not be read|not found" "$T/$d"/run-*.log >"$T/bad.log"; then
        fail "$d logged: $(head -n 5 "$T/bad.log")"
    fi
    if grep -h -E '^[^ ]+ (warning|error|critical) ' "$T/$d"/run-*.log >"$T/bad.log"; then
        fail "$d logged: $(head -n 5 "$T/bad.log")"
    fi
done
log "ok in $(elapsed) s"
