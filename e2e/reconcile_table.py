#!/usr/bin/env python3
"""Table-driven two-device reconciliation suite (in the spirit of Mutagen's reconcile tests).

Each row is (ancestor, phone's state, watch's state) at one path `x` of the data directory (for the
directory kinds, also the entries under it). For every row and for both merge orders (phone first,
watch first) a fresh pair is made:

  1. `syncagent init` phone and watch, each the other's peer by the path of its store.git; the
     agents are never started: every step is a one-shot `syncagent sync`;
  2. the ancestor is created on the phone (beside a file `keep.txt` that never changes, so that no
     data directory is ever emptied, which would be held as an accident), then sync phone, watch,
     phone so that both hold it;
  3. each device's data directory is changed to its state (a state equal to the ancestor is left
     untouched);
  4. syncs alternate (phone, watch, phone, ... or watch, phone, watch, ...) until both `main`s are the
     same commit for a whole round (at most MAX_SYNCS syncs).

Then every invariant below is checked and each violation is reported as one (check, detail) line:

  tree-agree      both `main` trees are the same (paths, modes, bytes);
  disk-vs-tree    each data directory is its `main` tree (regular files and symbolic links byte-equal
                  with the right mode; an empty directory is the empty `.syncagent-keep` file in the
                  tree and never that file on disk); the x subtree of a device holding something
                  syncagent does not sync is left out (see `obstacle`);
  litter          no `.syncagent-keep` nor `.syncagent-*.tmp` in a data directory;
  expected        `main` at x is what the reconciliation model below says (x.conflict-<device>-...
                  copies beside x are allowed only next to an open record at x);
  lost-bytes      every file's bytes and every link's target either device held in its state is on a
                  disk (at its path or a conflict copy beside x) or in a version of an open record;
  record          exactly one open record at x (or under x/) with an accepted kind, the same id on
                  both devices, versions of both devices, where both sides changed x differently;
                  no open record anywhere otherwise;
  record-current  the record's `current` device's version is what each data directory holds at x;
  obstacle        a FIFO, an unreadable file or an unreadable directory (mode 000) at x is still
                  there afterwards: same inode, type, mode and contents; never removed or replaced;
  obstacle-delete no commit of the device holding the obstacle deletes a tracked path under x;
  problem         when the merged `main` holds at x something other than the ancestor (a peer's
                  version the obstacle keeps out), its `status --json` problems name x (an empty
                  directory where an unreadable directory stands needs nothing written: exempt);
  converged       both `main`s end on the same commit and an extra round makes no new commit;
  sync-exit       every `syncagent sync` exits 0 (both peers are local paths: none can fail);
  fsck            `git fsck` is clean on both stores.

The reconciliation model (what `main` must hold at x; Mutagen-like, with the SPEC's conflict kinds):
an entry is absent, a file (mode, bytes), a link (target) or a directory (its children). A device
holding an obstacle contributes the ancestor (nothing it cannot read is a change). If both sides are
equal, that is the result (no record). If both are directories, their children are reconciled one
by one (a directory one side emptied and the other left alone ends empty; one that gained files on
one side keeps them). A directory one side deleted whole and the other only deleted in (emptied it,
or kept part of it) goes, with no record (Mutagen's partial deletion yielding to the full one).
Otherwise, the side equal to the ancestor takes the other's entry; when both
changed it differently, a record is expected: both-added (no ancestor), modified-deleted (one side
absent: the modification is what both disks hold), type-changed (file / link / directory differ),
both-modified; `main` holds either side's entry.

The agents must not run as root (root reads everything, so nothing would be unreadable): when this
runs as root, every `syncagent` runs as `nobody` through setpriv, on directories `nobody` owns (with
HOME and the XDG directories inside them); git and the checks run as root, which reads everything.
Every kind works this way; no kind is left out or faked.

Usage: reconcile_table.py --binary SYNCAGENT [--full] [--rows REGEX] [--jobs N] [--tmp DIR]
                          [--known-failing ROW[@ORDER]]... [--keep] [--list]
"""

import argparse
import concurrent.futures
import itertools
import json
import os
import pwd
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time

X = "x"
KEEP = ("keep.txt", b"keep: never changes\n")
MAX_SYNCS = 10
DEVICES = ("phone", "watch")

# ---- kinds ----------------------------------------------------------------------------------------

A = b"bytes A\n"
B = b"bytes B, longer than A\n"
LINK_TARGET = b"target-A"


def f(data, mode="100644"):
    return ("file", mode, data)


KIND_ENTRY = {
    "absent": None,
    "file": f(A),
    "fileB": f(B),
    "exec": f(A, "100755"),
    "symlink": ("link", LINK_TARGET),
    "emptydir": ("dir", {}),
    "dirfiles": ("dir", {"a": f(b"dir file a\n"), "sub": ("dir", {"b": f(b"dir file sub/b\n")})}),
}
SPECIAL = ("fifo", "unreadable", "unreadabledir")
ANCESTOR_KINDS = ("absent", "file", "symlink", "emptydir", "dirfiles")
SIDE_KINDS = ("absent", "file", "fileB", "exec", "symlink", "emptydir", "dirfiles") + SPECIAL

# The subset `make e2e` runs (both orders each): every side kind against every ancestor kind at least
# once, the special kinds against each normal change, and the directory/file/link type changes.
DEFAULT_ROWS = [
    # ancestor absent
    ("absent", "file", "absent"), ("absent", "file", "file"), ("absent", "file", "fileB"),
    ("absent", "exec", "file"), ("absent", "symlink", "file"), ("absent", "emptydir", "file"),
    ("absent", "dirfiles", "emptydir"), ("absent", "dirfiles", "symlink"),
    ("absent", "fifo", "file"), ("absent", "unreadable", "dirfiles"), ("absent", "unreadabledir", "emptydir"),
    # ancestor file
    ("file", "fileB", "file"), ("file", "fileB", "exec"), ("file", "absent", "fileB"),
    ("file", "absent", "absent"), ("file", "symlink", "fileB"), ("file", "emptydir", "dirfiles"),
    ("file", "dirfiles", "absent"), ("file", "fifo", "fileB"), ("file", "unreadable", "absent"),
    ("file", "unreadabledir", "symlink"), ("file", "exec", "exec"),
    # ancestor symlink
    ("symlink", "file", "symlink"), ("symlink", "absent", "fileB"), ("symlink", "emptydir", "exec"),
    ("symlink", "fifo", "absent"), ("symlink", "unreadable", "file"),
    # ancestor empty directory
    ("emptydir", "dirfiles", "emptydir"), ("emptydir", "dirfiles", "absent"), ("emptydir", "file", "absent"),
    ("emptydir", "absent", "fileB"), ("emptydir", "unreadabledir", "dirfiles"), ("emptydir", "fifo", "symlink"),
    # ancestor directory with files
    ("dirfiles", "emptydir", "dirfiles"), ("dirfiles", "absent", "dirfiles"), ("dirfiles", "file", "emptydir"),
    ("dirfiles", "absent", "emptydir"), ("dirfiles", "symlink", "absent"), ("dirfiles", "unreadabledir", "absent"),
    ("dirfiles", "fifo", "file"), ("dirfiles", "unreadable", "emptydir"),
    # more of the same kinds, each the shortest row for one way the agent was seen to fail
    ("emptydir", "dirfiles", "file"), ("dirfiles", "dirfiles", "fifo"), ("absent", "emptydir", "unreadable"),
    ("dirfiles", "file", "fileB"), ("dirfiles", "unreadabledir", "file"),
]


def all_rows():
    """The cross product: ancestor x phone x watch (special kinds only on sides)."""
    return [(a, p, w) for a in ANCESTOR_KINDS for p in SIDE_KINDS for w in SIDE_KINDS]


def row_id(row):
    return "/".join(row)


# ---- the model ------------------------------------------------------------------------------------

def etype(e):
    return "absent" if e is None else e[0]


def classify(anc, p, w):
    if anc is None:
        return {"both-added", "type-changed"} if etype(p) != etype(w) else {"both-added"}
    if p is None or w is None:
        return {"modified-deleted"}
    if etype(p) != etype(w):
        return {"type-changed"}
    if etype(p) != etype(anc):
        # (a directory replaced by files on both sides: git's base for x is no file: both-added)
        return {"type-changed", "both-modified", "both-added"}
    return {"both-modified"}


def only_deleted_in(e, anc):
    """e is the directory anc with entries deleted (maybe all of them), nothing made or changed."""
    if etype(e) != "dir" or etype(anc) != "dir":
        return False
    return all(c == anc[1].get(n) or only_deleted_in(c, anc[1].get(n)) for n, c in e[1].items())


def reconcile(anc, p, w, path):
    """(candidate results, [(path, accepted kinds)]) for one entry."""
    if p == w:
        return [p], []
    if etype(p) == "dir" and etype(w) == "dir":
        ac = anc[1] if etype(anc) == "dir" else {}
        names = sorted(set(ac) | set(p[1]) | set(w[1]))
        per_child, conflicts = [], []
        for n in names:
            cands, cs = reconcile(ac.get(n), p[1].get(n), w[1].get(n), path + "/" + n)
            per_child.append([(n, c) for c in cands])
            conflicts += cs
        results = []
        for combo in itertools.product(*per_child):
            results.append(("dir", {n: c for n, c in combo if c is not None}))
        return results, conflicts
    if p == anc:
        return [w], []
    if w == anc:
        return [p], []
    # Per-file semantics (git's, and the agent's by design; README "Conflicts"):
    # - the executable bit merges apart from the bytes: one side's mode change and the other's
    #   byte change both apply; two different modes with the same bytes: the executable bit wins;
    if etype(p) == "file" and etype(w) == "file" and etype(anc) in ("absent", "file", "dir"):
        fa = anc if etype(anc) == "file" else None  # (a directory before: for the file at x there was none)
        am, ab = (fa[1], fa[2]) if fa else (None, None)
        mode = p[1] if w[1] == am else w[1] if p[1] == am else ("100755" if "100755" in (p[1], w[1]) else p[1])
        if p[2] == w[2]:
            return [("file", mode, p[2])], []
        if fa is not None and p[2] == ab:
            return [("file", mode, w[2])], []
        if fa is not None and w[2] == ab:
            return [("file", mode, p[2])], []
    # - a whole deletion against a directory the other side only deleted in: the deletion wins.
    if (p is None and only_deleted_in(w, anc)) or (w is None and only_deleted_in(p, anc)):
        return [None], []
    # - a change against a deletion where a directory is involved (the ancestor or the change is a
    #   directory): the change wins on both disks, and no record is made (each file is its own path).
    if (p is None or w is None) and "dir" in (etype(anc), etype(p), etype(w)):
        return [p if w is None else w], []
    kinds = classify(anc, p, w)
    if p is None:
        return [w], [(path, kinds)]
    if w is None:
        return [p], [(path, kinds)]
    return [p, w], [(path, kinds)]


def flatten(e, path):
    """An entry as tree entries: {path: (mode, bytes)}; an empty directory is its marker file."""
    out = {}
    if e is None:
        return out
    if e[0] == "file":
        out[path] = (e[1], e[2])
    elif e[0] == "link":
        out[path] = ("120000", e[1])
    elif e[0] == "dir":
        if not e[1]:
            out[path + "/.syncagent-keep"] = ("100644", b"")
        for n, c in e[1].items():
            out.update(flatten(c, path + "/" + n))
    return out


def effective(kind, anc_kind):
    """What a side contributes: an obstacle contributes the ancestor."""
    return KIND_ENTRY[anc_kind] if kind in SPECIAL else KIND_ENTRY[kind]


def expectation(row):
    anc_kind, pk, wk = row
    anc = KIND_ENTRY[anc_kind]
    cands, conflicts = reconcile(anc, effective(pk, anc_kind), effective(wk, anc_kind), X)
    return anc, cands, conflicts


# ---- helpers --------------------------------------------------------------------------------------

def under_x(path):
    return path == X or path.startswith(X + "/")


def beside_x(path):
    return re.fullmatch(re.escape(X) + r"\.conflict-[A-Za-z0-9_-]+-\d{8}-\d{6}(-\d+)?", path) is not None


def describe(m):
    """A short text for the entries of a flat map under x."""
    items = {p: v for p, v in m.items() if under_x(p)}
    if not items:
        return "absent"
    if X in items and len(items) == 1:
        mode, data = items[X]
        if mode == "120000":
            return "link->%s" % data.decode(errors="replace")
        return "file %s %r" % (mode, data.decode(errors="replace"))
    parts = []
    for p in sorted(items):
        mode, data = items[p]
        rel = p[len(X) + 1:]
        if rel.endswith(".syncagent-keep"):
            parts.append((rel[:-len(".syncagent-keep")] or "./") + "(empty)")
        else:
            parts.append(rel + ("@" if mode == "120000" else "*" if mode == "100755" else ""))
    return "dir{%s}" % ",".join(parts)


def describe_all(m):
    extra = sorted(p for p in m if not under_x(p) and p != KEEP[0])
    s = describe(m)
    if extra:
        s += " +" + ",".join(extra)
    if KEEP[0] not in m:
        s += " (keep.txt missing)"
    return s


class Job:
    def __init__(self, binary, row, order, base, as_user):
        self.binary = binary
        self.row = row
        self.order = order          # "pw": phone syncs first; "wp": watch first
        self.as_user = as_user      # (uid, gid) or None
        self.dir = tempfile.mkdtemp(prefix="%s.%s." % (row_id(row).replace("/", "-"), order), dir=base)
        self.failures = []
        self.notes = []
        self.observed = {}
        self.cmdlog = open(os.path.join(self.dir, "commands.log"), "w")
        self.env = dict(os.environ)
        home = os.path.join(self.dir, "home")
        self.env.update(HOME=home, XDG_CONFIG_HOME=home + "/.config", XDG_STATE_HOME=home + "/.local/state",
                        XDG_RUNTIME_DIR=home + "/run", GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null",
                        LC_ALL="C")
        for k in ("SYNCAGENT_CONFIG", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
            self.env.pop(k, None)
        os.makedirs(home + "/run", mode=0o700)
        if as_user:
            os.chmod(self.dir, 0o755)
            self.chown_tree(self.dir)

    def fail(self, check, detail):
        self.failures.append((check, detail))

    # paths
    def data(self, d):
        return os.path.join(self.dir, d, "data")

    def store(self, d):
        return os.path.join(self.dir, d, "state", "store.git")

    def config(self, d):
        return os.path.join(self.dir, d, "syncagent.toml")

    def chown_tree(self, top):
        if not self.as_user:
            return
        uid, gid = self.as_user
        os.lchown(top, uid, gid)
        for root, dirs, files in os.walk(top):
            for n in dirs + files:
                os.lchown(os.path.join(root, n), uid, gid)

    def agent(self, *args, check=False):
        cmd = [self.binary] + list(args)
        if self.as_user:
            cmd = ["setpriv", "--reuid=%d" % self.as_user[0], "--regid=%d" % self.as_user[1], "--clear-groups", "--"] + cmd
        for attempt in range(120):
            r = subprocess.run(cmd, env=self.env, capture_output=True, timeout=120)
            # the binary being replaced by a build right now: wait for it (up to a minute)
            if r.returncode in (126, 127) and (b"Text file busy" in r.stderr or b"No such file" in r.stderr):
                time.sleep(0.5)
                continue
            break
        self.cmdlog.write("$ %s\n-> %d\n%s%s" % (" ".join(args), r.returncode, r.stdout.decode(errors="replace"),
                                                r.stderr.decode(errors="replace")))
        if check and r.returncode != 0:
            raise RuntimeError("syncagent %s exited %d: %s" % (" ".join(args), r.returncode, r.stderr.decode(errors="replace")[-500:]))
        return r

    def git(self, d, *args, input=None):
        r = subprocess.run(["git", "-c", "safe.directory=*", "--git-dir=" + self.store(d)] + list(args),
                           env=self.env, capture_output=True, input=input, timeout=120)
        return r

    def sync(self, d):
        r = self.agent("sync", "--config", self.config(d))
        if r.returncode != 0:
            out = (r.stdout + r.stderr).decode(errors="replace").strip()
            if r.returncode < 0 or "Fatal error" in out or "Crash" in out:
                # a crash: its reason and the crashed thread's first frames are at the top of the
                # backtrace, not at its end (CI keeps only this message, not the row's dir)
                out = out[:3000]
            else:
                out = out[-300:]
            self.fail("sync-exit", "%s: `syncagent sync` exited %d: %s" % (d, r.returncode, out))
        return r

    def main_of(self, d):
        r = self.git(d, "rev-parse", "-q", "--verify", "refs/heads/main")
        return r.stdout.decode().strip() if r.returncode == 0 else None

    def tree_map(self, d, rev="refs/heads/main"):
        """{path: (mode, bytes)} of a commit's tree (every blob read)."""
        r = self.git(d, "ls-tree", "-r", "-z", rev)
        if r.returncode != 0:
            return {}
        entries = []
        for rec in r.stdout.split(b"\0"):
            if not rec:
                continue
            meta, path = rec.split(b"\t", 1)
            mode, typ, oid = meta.decode().split()
            entries.append((path.decode("utf-8", "surrogateescape"), mode, typ, oid))
        blobs = self.read_blobs(d, [e[3] for e in entries if e[2] == "blob"])
        return {p: (mode, blobs.get(oid, b"<not a blob: %s>" % typ.encode())) for p, mode, typ, oid in entries}

    def read_blobs(self, d, oids):
        if not oids:
            return {}
        r = self.git(d, "cat-file", "--batch", input=("\n".join(oids) + "\n").encode())
        out, i, res = r.stdout, 0, {}
        for oid in oids:
            nl = out.index(b"\n", i)
            header = out[i:nl].decode().split()
            i = nl + 1
            if len(header) < 3 or header[1] == "missing":
                continue
            size = int(header[2])
            res[oid] = out[i:i + size]
            i += size + 1
        return res

    def object_type(self, d, oid):
        r = self.git(d, "cat-file", "-t", oid)
        return r.stdout.decode().strip() if r.returncode == 0 else None

    # the data directory
    def disk_map(self, d, skip_x=False):
        """{path: (mode, bytes)} of a data directory, as the tree should hold it, and the litter found."""
        root = self.data(d)
        out, litter, others = {}, [], []

        def walk(rel):
            full = os.path.join(root, rel) if rel else root
            names = sorted(os.listdir(full))
            kept = 0
            for n in names:
                p = (rel + "/" + n) if rel else n
                if skip_x and under_x(p):
                    kept += 1
                    continue
                if n == ".syncagent-keep" or (n.startswith(".syncagent-") and n.endswith(".tmp")):
                    litter.append(p)
                fp = os.path.join(root, p)
                st = os.lstat(fp)
                if stat.S_ISLNK(st.st_mode):
                    out[p] = ("120000", os.fsencode(os.readlink(fp)))
                elif stat.S_ISREG(st.st_mode):
                    with open(fp, "rb") as fh:
                        out[p] = ("100755" if st.st_mode & 0o100 else "100644", fh.read())
                elif stat.S_ISDIR(st.st_mode):
                    walk(p)
                else:
                    others.append(p)
                kept += 1
            if rel and kept == 0:
                out[rel + "/.syncagent-keep"] = ("100644", b"")
        walk("")
        return out, litter, others


# ---- states on disk -------------------------------------------------------------------------------

def remove_path(p):
    if os.path.islink(p) or (os.path.exists(p) and not os.path.isdir(p)):
        os.unlink(p)
    elif os.path.isdir(p):
        for root, dirs, _ in os.walk(p):
            for n in dirs:
                os.chmod(os.path.join(root, n), 0o755)
        os.chmod(p, 0o755)
        shutil.rmtree(p)
    elif os.path.lexists(p):
        os.unlink(p)


def write_entry(p, e):
    if e is None:
        return
    if e[0] == "file":
        with open(p, "wb") as fh:
            fh.write(e[2])
        os.chmod(p, 0o755 if e[1] == "100755" else 0o644)
    elif e[0] == "link":
        os.symlink(e[1], p)
    elif e[0] == "dir":
        os.mkdir(p, 0o755)
        os.chmod(p, 0o755)
        for n, c in e[1].items():
            write_entry(os.path.join(p, n), c)


def make_state(job, d, kind, anc_kind):
    """Change x in device d's data directory into kind (left alone when it is the ancestor's kind)."""
    p = os.path.join(job.data(d), X)
    if kind == anc_kind:
        return
    remove_path(p)
    if kind == "fifo":
        os.mkfifo(p, 0o644)
    elif kind == "unreadable":
        with open(p, "wb") as fh:
            fh.write(b"unreadable bytes of %s\n" % d.encode())
    elif kind == "unreadabledir":
        os.mkdir(p, 0o755)
        with open(os.path.join(p, "secret"), "wb") as fh:
            fh.write(b"secret of %s\n" % d.encode())
    else:
        write_entry(p, KIND_ENTRY[kind])
    if os.path.lexists(p):
        job.chown_tree(p)
    if kind in ("unreadable", "unreadabledir"):
        os.chmod(p, 0o000)


def obstacle_snapshot(p):
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        return ("gone",)
    kind = ("fifo" if stat.S_ISFIFO(st.st_mode) else "file" if stat.S_ISREG(st.st_mode)
            else "dir" if stat.S_ISDIR(st.st_mode) else "link" if stat.S_ISLNK(st.st_mode) else "other")
    content = None
    if kind == "file":
        with open(p, "rb") as fh:
            content = fh.read()
    elif kind == "dir":
        content = []
        for root, dirs, files in os.walk(p):
            dirs.sort()
            for n in sorted(files):
                fp = os.path.join(root, n)
                with open(fp, "rb") as fh:
                    content.append((os.path.relpath(fp, p), fh.read()))
            for n in dirs:
                content.append((os.path.relpath(os.path.join(root, n), p) + "/", None))
    return (kind, oct(st.st_mode & 0o7777), st.st_ino, st.st_uid, repr(content))


# ---- one row, one order ---------------------------------------------------------------------------

def run_job(binary, row, order, base, as_user):
    job = Job(binary, row, order, base, as_user)
    t0 = time.time()
    try:
        run_checks(job)
    except Exception as e:   # a broken step is a failure of the row, with the reason
        import traceback
        job.fail("error", "%s: %s" % (type(e).__name__, e))
        job.notes.append(traceback.format_exc())
    job.cmdlog.close()
    return {"row": row, "order": order, "failures": job.failures, "observed": job.observed,
            "dir": job.dir, "secs": time.time() - t0, "notes": job.notes}


def run_checks(job):
    anc_kind, pk, wk = job.row
    kinds = {"phone": pk, "watch": wk}
    anc, cands, conflicts = expectation(job.row)
    other = {"phone": "watch", "watch": "phone"}

    for d in DEVICES:
        os.makedirs(os.path.join(job.dir, d))
        job.chown_tree(os.path.join(job.dir, d))
        job.agent("init", "--device", d, "--data", job.data(d), "--state", os.path.join(job.dir, d, "state"),
                  "--config", job.config(d), "--peer", "%s=%s" % (other[d], job.store(other[d])), check=True)

    # the ancestor, held by both
    with open(os.path.join(job.data("phone"), KEEP[0]), "wb") as fh:
        fh.write(KEEP[1])
    write_entry(os.path.join(job.data("phone"), X), anc)
    job.chown_tree(job.data("phone"))
    for d in ("phone", "watch", "phone"):
        job.sync(d)
    want_anc = flatten(anc, X)
    want_anc[KEEP[0]] = ("100644", KEEP[1])
    for d in DEVICES:
        t = job.tree_map(d)
        if t != want_anc:
            raise RuntimeError("setup: %s's main is %s, not the ancestor %s" % (d, describe_all(t), describe_all(want_anc)))
        disk, _, _ = job.disk_map(d)
        if disk != want_anc:
            raise RuntimeError("setup: %s's disk is %s, not the ancestor %s" % (d, describe_all(disk), describe_all(want_anc)))
    setup_head = job.main_of("phone")
    if job.failures:
        raise RuntimeError("setup syncs failed: %s" % job.failures)

    # each side's state
    for d in DEVICES:
        make_state(job, d, kinds[d], anc_kind)
    obstacles = {d: obstacle_snapshot(os.path.join(job.data(d), X)) for d in DEVICES if kinds[d] in SPECIAL}
    held = {d: flatten(KIND_ENTRY[kinds[d]], X) for d in DEVICES if kinds[d] not in SPECIAL}

    # syncs in this order until both mains are one commit for a whole round
    seq = ("phone", "watch") if job.order == "pw" else ("watch", "phone")
    n, stable = 0, 0
    while n < MAX_SYNCS:
        job.sync(seq[n % 2])
        n += 1
        a, b = job.main_of("phone"), job.main_of("watch")
        stable = stable + 1 if (n >= 2 and a == b) else 0
        if stable >= 2:
            break
    before_idle = (job.main_of("phone"), job.main_of("watch"))
    job.sync(seq[0])
    job.sync(seq[1])
    after_idle = (job.main_of("phone"), job.main_of("watch"))
    if after_idle[0] != after_idle[1]:
        job.fail("converged", "after %d syncs and an idle round the mains differ: phone %s, watch %s"
                 % (n, (after_idle[0] or "none")[:10], (after_idle[1] or "none")[:10]))
    elif after_idle != before_idle:
        job.fail("converged", "an idle round made new commits (%s -> %s)" % (before_idle[0][:10], after_idle[0][:10]))

    trees = {d: job.tree_map(d) for d in DEVICES}
    disks, litter, others = {}, {}, {}
    for d in DEVICES:
        disks[d], litter[d], others[d] = job.disk_map(d, skip_x=kinds[d] in SPECIAL)
    records = {}
    for d in DEVICES:
        r = job.agent("conflicts", "--json", "--config", job.config(d))
        try:
            records[d] = [x for x in json.loads(r.stdout or b"[]") if x.get("status") == "open"]
        except ValueError:
            job.fail("record", "%s: `conflicts --json` is not JSON: %r" % (d, r.stdout[:200]))
            records[d] = []
    problems = {}
    for d in DEVICES:
        r = job.agent("status", "--json", "--config", job.config(d))
        try:
            problems[d] = json.loads(r.stdout).get("problems") or []
        except ValueError:
            problems[d] = ["<status --json is not JSON: %r>" % r.stdout[:200]]

    full_disks = {}
    for d in DEVICES:
        full_disks[d] = job.disk_map(d)[0] if kinds[d] not in SPECIAL else disks[d]
    job.observed = {
        "tree": {d: describe_all(trees[d]) for d in DEVICES},
        "disk": {d: ("<%s kept>" % kinds[d] if kinds[d] in SPECIAL else describe_all(disks[d])) for d in DEVICES},
        "records": {d: ["%s %s %s current=%s" % (r.get("id"), r.get("path"), r.get("kind"), r.get("current"))
                        for r in records[d]] for d in DEVICES},
        "problems": problems,
        "syncs": n,
    }

    # tree-agree
    if trees["phone"] != trees["watch"]:
        diff = sorted(p for p in set(trees["phone"]) | set(trees["watch"]) if trees["phone"].get(p) != trees["watch"].get(p))
        job.fail("tree-agree", "mains differ at %s: phone %s | watch %s" % (",".join(diff[:6]),
                 describe_all(trees["phone"]), describe_all(trees["watch"])))

    # disk-vs-tree, litter
    for d in DEVICES:
        t = {p: v for p, v in trees[d].items() if not (kinds[d] in SPECIAL and under_x(p))}
        if disks[d] != t:
            diff = sorted(p for p in set(t) | set(disks[d]) if t.get(p) != disks[d].get(p))
            job.fail("disk-vs-tree", "%s: disk %s | main %s (differ at %s)" % (d, describe_all(disks[d]),
                     describe_all(t), ",".join(diff[:6])))
        if litter[d]:
            job.fail("litter", "%s: %s in the data directory" % (d, ", ".join(litter[d])))
        if others[d]:
            job.fail("disk-vs-tree", "%s: unexpected special files %s" % (d, ", ".join(others[d])))

    # expected content of main (phone's; tree-agree covers the watch)
    got = {p: v for p, v in trees["phone"].items() if under_x(p)}
    want = [flatten(c, X) for c in cands]
    if got not in want:
        job.fail("expected", "main at x is %s, expected %s" % (describe(got), " or ".join(describe(w) for w in want)))
    extra = sorted(p for p in trees["phone"] if not under_x(p) and p != KEEP[0])
    has_record_at_x = any(under_x(r.get("path", "")) for r in records["phone"] + records["watch"])
    bad_extra = [p for p in extra if not (beside_x(p) and has_record_at_x)]
    if bad_extra:
        job.fail("expected", "main holds unexpected paths %s" % ", ".join(bad_extra))
    if trees["phone"].get(KEEP[0]) != ("100644", KEEP[1]):
        job.fail("expected", "keep.txt is not intact in main")

    # records
    exp_conflicts = conflicts
    for d in DEVICES:
        at_x = [r for r in records[d] if under_x(r.get("path", ""))]
        elsewhere = [r for r in records[d] if not under_x(r.get("path", ""))]
        if elsewhere:
            job.fail("record", "%s: open records at unexpected paths: %s" % (d, ", ".join("%s(%s)" % (r.get("path"), r.get("kind")) for r in elsewhere)))
        if not exp_conflicts:
            if at_x:
                job.fail("record", "%s: open record(s) %s where no conflict is expected" % (d, ", ".join(
                    "%s %s(%s)" % (r.get("id"), r.get("path"), r.get("kind")) for r in at_x)))
        else:
            kinds_ok = exp_conflicts[0][1]
            if len(at_x) != 1:
                job.fail("record", "%s: %d open records at x (%s), expected one, kind %s" % (d, len(at_x),
                         ", ".join("%s(%s)" % (r.get("path"), r.get("kind")) for r in at_x) or "none", "|".join(sorted(kinds_ok))))
            else:
                r = at_x[0]
                if r.get("kind") not in kinds_ok:
                    job.fail("record", "%s: record %s at %s has kind %s, expected %s" % (d, r.get("id"), r.get("path"), r.get("kind"), "|".join(sorted(kinds_ok))))
                devs = sorted(v.get("device") for v in r.get("versions", []))
                if devs != ["phone", "watch"]:
                    job.fail("record", "%s: record %s has versions of %s, expected phone and watch" % (d, r.get("id"), devs))
    ids = {d: sorted(r.get("id") for r in records[d]) for d in DEVICES}
    if ids["phone"] != ids["watch"]:
        job.fail("record", "open record ids differ: phone %s, watch %s" % (ids["phone"], ids["watch"]))

    # record-current and the contents of every version of the open records
    versions_content = []   # (path, mode, bytes) of every version of every open record
    for d in DEVICES:
        for r in records[d]:
            rp = r.get("path", "")
            for v in r.get("versions", []):
                vc = {}
                if v.get("commit"):
                    vc = {p: x for p, x in job.tree_map(d, v["commit"]).items() if p == rp or p.startswith(rp + "/")}
                if v.get("blob"):
                    blobs = job.read_blobs(d, [v["blob"]])
                    if v["blob"] in blobs:
                        versions_content.append((rp, None, blobs[v["blob"]]))
                for p, (mode, data) in vc.items():
                    versions_content.append((p, mode, data))
                if v.get("device") == r.get("current") and d == "phone":
                    for dd in DEVICES:
                        if kinds[dd] in SPECIAL:
                            continue
                        on_disk = {p: x for p, x in full_disks[dd].items() if p == rp or p.startswith(rp + "/")}
                        if on_disk != vc:
                            job.fail("record-current", "%s: record %s says current=%s, whose version at %s is %s; the disk holds %s"
                                     % (dd, r.get("id"), r.get("current"), rp, describe(vc) if rp == X else sorted(vc), describe(on_disk) if rp == X else sorted(on_disk)))

    # lost-bytes: what a side changed (bytes it holds that the ancestor did not hold at that path)
    anc_flat = flatten(anc, X)
    for d, entries in held.items():
        for p, (mode, data) in entries.items():
            if p.endswith("/.syncagent-keep") or (p in anc_flat and anc_flat[p][1] == data):
                continue
            on_disk = any(full_disks[dd].get(p) == (mode, data) or full_disks[dd].get(p, (None, None))[1] == data
                          and (full_disks[dd][p][0] == "120000") == (mode == "120000") for dd in DEVICES)
            beside = any(beside_x(q) and v[1] == data for dd in DEVICES for q, v in full_disks[dd].items()) if p == X else False
            in_record = any(vp == p and vd == data for vp, _, vd in versions_content)
            if not (on_disk or beside or in_record):
                job.fail("lost-bytes", "%s's %s %r (%s) is on no disk and in no open record" % (
                    d, "link target" if mode == "120000" else "file", data.decode(errors="replace"), p))

    # obstacles
    for d, snap in obstacles.items():
        now = obstacle_snapshot(os.path.join(job.data(d), X))
        if now != snap:
            job.fail("obstacle", "%s: the %s at x was changed: before %s, after %s" % (d, kinds[d], snap[:4], now[:4]))
        if want_anc and any(under_x(p) for p in want_anc):
            r = job.git(d, "log", "--format=%H", "--full-history", "--no-merges", "--author=^%s " % d, "--diff-filter=D", "--name-only",
                        "%s..refs/heads/main" % setup_head, "--", X)
            deleted = [l for l in r.stdout.decode().splitlines() if under_x(l)]
            if deleted:
                job.fail("obstacle-delete", "%s: its own commits delete tracked %s while a %s stands at x" % (d, ", ".join(deleted), kinds[d]))
        result_x = {p: v for p, v in trees[d].items() if under_x(p)}
        anc_x = flatten(anc, X)
        # An empty directory is written where an unreadable directory stands (the directory is there):
        # only other entries need what the obstacle keeps out.
        needs = result_x if kinds[d] != "unreadabledir" else {p: v for p, v in result_x.items() if p != X + "/.syncagent-keep"}
        if needs and result_x != anc_x:
            if not any(re.search(r"(^|[\s\"'`(/])%s([/\s\"'`):,;.]|$)" % re.escape(X), str(pr)) for pr in problems[d]):
                job.fail("problem", "%s: main holds %s at x, the %s keeps it from the disk, and status problems do not name x: %s"
                         % (d, describe(result_x), kinds[d], problems[d]))

    # fsck
    for d in DEVICES:
        r = job.git(d, "fsck", "--no-progress")
        if r.returncode != 0:
            job.fail("fsck", "%s: git fsck exited %d: %s" % (d, r.returncode, (r.stdout + r.stderr).decode(errors="replace")[-300:]))


# ---- driver ---------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--binary", required=True)
    ap.add_argument("--full", action="store_true", help="the whole cross product (default: the short table)")
    ap.add_argument("--rows", help="only rows whose id (ancestor/phone/watch) matches this regex")
    ap.add_argument("--orders", default="pw,wp")
    ap.add_argument("--jobs", type=int, default=max(2, (os.cpu_count() or 2) * 2))
    ap.add_argument("--tmp", default=None, help="parent of the rows' temp dirs")
    ap.add_argument("--known-failing", action="append", default=[],
                    help="ROW or ROW@ORDER expected to fail (reported, not counted)")
    ap.add_argument("--keep", action="store_true", help="keep every row's temp dir (default: failing ones only)")
    ap.add_argument("--list", action="store_true", help="print the rows and their expectations, run nothing")
    args = ap.parse_args()

    binary = os.path.abspath(args.binary)
    rows = all_rows() if args.full else DEFAULT_ROWS
    if args.rows:   # a filter over the whole cross product
        rows = [r for r in all_rows() if re.search(args.rows, row_id(r))]
    orders = [o for o in args.orders.split(",") if o]
    if args.list:
        for r in rows:
            anc, cands, conflicts = expectation(r)
            print("%-32s -> %s%s" % (row_id(r), " or ".join(describe(flatten(c, X)) for c in cands),
                                     "".join("; record %s at %s" % ("|".join(sorted(k)), p) for p, k in conflicts)))
        return 0

    as_user = None
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            print("running as root needs setpriv (util-linux) to run the agents as nobody", file=sys.stderr)
            return 2
        pw = pwd.getpwnam("nobody")
        as_user = (pw.pw_uid, pw.pw_gid)
    base = tempfile.mkdtemp(prefix="syncagent-reconcile.", dir=args.tmp)
    os.chmod(base, 0o755)
    known = set(args.known_failing)

    jobs = [(r, o) for r in rows for o in orders]
    t0 = time.time()
    results = []
    with concurrent.futures.ProcessPoolExecutor(max_workers=args.jobs) as ex:
        futs = [ex.submit(run_job, binary, r, o, base, as_user) for r, o in jobs]
        for fut in concurrent.futures.as_completed(futs):
            results.append(fut.result())
    results.sort(key=lambda x: (jobs.index((x["row"], x["order"]))))

    failed, known_failed, xpass = [], [], []
    for res in results:
        rid = row_id(res["row"])
        is_known = rid in known or "%s@%s" % (rid, res["order"]) in known
        if res["failures"]:
            (known_failed if is_known else failed).append(res)
        elif is_known:
            xpass.append(res)
        if not res["failures"] and not args.keep:
            shutil.rmtree(res["dir"], ignore_errors=True)

    def table(title, rs):
        print("\n%s (%d):" % (title, len(rs)))
        print("%-34s %-5s %-15s %s" % ("ancestor/phone/watch", "order", "check", "observed vs expected"))
        for res in rs:
            rid = row_id(res["row"])
            for i, (check, detail) in enumerate(res["failures"]):
                print("%-34s %-5s %-15s %s" % (rid if i == 0 else "", res["order"] if i == 0 else "", check, detail))
            o = res["observed"]
            if o:
                print("%-34s %-5s %-15s trees: phone %s | watch %s" % ("", "", "  (observed)", o["tree"]["phone"], o["tree"]["watch"]))
                print("%-34s %-5s %-15s disks: phone %s | watch %s" % ("", "", "", o["disk"]["phone"], o["disk"]["watch"]))
                print("%-34s %-5s %-15s records: phone %s | watch %s" % ("", "", "", o["records"]["phone"] or "none", o["records"]["watch"] or "none"))
                if any(o["problems"].values()):
                    print("%-34s %-5s %-15s problems: phone %s | watch %s" % ("", "", "", o["problems"]["phone"], o["problems"]["watch"]))
            print("%-34s %-5s %-15s kept %s" % ("", "", "", res["dir"]))
            for n in res["notes"]:
                print("    " + n.replace("\n", "\n    "))

    if failed:
        table("FAILED", failed)
        by_check = {}
        for res in failed:
            for check, _ in res["failures"]:
                by_check.setdefault(check, set()).add(row_id(res["row"]) + "@" + res["order"])
        print("\nfailures by check:")
        for check, ids in sorted(by_check.items()):
            print("  %-15s %d: %s" % (check, len(ids), " ".join(sorted(ids))))
    if known_failed:
        table("known failing (listed as such)", known_failed)
    if xpass:
        print("\nlisted as known failing but passed now (take them off the list): %s"
              % " ".join("%s@%s" % (row_id(r["row"]), r["order"]) for r in xpass))
    print("\n%d rows x %d orders = %d runs in %.0fs: %d passed, %d failed, %d known failing"
          % (len(rows), len(orders), len(results), time.time() - t0,
             len(results) - len(failed) - len(known_failed), len(failed), len(known_failed)))
    if not failed and not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    else:
        print("temp dirs under %s" % base)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
