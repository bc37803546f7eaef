#!/usr/bin/env python3
"""Randomized convergence suite: the judge of the sync engine.

Sets up 3..5 devices (mesh: every pair are peers; star: device 0 is the centre; hub: no direct
peers, every device meets the others through one bare repository, `hub = true`), runs one
`syncagent run` per device, and for every round applies a seeded random mix of file operations on
random devices -- while the agents run, while some are stopped (SIGTERM), right after a `kill -9`,
and with two or more devices partitioned and editing the same paths (conflicts). Then it heals (all
agents running), waits by condition for quiescence, and checks the invariants:

  * every data directory identical (paths as bytes, file/link, exec bit, link target, bytes);
  * every store's HEAD tree is its data directory;
  * nothing lost: the last bytes the driver wrote at each path of a device are in that device's store;
  * no commits while idle; `git fsck` clean; nothing of the agent's own in a data directory;
  * conflict records: at most one open record per path, the same open ids on every device; after
    `resolve --all --keep newest` on one device, no open record anywhere and identical devices again;
  * memory: at the end, each agent process's RssAnon (sampled after every heal) may have grown by at
    most RSS_WARMUP_MB plus RSS_PER_1000_MB per 1,000 commits on its main (printed as `rss ...` lines).

--policy (env POLICY=1; off by default) adds the per-path rules and a receive-only device: every device
gets the same [[rule]]s -- `*.local` never (the driver gives some leaves that suffix), "<dir>/**" for
every device but one (the excluded device; the driver never writes there on it), `*.dat` max_bytes 2048,
`notes.md` manual -- and the last device is `mode = "receive-only"` (the driver edits it like any other).
Before each quiescence check the judge runs `send --all` on a device that holds changes and `revert` on
the receive-only one (and, when an agent says a directory is where a peer's file must be, deletes the
device's own never files in it, as the agent asks). The invariants hold where the rules say they do:

  * data dirs identical and HEAD == data dir on the paths a device should hold: never paths are each
    device's own; the excluded device's HEAD has the rule's directory, its disk holds nothing there;
  * each device's never files are exactly what the driver last wrote there; no never path is in
    main's history;
  * nothing lost: the receive-only device's reverted or replaced bytes are reachable from a ref
    (refs/syncagent/kept) or still on its disk; main has no commit of its own content (merges only);
  * `resolve --all` runs on a send-receive device.

The rules' random choices come from a second generator, so a seed run without --policy replays exactly
as before.

    python3 e2e/convergence.py --binary .build/release/syncagent --seed 42 --rounds 5 --devices 4
    python3 e2e/convergence.py --binary .build/release/syncagent --seed 42 --rounds 5 --devices 4 --policy

The seed fixes every decision the driver makes (which device, which operation, which path, which bytes,
when to stop or kill an agent); the agents' own timing can still differ from one run to the next, so a
failing seed is replayed by running it again (a few times if need be). Round 0 is the set-up (the first
heal); every operation, stop, kill and restart is logged with its time in <temp dir>/ops.log, and each
agent run's stderr in <temp dir>/<device>/run-N.log. Exit status 0: every round held;
1: an invariant failed (`FAILED seed=N round=R: reason`, the kept temp dir and the agents' last log
lines); 2: bad usage.  Python 3 standard library only.
"""

import argparse
import errno
import hashlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import random

DEVICE_NAMES = ["phone", "watch", "tablet", "laptop", "car"] + ["dev%02d" % i for i in range(5, 50)]

# Memory (RssAnon) an agent process may gain between its first sample (after a heal) and the end of the
# run: libgit2's object cache and the heap fill up first ([store] cache_mb is 2 MiB by default), then
# growth must stop. A leak of ~100 KB per fetch (libgit2 1.5's insteadOf regex) broke this in ~100 commits.
RSS_WARMUP_MB = 10.0
RSS_PER_1000_MB = 1.0

# ---- names ---------------------------------------------------------------------------------------
# Leaves and directory names overlap on purpose (b"x", b"notes") so that files and directories meet.
# Nothing here matches what the agent ignores (.git, .*.swp, *~, .#*, 4913, *.tmp) or says "syncagent".
LONG_NAME = b"L" * 246 + b".txt"                      # 250 bytes
ODD_LEAVES = [
    b"with space.txt", b" leading space", b"trailing space ", "caf\u00e9 cr\u00e8me.txt".encode(),
    "\u65e5\u672c\u8a9e\u306e\u30e1\u30e2.txt".encode(), "\U0001F642 smile".encode(),
    b"bad-\xff\xfe", b"tab\tname", b"semi;colon&amp", b"quote'\"", b"back\\slash", b"#hash", b"-dash",
    b".hidden", LONG_NAME, "\u00dcml\u00e4ut".encode(), b"star*question?",
]
PLAIN_LEAVES = [b"a.txt", b"b.txt", b"notes.md", b"data.bin", b"x", b"y", b"README", b"run.sh",
                b"config.json", b"log.txt", b"notes", b"z.dat"]
DIR_NAMES = [b"d1", b"d2", b"notes", b"x", b"dir with space", "\u00fc-dir".encode(), b"deep",
             b"bad-dir-\xfe", b"sub"]
LINK_TARGETS = [b"a.txt", b"../a.txt", b"d1/notes.md", b"nowhere/at all", b"bad-\xff",
                b"x", b"./notes", "caf\u00e9".encode(), b"../../outside"]
CONFLICT_COPY = re.compile(rb"\.conflict-")

# ---- --policy: per-path [[rule]]s and a receive-only device -----------------------------------------
# Every device gets the same rules, first match wins:
#   NEVER_GLOB (a file name pattern): local to each device, never committed, never written by a merge;
#     the driver gives a leaf NEVER_SUFFIX now and then (policy runs only);
#   "<dir>/**" with devices = every device but one (the excluded device): the excluded device keeps
#     those paths in its store, never on its disk; the driver never writes there on it;
#   MAX_BYTES_GLOB with max_bytes = MAX_BYTES, MANUAL_GLOB with sync = "manual": held changes, shared
#     by `syncagent send --all` (the judge sends them before each quiescence check).
# The last device is mode = "receive-only": the driver edits it like any other, the judge runs
# `syncagent revert` on it before each quiescence check.
NEVER_GLOB = "*.local"
NEVER_SUFFIX = b".local"
MAX_BYTES_GLOB = "*.dat"
MAX_BYTES = 2048
MANUAL_GLOB = "notes.md"
# Candidates for the devices rule's directory: names the agent's config can carry (UTF-8).
DEVICES_RULE_DIRS = [n for n in DIR_NAMES if n == n.decode("utf-8", "replace").encode()]


def show(p):
    """A path for a message: exact bytes shown with backslash escapes, long names shortened."""
    s = p.decode("utf-8", "backslashreplace").replace("\n", "\\n").replace("\t", "\\t")
    if len(s) > 90:
        s = "%s...%s (%d bytes)" % (s[:40], s[-24:], len(p))
    return repr(s)


class Failure(Exception):
    pass


def describe_rc(rc):
    if rc is None:
        return "still running"
    if rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = "signal %d" % -rc
        extra = " (Illegal instruction: a Swift runtime trap)" if -rc == signal.SIGILL else ""
        extra = " (Trace/breakpoint trap: a Swift runtime trap)" if -rc == signal.SIGTRAP else extra
        return "killed by %s%s" % (name, extra)
    return "exit status %d" % rc


# ---- one device ----------------------------------------------------------------------------------

class Device:
    def __init__(self, run, idx, name, root):
        self.run = run
        self.idx = idx
        self.name = name
        self.dir = os.path.join(root, name)
        self.data = os.path.join(self.dir, "data")
        self.state = os.path.join(self.dir, "state")
        self.store = os.path.join(self.state, "store.git")
        self.config = os.path.join(self.dir, "syncagent.toml")
        self.scratch = os.path.join(root, "scratch", name)
        self.bdata = os.fsencode(self.data)
        self.proc = None
        self.run_seq = 0
        self.log_path = None
        self.written = {}          # rel path (bytes) -> blob bytes the driver last put there
        self.rss = []              # (pid, RssAnon MB, commits on main, round) after each heal

    # -- the agent process --
    def running(self):
        return self.proc is not None

    def start(self):
        self.run_seq += 1
        self.log_path = os.path.join(self.dir, "run-%d.log" % self.run_seq)
        out = open(os.path.join(self.dir, "run-%d.out" % self.run_seq), "wb")
        err = open(self.log_path, "wb")
        self.proc = subprocess.Popen([self.run.binary, "run", "--config", self.config,
                                      "--log-level", self.run.log_level],
                                     stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        out.close()
        err.close()
        self.run.note("start %s (pid %d, log %s)" % (self.name, self.proc.pid, self.log_path))
        deadline = time.monotonic() + 40
        while True:
            rc = self.proc.poll()
            if rc is not None:
                p, self.proc = self.proc, None
                raise Failure("agent %s (pid %d) exited at start-up: %s" % (self.name, p.pid, describe_rc(rc)))
            st = self.status(quiet=True)
            if st and st.get("running") is True and st.get("pid") == self.proc.pid:
                return
            if time.monotonic() > deadline:
                raise Failure("agent %s (pid %d) did not report running in `status --json` within 40 s"
                              % (self.name, self.proc.pid))
            time.sleep(0.1)

    def stop(self, timeout=40):
        p = self.proc
        if p is None:
            return
        rc = p.poll()
        if rc is not None:
            self.proc = None
            raise Failure("agent %s (pid %d) had died before it was stopped: %s" % (self.name, p.pid, describe_rc(rc)))
        self.run.note("SIGTERM %s (pid %d)" % (self.name, p.pid))
        p.send_signal(signal.SIGTERM)
        try:
            rc = p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            self.proc = None
            raise Failure("agent %s (pid %d) did not exit within %d s of SIGTERM" % (self.name, p.pid, timeout))
        self.proc = None
        if rc != 0:
            raise Failure("agent %s (pid %d) exited with %s after SIGTERM (expected 0)" % (self.name, p.pid, describe_rc(rc)))

    def kill9(self):
        p = self.proc
        if p is None:
            return
        rc = p.poll()
        if rc is not None:
            self.proc = None
            raise Failure("agent %s (pid %d) had died before kill -9: %s" % (self.name, p.pid, describe_rc(rc)))
        self.run.note("kill -9 %s (pid %d)" % (self.name, p.pid))
        p.kill()
        p.wait()
        self.proc = None

    def check_alive(self):
        if self.proc is not None:
            rc = self.proc.poll()
            if rc is not None:
                pid, self.proc = self.proc.pid, None
                raise Failure("agent %s (pid %d) died: %s" % (self.name, pid, describe_rc(rc)))

    # -- CLI --
    def cli(self, *args, timeout=60):
        try:
            return subprocess.run([self.run.binary] + list(args) + ["--config", self.config],
                                  capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise Failure("`syncagent %s` on %s did not finish within %d s" % (" ".join(args), self.name, timeout))

    def status(self, quiet=False):
        r = self.cli("status", "--json", timeout=30)
        if r.returncode != 0:
            if quiet:
                return None
            raise Failure("`status --json` on %s failed (%d): %s" % (self.name, r.returncode, r.stderr.decode(errors="replace")[-400:]))
        try:
            return json.loads(r.stdout)
        except ValueError:
            if quiet:
                return None
            raise Failure("`status --json` on %s printed no JSON: %r" % (self.name, r.stdout[:300]))

    def records(self):
        r = self.cli("conflicts", "--json", "--all", timeout=30)
        if r.returncode != 0:
            raise Failure("`conflicts --json --all` on %s failed (%d): %s" % (self.name, r.returncode, r.stderr.decode(errors="replace")[-400:]))
        try:
            return json.loads(r.stdout)
        except ValueError:
            raise Failure("`conflicts --json` on %s printed no JSON: %r" % (self.name, r.stdout[:300]))

    # -- the store --
    def git(self, *args, env=None, input=None):
        return subprocess.run(["git", "--git-dir=" + self.store] + list(args), capture_output=True,
                              env=env, input=input, timeout=120)

    def main(self):
        r = self.git("rev-parse", "-q", "--verify", "refs/heads/main")
        return r.stdout.decode().strip() if r.returncode == 0 else None

    def head_tree(self):
        r = self.git("rev-parse", "-q", "--verify", "HEAD^{tree}")
        return r.stdout.decode().strip() if r.returncode == 0 else None

    def scratch_env(self):
        """git's environment for building trees of the data dir: objects go to a scratch directory
        (the store is only read, through alternates), so the judge never writes into a store."""
        os.makedirs(os.path.join(self.scratch, "objects"), exist_ok=True)
        env = dict(os.environ)
        env["GIT_INDEX_FILE"] = os.path.join(self.scratch, "index")
        env["GIT_OBJECT_DIRECTORY"] = os.path.join(self.scratch, "objects")
        env["GIT_ALTERNATE_OBJECT_DIRECTORIES"] = os.path.join(self.store, "objects")
        return env

    def data_tree(self):
        env = self.scratch_env()
        try:
            os.unlink(env["GIT_INDEX_FILE"])
        except FileNotFoundError:
            pass
        r = subprocess.run(["git", "--git-dir=" + self.store, "--work-tree=" + self.data,
                            "-c", "core.excludesFile=/dev/null", "add", "-A", "--force", "."],
                           capture_output=True, env=env, timeout=120)
        if r.returncode != 0:
            return None, "git add failed: " + r.stderr.decode(errors="replace")[-300:]
        # An empty directory is kept in the store as an empty `.syncagent-keep` file inside it.
        markers = []
        for d, dirs, files in os.walk(self.bdata):
            if d != self.bdata and not dirs and not files:
                markers.append(b"100644 e69de29bb2d1d6434b8b29ae775ad8c2e48c5391\t"
                               + os.path.relpath(d, self.bdata) + b"/.syncagent-keep\0")
        if markers:
            r = subprocess.run(["git", "--git-dir=" + self.store, "update-index", "--add", "-z", "--index-info"],
                               input=b"".join(markers), capture_output=True, env=env, timeout=60)
            if r.returncode != 0:
                return None, "git update-index failed: " + r.stderr.decode(errors="replace")[-300:]
        r = subprocess.run(["git", "--git-dir=" + self.store, "write-tree"], capture_output=True, env=env, timeout=60)
        if r.returncode != 0:
            return None, "git write-tree failed: " + r.stderr.decode(errors="replace")[-300:]
        return r.stdout.decode().strip(), None

    def tree_diff(self, head_tree, want_tree):
        env = self.scratch_env()
        r = subprocess.run(["git", "--git-dir=" + self.store, "diff-tree", "-r", "-z", "--name-status",
                            "--no-renames", head_tree, want_tree], capture_output=True, env=env, timeout=60)
        parts = r.stdout.split(b"\0")
        out = []
        for i in range(0, len(parts) - 1, 2):
            what = {b"A": "only in data", b"D": "only in HEAD", b"M": "differs", b"T": "type differs"}.get(parts[i], parts[i].decode())
            out.append("%s: %s" % (show(parts[i + 1]), what))
        return out

    def log_tail(self, n=25):
        if not self.log_path or not os.path.exists(self.log_path):
            return []
        with open(self.log_path, "rb") as f:
            lines = f.read().decode("utf-8", "replace").splitlines()
        crash = [i for i, line in enumerate(lines) if line.startswith("*** Program crashed")]
        if not crash:
            return lines[-n:]
        # a Swift runtime trap: the log lines before the backtrace, then the crash and the top frames
        start = next((i for i, line in enumerate(lines) if line.startswith("*** Signal")), crash[0])
        return lines[max(0, start - n // 2):start] + lines[crash[0]:crash[0] + n]

    # -- the data directory --
    def abs(self, rel):
        return os.path.join(self.bdata, rel)

    def snapshot(self):
        """rel path -> ("file", exec, bytes) | ("link", target) | ("other",); directories are implied."""
        out = {}
        for d, dirs, files in os.walk(self.bdata):
            if d != self.bdata and not dirs and not files:
                out[os.path.relpath(d, self.bdata) + b"/"] = ("empty dir",)  # empty directories sync too
            names = list(files) + [x for x in dirs if os.path.islink(os.path.join(d, x))]
            for n in names:
                p = os.path.join(d, n)
                rel = os.path.relpath(p, self.bdata)
                try:
                    st = os.lstat(p)
                    if stat.S_ISLNK(st.st_mode):
                        out[rel] = ("link", os.readlink(p))
                    elif stat.S_ISREG(st.st_mode):
                        with open(p, "rb") as f:
                            out[rel] = ("file", bool(st.st_mode & 0o100), f.read())
                    else:
                        out[rel] = ("other",)
                except FileNotFoundError:
                    out[rel] = ("vanished",)
        return out

    def all_names(self):
        """Every path in the data dir, directories (even empty ones) included."""
        out = []
        for d, dirs, files in os.walk(self.bdata):
            for n in dirs + files:
                out.append(os.path.relpath(os.path.join(d, n), self.bdata))
        return out

    def listing(self):
        """(files, links, dirs) as sorted rel paths; dirs are real directories, the root excluded."""
        files, links, dirs = [], [], []
        for d, ds, fs in os.walk(self.bdata):
            # never touch what the agent is writing right now (its temporaries)
            ds[:] = [n for n in ds if not agent_temporary(n)]
            fs = [n for n in fs if not agent_temporary(n)]
            for n in ds:
                p = os.path.join(d, n)
                (links if os.path.islink(p) else dirs).append(os.path.relpath(p, self.bdata))
            for n in fs:
                p = os.path.join(d, n)
                try:
                    m = os.lstat(p).st_mode
                except FileNotFoundError:
                    continue
                if stat.S_ISLNK(m):
                    links.append(os.path.relpath(p, self.bdata))
                elif stat.S_ISREG(m):
                    files.append(os.path.relpath(p, self.bdata))
        return sorted(files), sorted(links), sorted(dirs)


def agent_temporary(name):
    return b"syncagent" in name.lower() or name.endswith(b".tmp")


def same_inode(fd, path):
    """The open file fd is still the file at path (not unlinked or replaced meanwhile)."""
    try:
        a, b = os.fstat(fd), os.lstat(path)
    except OSError:
        return False
    return a.st_nlink > 0 and (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def blob_id(data, fmt):
    h = hashlib.sha256() if fmt == "sha256" else hashlib.sha1()
    h.update(b"blob %d\0" % len(data))
    h.update(data)
    return h.hexdigest()


def edit_config(text):
    """[watch] debounce_ms = 50 and poll_seconds = 2 in every [[peer]], as a user editing the file."""
    out, section, seen_watch = [], None, False
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("["):
            section = s
            out.append(line)
            if s == "[watch]":
                seen_watch = True
                out.append("debounce_ms = 50")
            elif s == "[[peer]]":
                out.append("poll_seconds = 2")
            continue
        if section == "[watch]" and re.match(r"debounce_ms\s*=", s):
            continue
        if section == "[[peer]]" and re.match(r"poll_seconds\s*=", s):
            continue
        out.append(line)
    if not seen_watch:
        out += ["", "[watch]", "debounce_ms = 50"]
    return "\n".join(out) + "\n"


# ---- one seeded run ------------------------------------------------------------------------------

class Run:
    def __init__(self, args, seed):
        self.args = args
        self.seed = seed
        self.binary = args.binary
        self.log_level = args.log_level
        self.rng = random.Random(seed)
        self.round = 0
        self.opn = 0
        self.devices = []
        self.known = set()          # every path the driver ever created (files and links)
        self.settles = []
        self.rss_lines = []
        self.root = None
        self.objfmt = "sha1"
        self.tmpn = 0
        self.oplog = None
        # --policy: its decisions draw from a generator of their own, so the main one draws exactly
        # what it draws without --policy (and runs without --policy replay as before)
        self.policy = bool(args.policy)
        self.prng = random.Random(seed * 1000003 + 8)
        self.excluded = None        # the device the devices rule leaves out
        self.rule_dir = None        # that rule's directory (top level, bytes)
        self.ro = None              # the receive-only device
        self.acted = {"revert": 0, "send": 0}   # this round's reverts and sends

    def label(self):
        return "in round %d, op %d, at %s" % (self.round, self.opn, self.clock())

    @staticmethod
    def clock():
        t = time.time()
        return time.strftime("%H:%M:%S", time.gmtime(t)) + ".%03d" % (int(t * 1000) % 1000)

    def note(self, msg):
        line = "%s [seed %d r%d op%d] %s" % (self.clock(), self.seed, self.round, self.opn, msg)
        if self.oplog:
            self.oplog.write(line + "\n")
            self.oplog.flush()
        if self.args.verbose:
            print("  " + line, flush=True)

    # -- random helpers: a fixed number of draws per decision, whatever the state --
    def pick(self, seq):
        x = self.rng.random()
        if not seq:
            return None
        return seq[int(x * len(seq))]

    def chance(self, p):
        return self.rng.random() < p

    def rand_path(self, odd=False, depth=None):
        r = self.rng.random()
        if depth is None:
            depth = 0 if r < 0.45 else 1 if r < 0.8 else 2 if r < 0.95 else 3
        comps = [self.pick(DIR_NAMES) for _ in range(depth)]
        r = self.rng.random()
        if odd or r < 0.2:
            leaf = self.pick(ODD_LEAVES)
        elif r < 0.75:
            leaf = self.pick(PLAIN_LEAVES)
        else:
            leaf = b"f%02d" % self.rng.randrange(30)
        if self.policy:
            if self.prng.random() < 0.12 and len(leaf) < 200:
                leaf += NEVER_SUFFIX               # a `never` path: each device's own
            if self.prng.random() < 0.3 and comps:
                comps[0] = self.rule_dir           # the devices rule's directory, more often
        return b"/".join(comps + [leaf])

    # -- --policy: what the rules say about a path --
    def is_never(self, rel):
        """rel matches the `never` rule (the first rule: it wins over the others)."""
        return self.policy and rel.split(b"/")[-1].endswith(NEVER_SUFFIX)

    def under_rule_dir(self, rel):
        """rel is inside the devices rule's directory (whatever rule decides it)."""
        if not self.policy:
            return False
        comps = rel.split(b"/")
        return len(comps) > 1 and comps[0] == self.rule_dir

    def holds(self, dev, rel):
        """dev should hold rel in its data dir as every other device does: not a never path, and not
        a path the devices rule keeps off dev."""
        if self.is_never(rel):
            return False
        return not (dev is self.excluded and self.under_rule_dir(rel))

    def off_limits(self, dev, rel):
        """The driver never writes rel on dev: the devices rule keeps it off dev's disk (a real app on
        that device would not write there; what it wrote would only stay uncommitted)."""
        return self.policy and dev is self.excluded and self.under_rule_dir(rel)

    def content(self, dev, tag=b"w"):
        hdr = b"%s %s seed=%d round=%d op=%d\n" % (dev.name.encode(), tag, self.seed, self.round, self.opn)
        r = self.rng.random()
        if r < 0.07:
            return b""
        if r < 0.6:
            return hdr + b"".join(b"line %d of %s\n" % (i, tag) for i in range(self.rng.randrange(1, 30)))
        if r < 0.93:
            return hdr + self.rng.randbytes(self.rng.randrange(1, 4096))
        return hdr + self.rng.randbytes(self.rng.randrange(16384, 200000))

    # -- setup --
    def setup(self):
        base = os.environ.get("TMPDIR", "/tmp")
        self.root = os.path.realpath(tempfile.mkdtemp(prefix="syncagent-conv.s%d." % self.seed, dir=base))
        home = os.path.join(self.root, "home")
        os.makedirs(home)
        os.makedirs(os.path.join(self.root, "tmp"))
        self.oplog = open(os.path.join(self.root, "ops.log"), "w")
        os.environ.update({"HOME": home, "XDG_CONFIG_HOME": os.path.join(home, ".config"),
                           "XDG_STATE_HOME": os.path.join(home, ".local", "state"),
                           "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "LC_ALL": "C"})
        for k in ("SYNCAGENT_CONFIG", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE",
                  "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES"):
            os.environ.pop(k, None)
        n = self.args.devices
        self.devices = [Device(self, i, DEVICE_NAMES[i], self.root) for i in range(n)]
        if self.policy:
            self.ro = self.devices[-1]
            self.excluded = self.devices[int(self.prng.random() * n)]
            self.rule_dir = DEVICES_RULE_DIRS[int(self.prng.random() * len(DEVICES_RULE_DIRS))]
        hub = os.path.join(self.root, "hub.git")
        if self.args.topology == "hub":
            # an ordinary bare repository every device meets through (SPEC "Hub"); no direct peers
            subprocess.run(["git", "init", "-q", "--bare", hub], check=True)
        for d in self.devices:
            if self.args.topology == "mesh":
                peers = [o for o in self.devices if o is not d]
            elif self.args.topology == "star":
                peers = [o for o in self.devices if o is not d and (d.idx == 0 or o.idx == 0)]
            else:
                peers = []
            os.makedirs(d.dir)
            cmd = [self.binary, "init", "--device", d.name, "--data", d.data, "--state", d.state, "--config", d.config]
            for o in peers:
                cmd += ["--peer", "%s=%s" % (o.name, o.store)]
            if self.args.topology == "hub":
                cmd += ["--peer", "hub=%s" % hub]
            r = subprocess.run(cmd, capture_output=True, timeout=60)
            if r.returncode != 0:
                raise Failure("`syncagent init` for %s failed (%d): %s" % (d.name, r.returncode, (r.stdout + r.stderr).decode(errors="replace")[-600:]))
            with open(d.config) as f:
                text = f.read()
            text = edit_config(text)
            if self.args.topology == "hub":
                text = text.replace('name = "hub"\n', 'name = "hub"\nhub = true\n', 1)
                if "hub = true" not in text:
                    raise Failure("could not mark the hub peer in %s" % d.config)
            with open(d.config, "w") as f:
                f.write(text + self.policy_config(d))
        if self.policy:
            self.set_mode_line(self.ro)
            self.note("policy: rules %s never; %s/** only on %s (not on %s); %s max_bytes %d; %s manual; %s is receive-only" % (
                NEVER_GLOB, show(self.rule_dir), ", ".join(d.name for d in self.devices if d is not self.excluded),
                self.excluded.name, MAX_BYTES_GLOB, MAX_BYTES, MANUAL_GLOB, self.ro.name))
        for d in self.devices:
            d.status()       # the edited config must load
        r = self.devices[0].git("rev-parse", "--show-object-format")
        if r.returncode == 0 and r.stdout.strip():
            self.objfmt = r.stdout.decode().strip()

    def policy_config(self, dev):
        """--policy: the [[rule]]s every device gets (and the mode line of the receive-only device)."""
        if not self.policy:
            return ""
        q = lambda v: json.dumps(v, ensure_ascii=False)
        text = "\n# convergence.py --policy\n"
        text += "[[rule]]\npath = %s\nsync = \"never\"\n\n" % q(NEVER_GLOB)
        text += "[[rule]]\npath = %s\ndevices = [%s]\n\n" % (
            q(self.rule_dir.decode() + "/**"), ", ".join(q(d.name) for d in self.devices if d is not self.excluded))
        text += "[[rule]]\npath = %s\nmax_bytes = %d\n\n" % (q(MAX_BYTES_GLOB), MAX_BYTES)
        text += "[[rule]]\npath = %s\nsync = \"manual\"\n" % q(MANUAL_GLOB)
        return text

    def set_mode_line(self, dev):
        """mode = "receive-only" at the top level (before any table), right after the device line."""
        with open(dev.config) as f:
            text = f.read()
        new, n = re.subn(r'(?m)^(device = .*)$', r'\1\nmode = "receive-only"', text, count=1)
        if n != 1:
            raise Failure("no `device = ` line in %s to put the mode after" % dev.config)
        with open(dev.config, "w") as f:
            f.write(new)

    # -- file operations (bytes paths, exact names); each returns a description or None (skipped) --
    def ensure_parent(self, dev, rel):
        comps = rel.split(b"/")[:-1]
        cur = dev.bdata
        for c in comps:
            cur = os.path.join(cur, c)
            try:
                st = os.lstat(cur)
            except FileNotFoundError:
                try:
                    os.mkdir(cur)
                    continue
                except OSError:
                    try:
                        st = os.lstat(cur)
                    except OSError:
                        return False
            if not stat.S_ISDIR(st.st_mode):
                return False
        return True

    def forget_under(self, dev, rel):
        pre = rel + b"/"
        for k in [k for k in dev.written if k == rel or k.startswith(pre)]:
            del dev.written[k]

    def write_file(self, dev, rel, data, exe=False, atomic=None, mtime=None):
        if atomic is None:
            atomic = self.chance(0.4)
        if self.off_limits(dev, rel):
            return None
        if not self.ensure_parent(dev, rel):
            return None
        p = dev.abs(rel)
        try:
            m = os.lstat(p).st_mode
            if stat.S_ISDIR(m) or stat.S_ISFIFO(m):
                return None  # (opening a FIFO to write would block)
        except FileNotFoundError:
            pass
        mode = 0o755 if exe else 0o644
        try:
            if atomic:
                self.tmpn += 1
                tmp = os.path.join(os.fsencode(self.root), b"tmp", b"w%d" % self.tmpn)
                with open(tmp, "wb") as f:
                    f.write(data)
                os.chmod(tmp, mode)
                if mtime is not None:
                    os.utime(tmp, (mtime, mtime))
                os.rename(tmp, p)
            else:
                try:
                    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, mode)
                except OSError as e:
                    if e.errno != errno.ELOOP:
                        raise
                    os.unlink(p)
                    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, mode)
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                    f.flush()
                    replaced = not same_inode(f.fileno(), p)
                os.chmod(p, mode)
                if mtime is not None:
                    os.utime(p, (mtime, mtime))
                if replaced:
                    # the path was replaced (a checkout renamed a file over it) while the driver held
                    # it open: its bytes went to an unlinked inode, which no agent can see
                    self.note("write %s on %s raced with a replacement of the file; not counted" % (show(rel), dev.name))
                    self.forget_under(dev, rel)
                    return None
        except OSError as e:
            self.note("write %s on %s skipped: %s" % (show(rel), dev.name, e))
            return None
        self.forget_under(dev, rel)
        dev.written[rel] = (data, self.label())
        self.known.add(rel)
        return "write %s (%d bytes%s%s)" % (show(rel), len(data), ", exec" if exe else "", ", atomic" if atomic else "")

    def make_link(self, dev, rel, target, mtime=None):
        if self.off_limits(dev, rel):
            return None
        if not self.ensure_parent(dev, rel):
            return None
        p = dev.abs(rel)
        try:
            st = os.lstat(p)
            if stat.S_ISDIR(st.st_mode):
                return None
            os.unlink(p)
        except FileNotFoundError:
            pass
        try:
            os.symlink(target, p)
            if mtime is not None:
                os.utime(p, (mtime, mtime), follow_symlinks=False)
        except OSError as e:
            self.note("symlink %s skipped: %s" % (show(rel), e))
            return None
        self.forget_under(dev, rel)
        dev.written[rel] = (target, self.label())
        self.known.add(rel)
        return "symlink %s -> %s" % (show(rel), show(target))

    def remove(self, dev, rel):
        p = dev.abs(rel)
        try:
            if stat.S_ISDIR(os.lstat(p).st_mode):
                shutil.rmtree(p)
            else:
                os.unlink(p)
        except OSError as e:
            self.note("remove %s skipped: %s" % (show(rel), e))
            return None
        self.forget_under(dev, rel)
        return "delete %s" % show(rel)

    def read_blob(self, dev, rel):
        p = dev.abs(rel)
        st = os.lstat(p)
        if stat.S_ISLNK(st.st_mode):
            return os.readlink(p)
        if stat.S_ISREG(st.st_mode):
            with open(p, "rb") as f:
                return f.read()
        return None

    def rename(self, dev, src, dst):
        if src == dst or dst.startswith(src + b"/"):
            return None
        if self.off_limits(dev, dst):
            return None
        if not self.ensure_parent(dev, dst):
            return None
        ps, pd = dev.abs(src), dev.abs(dst)
        try:
            sst = os.lstat(ps)
            is_dir = stat.S_ISDIR(sst.st_mode)
            try:
                if stat.S_ISDIR(os.lstat(pd).st_mode):
                    return None            # never onto a directory
                if is_dir:
                    return None
            except FileNotFoundError:
                pass
            if is_dir:
                moved = {k: v for k, v in dev.written.items() if k.startswith(src + b"/")}
                os.rename(ps, pd)
                self.forget_under(dev, src)
                self.forget_under(dev, dst)
                for k, v in moved.items():
                    dev.written[dst + k[len(src):]] = v
                for d, _, files in os.walk(pd):
                    for n in files:
                        self.known.add(os.path.relpath(os.path.join(d, n), dev.bdata))
                return "mv dir %s -> %s" % (show(src), show(dst))
            before = self.read_blob(dev, src)
            os.rename(ps, pd)
            after = self.read_blob(dev, dst)
        except (OSError, TypeError) as e:
            self.note("rename %s skipped: %s" % (show(src), e))
            return None
        self.forget_under(dev, src)
        self.forget_under(dev, dst)
        if before is not None and before == after:
            dev.written[dst] = (after, self.label())
        self.known.add(dst)
        return "mv %s -> %s" % (show(src), show(dst))

    def file_to_dir(self, dev, rel):
        inner = rel + b"/" + self.pick(PLAIN_LEAVES + [b"inner.txt"])
        data = self.content(dev, b"swap-in")
        if self.is_never(rel) or self.off_limits(dev, inner):
            return None                    # no directory named like a never file; nothing in the rule's dir
        if self.remove(dev, rel) is None:
            return None
        try:
            os.mkdir(dev.abs(rel))
        except OSError:
            return None
        if self.write_file(dev, inner, data) is None:
            return None
        return "file->dir %s (now holds %s)" % (show(rel), show(inner))

    def dir_to_file(self, dev, rel):
        data = self.content(dev, b"swap-out")
        if self.remove(dev, rel) is None:
            return None
        if self.write_file(dev, rel, data) is None:
            return None
        return "dir->file %s" % show(rel)

    def random_op(self, dev):
        """One random operation on dev's data directory; returns its description (or None)."""
        self.opn += 1
        files, links, dirs = dev.listing()
        entries = files + links
        kind = self.rng.choices(
            ["new", "overwrite", "append", "delete", "rename", "symlink", "file2dir", "dir2file",
             "odd", "nested", "rmtree", "chmod", "mvdir", "mkdir", "fifo"],
            [20, 15, 10, 9, 10, 6, 5, 4, 9, 7, 2, 4, 2, 4, 2])[0]
        target = self.pick(entries)
        ftarget = self.pick(files)
        dtarget = self.pick(dirs)
        newpath = self.rand_path()
        data = self.content(dev)
        exe = self.chance(0.15)
        if kind == "new":
            return self.write_file(dev, newpath, data, exe)
        if kind == "odd":
            return self.write_file(dev, self.rand_path(odd=True), data, exe)
        if kind == "nested":
            return self.write_file(dev, self.rand_path(depth=self.rng.randrange(2, 5)), data, exe)
        if kind == "overwrite":
            return self.write_file(dev, ftarget or newpath, data, exe)
        if kind == "append":
            if ftarget is None:
                return None
            p = dev.abs(ftarget)
            try:
                fd = os.open(p, os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW)
                with os.fdopen(fd, "r+b") as f:
                    old = f.read()
                    f.write(data)
                    f.flush()
                    replaced = not same_inode(f.fileno(), p)
            except OSError as e:
                self.note("append skipped: %s" % e)
                return None
            if replaced:
                self.note("append to %s on %s raced with a replacement of the file; not counted" % (show(ftarget), dev.name))
                self.forget_under(dev, ftarget)
                return None
            dev.written[ftarget] = (old + data, self.label())
            return "append %d bytes to %s" % (len(data), show(ftarget))
        if kind == "delete":
            if target is None or len(entries) <= 3:
                return None
            return self.remove(dev, target)
        if kind == "rename":
            if target is None:
                return None
            r = self.rng.random()
            if r < 0.25 and ftarget is not None:
                dst = ftarget                      # over an existing file
            elif r < 0.6:
                dst = b"/".join(target.split(b"/")[:-1] + [self.pick(PLAIN_LEAVES + ODD_LEAVES)])
            else:
                dst = newpath
            return self.rename(dev, target, dst)
        if kind == "symlink":
            sib = target.split(b"/")[-1] if target else b"a.txt"
            tgt = self.pick(LINK_TARGETS + [sib])
            return self.make_link(dev, target if (target and self.chance(0.3)) else newpath, tgt)
        if kind == "file2dir":
            return self.file_to_dir(dev, ftarget) if ftarget else None
        if kind == "dir2file":
            if dtarget is None:
                return None
            n = sum(1 for e in entries if e.startswith(dtarget + b"/"))
            if n > 8 or len(entries) - n < 3:
                return None
            return self.dir_to_file(dev, dtarget)
        if kind == "rmtree":
            if dtarget is None:
                return None
            n = sum(1 for e in entries if e.startswith(dtarget + b"/"))
            if n > 5 or len(entries) - n < 3:
                return None
            return self.remove(dev, dtarget)
        if kind == "chmod":
            if ftarget is None:
                return None
            try:
                p = dev.abs(ftarget)
                m = os.lstat(p).st_mode
                os.chmod(p, (m & 0o7777) ^ 0o111)
            except OSError:
                return None
            return "chmod %s %s" % ("-x" if m & 0o100 else "+x", show(ftarget))
        if kind == "mkdir":
            # an empty directory (maybe nested): it syncs like a file
            rel = self.rand_path(depth=self.rng.randrange(1, 3))
            try:
                os.makedirs(dev.abs(rel))
            except OSError as e:
                self.note("mkdir skipped: %s" % e)
                return None
            return "mkdir %s" % show(rel)
        if kind == "fifo":
            # something syncagent does not sync, maybe where a peer's file must go: never a deletion,
            # never replaced; every FIFO goes before a quiescence check (then what it blocked lands)
            rel = self.rand_path()
            p = dev.abs(rel)
            if os.path.lexists(p):
                return None
            try:
                self.ensure_parent(dev, rel)
                os.mkfifo(p)
            except OSError as e:
                self.note("mkfifo skipped: %s" % e)
                return None
            return "mkfifo %s" % show(rel)
        if kind == "mvdir":
            if dtarget is None:
                return None
            return self.rename(dev, dtarget, self.pick(DIR_NAMES) + b"-moved%d" % self.rng.randrange(3))
        return None

    def do_op(self, dev):
        desc = self.random_op(dev)
        if desc:
            self.note("%s%s: %s" % (dev.name, "" if dev.running() else " (stopped)", desc))
        self.check_all_alive()
        t = self.pick([0, 0, 0, 0.02, 0.05, 0.1, 0.3])
        if t:
            time.sleep(t)

    def check_all_alive(self):
        for d in self.devices:
            d.check_alive()

    # -- rounds --
    def normal_round(self):
        n = self.rng.randrange(6, 16)
        for _ in range(n):
            r = self.rng.random()
            dev = self.pick(self.devices)
            if r < 0.08 and dev.running():
                dev.stop()                            # further ops on dev happen while it is stopped
            elif r < 0.16 and dev.running():
                # a burst, then kill -9 right away (inside the debounce), maybe a few ops while dead
                for _ in range(self.rng.randrange(1, 4)):
                    self.do_op(dev)
                dev.kill9()
                for _ in range(self.rng.randrange(0, 3)):
                    self.do_op(dev)
                if self.chance(0.6):
                    dev.start()
            elif r < 0.22:
                stopped = [d for d in self.devices if not d.running()]
                d = self.pick(stopped)
                if d:
                    d.start()
            else:
                self.do_op(dev)

    def conflict_round(self):
        """Two or more devices edit the same paths while partitioned (their agents stopped)."""
        k = self.rng.randrange(2, min(len(self.devices), 3) + 1)
        group = self.rng.sample(self.devices, k)
        self.note("partition: %s" % ", ".join(d.name for d in group))
        for d in group:
            if d.running():
                if self.chance(0.25):
                    d.kill9()
                else:
                    d.stop()
        ref_files, ref_links, _ = group[0].listing()
        paths = []
        for _ in range(self.rng.randrange(1, 5)):
            p = self.pick(ref_files + ref_links) if self.chance(0.7) else None
            paths.append(p or self.rand_path())
        now = time.time()
        for path in paths:
            shared = None
            for d in group:
                self.opn += 1
                r = self.rng.random()
                mtime = now - self.pick([0, 0, 3, 20, 60])
                data = self.content(d, b"conflict")
                if r < 0.08 and shared is not None:
                    desc = self.write_file(d, path, shared, mtime=mtime)          # the same change
                elif r < 0.18:
                    desc = self.remove(d, path)
                elif r < 0.26:
                    desc = self.file_to_dir(d, path) if os.path.lexists(d.abs(path)) else None
                elif r < 0.34:
                    desc = self.make_link(d, path, self.pick(LINK_TARGETS) + d.name.encode(), mtime=mtime)
                else:
                    desc = self.write_file(d, path, data, exe=self.chance(0.1), mtime=mtime)
                    shared = data
                if desc:
                    self.note("%s (partitioned): %s" % (d.name, desc))
            # the others go on meanwhile
            other = self.pick([d for d in self.devices if d not in group])
            if other is not None and self.chance(0.5):
                self.do_op(other)
        for d in group:
            if self.chance(0.3):
                self.do_op(d)
        order = list(group)
        self.rng.shuffle(order)
        for d in order:
            d.start()
            if self.chance(0.3):
                time.sleep(0.5)

    # -- quiescence and invariants --
    @staticmethod
    def describe_entry(v):
        if v is None:
            return "absent"
        if v[0] == "file":
            return "file(%d bytes %s%s)" % (len(v[2]), hashlib.sha1(v[2]).hexdigest()[:8], ", exec" if v[1] else "")
        if v[0] == "link":
            return "link(-> %s)" % show(v[1])
        return v[0]

    def diff_snapshots(self, snaps, limit=10):
        """The paths whose entry is not the same on every device, each with every device's entry."""
        out = []
        keys = set()
        for snap in snaps.values():
            keys |= set(snap)
        for k in sorted(keys):
            # --policy: only the devices that should hold the path (no never path; not the rule's
            # directory on the excluded device: check_invariants sees that it holds nothing there)
            devs = [d for d in self.devices if self.holds(d, k)] if self.policy else self.devices
            vals = [snaps[d.name].get(k) for d in devs]
            if self.policy and k.endswith(b"/"):
                # --policy: empty directories are not compared (a directory holding only a device's
                # `never` paths, or the devices rule's directory, is empty on some devices only)
                continue
            if all(v == vals[0] for v in vals):
                continue
            out.append("%s: %s" % (show(k), ", ".join("%s=%s" % (d.name, self.describe_entry(v))
                                                       for d, v in zip(devs, vals))))
            if len(out) >= limit:
                out.append("...")
                break
        return out

    def quiescence_problem(self):
        """None when every device is quiescent and identical, else what is not (yet) so."""
        self.check_all_alive()
        if self.policy:
            acted = self.release_held()
            if acted:
                return acted
        mains = {d.name: d.main() for d in self.devices}
        if None in mains.values() or len(set(mains.values())) != 1:
            return "main differs: " + ", ".join("%s=%s" % (n, (m or "none")[:12]) for n, m in mains.items())
        for d in self.devices:
            st = d.status(quiet=True)
            if st is None:
                return "status --json failed on %s" % d.name
            if st.get("pending") != 0:
                return "%s: pending=%s" % (d.name, st.get("pending"))
            if st.get("running") is not True:
                return "%s: status says not running" % d.name
        snaps = {d.name: d.snapshot() for d in self.devices}
        diffs = self.diff_snapshots(snaps)
        if diffs:
            return "data directories differ: " + "; ".join(diffs)
        for d in self.devices:
            want, err = d.data_tree()
            if err:
                return "%s: %s" % (d.name, err)
            if self.policy:
                problem = self.policy_tree_problem(d)
                if problem:
                    return problem
                continue
            have = d.head_tree()
            if want != have:
                return "%s: HEAD tree %s is not its data directory %s: %s" % (
                    d.name, (have or "none")[:12], want[:12], "; ".join(d.tree_diff(have, want)[:10]) if have else "")
        if self.mains_snapshot() != mains:
            return "main moved during the check"
        return None

    def release_held(self):
        """--policy, before every quiescence check: the receive-only device reverts its local edits
        (`syncagent revert`), every other device shares what it holds (`send --all`). Returns what it
        did (the check waits for the result) or None."""
        done = []
        for d in self.devices:
            st = d.status(quiet=True)
            if st is None:
                return "status --json failed on %s" % d.name
            if any("where a file must be" in p for p in st.get("problems") or []):
                moved = self.clear_never_blockers(d)
                if moved:
                    done.append("%s: its own never files %s were where a peer's file must be; moved away" % (
                        d.name, ", ".join(show(k) for k in moved[:5])))
            if d is self.ro:
                n, args = st.get("localChanges"), ("revert",)
            else:
                n, args = st.get("held"), ("send", "--all")
            if not n:
                continue
            r = d.cli(*args, timeout=90)
            self.acted[args[0]] += 1
            out = (r.stdout + r.stderr).decode(errors="replace").strip()
            self.note("%s on %s (%s held): exit %d: %s" % (" ".join(args), d.name, n, r.returncode, out[-300:]))
            if r.returncode != 0:
                raise Failure("`syncagent %s` on %s failed (%d): %s" % (" ".join(args), d.name, r.returncode, out[-500:]))
            h = d.cli("held", "--json", timeout=30)
            done.append("%s: %s held before `%s`, now %s" % (d.name, n, " ".join(args), h.stdout.decode(errors="replace").strip()[:300]))
        return "; ".join(done) or None

    def clear_never_blockers(self, d):
        """A peer made a file of a directory in which d holds never files of its own: the merge does
        not touch them, so the agent cannot write the file and says "move it away" (a problem in
        status). The driver does what the user would: it deletes those never files. Returns them."""
        r = d.git("ls-tree", "-r", "-z", "--name-only", "--full-tree", "HEAD")
        files = set(p for p in r.stdout.split(b"\0") if p) if r.returncode == 0 else set()
        moved = []
        for k in sorted(k for k in d.written if self.is_never(k)):
            comps = k.split(b"/")
            if any(b"/".join(comps[:i]) in files for i in range(1, len(comps))):
                if self.remove(d, k):
                    moved.append(k)
        if moved:
            self.note("%s: never files in the way of a peer's file, deleted as the agent asks: %s" % (
                d.name, ", ".join(show(k) for k in moved)))
        return moved

    @staticmethod
    def parse_entries(out, head):
        """`ls-tree -r -z` (head) or `ls-files -s -z` output: path -> (mode, oid)."""
        entries = {}
        for rec in out.split(b"\0"):
            if not rec:
                continue
            meta, path = rec.split(b"\t", 1)
            f = meta.split(b" ")
            entries[path] = (f[0], f[2]) if head else (f[0], f[1])
        return entries

    def policy_tree_problem(self, d):
        """--policy: HEAD is the data directory (run after d.data_tree(), which leaves the data dir in
        the scratch index) on the paths d holds: never paths are nobody's, and the excluded device's
        HEAD has the rule's directory, its disk not."""
        r = d.git("ls-tree", "-r", "-z", "--full-tree", "HEAD")
        if r.returncode != 0:
            return "%s: no HEAD tree: %s" % (d.name, r.stderr.decode(errors="replace")[-200:])
        marker = b"/.syncagent-keep"
        have = {k: v for k, v in self.parse_entries(r.stdout, True).items() if self.holds(d, k) and not k.endswith(marker)}
        r = subprocess.run(["git", "--git-dir=" + d.store, "ls-files", "-s", "-z"], capture_output=True,
                           env=d.scratch_env(), timeout=60)
        if r.returncode != 0:
            return "%s: git ls-files failed: %s" % (d.name, r.stderr.decode(errors="replace")[-200:])
        want = {k: v for k, v in self.parse_entries(r.stdout, False).items() if self.holds(d, k) and not k.endswith(marker)}
        if have == want:
            return None
        diffs = []
        for k in sorted(set(have) | set(want)):
            if have.get(k) != want.get(k):
                what = "only in data" if k not in have else "only in HEAD" if k not in want else "differs"
                diffs.append("%s: %s" % (show(k), what))
        return "%s: HEAD tree is not its data directory (on the paths it holds): %s" % (d.name, "; ".join(diffs[:10]))

    def mains_snapshot(self):
        return {d.name: d.main() for d in self.devices}

    def clear_obstacles(self):
        """Removes every FIFO the run made: what they kept out must land by itself."""
        for d in self.devices:
            for top, dirs, files in os.walk(d.bdata):
                for n in files:
                    p = os.path.join(top, n)
                    try:
                        if stat.S_ISFIFO(os.lstat(p).st_mode):
                            os.unlink(p)
                            self.note("%s: removed the FIFO %s" % (d.name, show(os.path.relpath(p, d.bdata))))
                    except OSError:
                        pass

    def wait_quiescent(self, what):
        self.clear_obstacles()
        t0 = time.monotonic()
        deadline = t0 + self.args.timeout
        problem = None
        while time.monotonic() < deadline:
            problem = self.quiescence_problem()
            if problem is None:
                self.note("quiescent %s" % what)
                return int((time.monotonic() - t0) * 1000)
            time.sleep(0.2)
        extra = []
        for d in self.devices:
            st = d.status(quiet=True) or {}
            peers = ["%s reachable=%s lastError=%s" % (p.get("name"), p.get("reachable"), p.get("lastError"))
                     for p in st.get("peers", []) if p.get("lastError") or p.get("reachable") is False]
            if st.get("problems") or peers:
                extra.append("%s: problems=%s %s" % (d.name, json.dumps(st.get("problems"), ensure_ascii=False)[:500], "; ".join(peers)))
        raise Failure("no quiescence %s within %d s: %s%s" % (what, self.args.timeout, problem,
                                                                 "".join("\n    " + e for e in extra)))

    def heal(self):
        order = list(self.devices)
        self.rng.shuffle(order)
        for d in order:
            if not d.running():
                d.start()
        t0 = time.monotonic()
        self.note("heal: every agent runs")
        if self.chance(0.5):
            for d in order:
                r = d.cli("sync", timeout=90)
                if r.returncode != 0:
                    self.note("sync on %s exited %d: %s" % (d.name, r.returncode, r.stderr.decode(errors="replace").strip()[-300:]))
        self.wait_quiescent("after heal")
        return int((time.monotonic() - t0) * 1000)

    def check_invariants(self, phase):
        # nothing of the agent's own in any data dir, and nothing the driver did not write
        for d in self.devices:
            for rel in d.all_names():
                if b"syncagent" in rel.split(b"/")[-1].lower():
                    raise Failure("%s: the agent left %s in the data directory (%s)" % (d.name, show(rel), phase))
            for rel, v in d.snapshot().items():
                if v[0] == "other" or v[0] == "vanished":
                    raise Failure("%s: %s is neither a file nor a link (%s)" % (d.name, show(rel), v[0]))
                if v[0] == "empty dir":
                    continue  # directories come and go with the files (mkdir, renames, deletions)
                if rel not in self.known and not CONFLICT_COPY.search(rel):
                    raise Failure("%s: %s is in the data directory, but no device ever wrote it (agent litter?) (%s)" % (d.name, show(rel), phase))
        # nothing lost
        for d in self.devices:
            r = d.git("rev-list", "--all", "--objects")
            if r.returncode != 0:
                raise Failure("%s: git rev-list --all --objects failed: %s" % (d.name, r.stderr.decode(errors="replace")[-300:]))
            have = set(line[:64].split(b" ")[0].decode() for line in r.stdout.splitlines())
            for rel, (data, label) in sorted(d.written.items()):
                if self.is_never(rel):
                    continue                        # never stored: check_policy sees it on the disk
                oid = blob_id(data, self.objfmt)
                if oid not in have and d is self.ro and self.disk_holds(d, rel, data):
                    continue                        # a local edit not reverted (yet): on the disk
                if oid not in have:
                    where = ("the object is in the store, but no ref reaches it (dropped from history)"
                             if d.git("cat-file", "-e", oid).returncode == 0 else "the object is not in the store at all")
                    raise Failure("%s: lost the driver's last write at %s (%d bytes, blob %s, written %s), checked %s: "
                                  "not reachable from any ref of %s; %s"
                                  % (d.name, show(rel), len(data), oid[:12], label, phase, d.store, where))
        # fsck
        for d in self.devices:
            # The running agent packs loose objects when idle: an object fsck listed loose can be
            # in a pack by the time it reads it, and fsck's list of packs can miss the new pack
            # ("No such file or directory", "missing commit"). Asked again until clean, for up to
            # 10 s: a store that is really damaged fails every time.
            deadline = time.monotonic() + 10
            while True:
                r = d.git("fsck", "--no-dangling", "--no-progress")
                out = (r.stdout + r.stderr).decode(errors="replace").strip()
                if (r.returncode == 0 and not out) or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
            if r.returncode != 0 or out:
                raise Failure("%s: git fsck --no-dangling (exit %d, %s): %s" % (d.name, r.returncode, phase, out[-800:]))
        if self.policy:
            self.check_policy(phase)

    def policy_summary(self):
        """--policy: what this round exercised (and a fresh count for the next one)."""
        if not self.policy:
            return ""
        never = sum(1 for d in self.devices for k in d.written if self.is_never(k))
        in_dir = sum(1 for k in self.devices[0].git("ls-tree", "-r", "-z", "--name-only", "--full-tree", "main").stdout.split(b"\0")
                     if k and self.under_rule_dir(k))
        out = "; policy: %d revert, %d send --all, %d never files, %d paths in %s/" % (
            self.acted["revert"], self.acted["send"], never, in_dir, show(self.rule_dir))
        self.acted = {"revert": 0, "send": 0}
        return out

    def disk_holds(self, dev, rel, data):
        try:
            return self.read_blob(dev, rel) == data
        except OSError:
            return False

    def check_policy(self, phase):
        """--policy: the rules held (run after quiescence, when every main is the same commit)."""
        for d in self.devices:
            snap = d.snapshot()
            # the excluded device holds nothing in the rule's directory
            if d is self.excluded:
                there = sorted(k for k in snap if self.under_rule_dir(k))
                if there:
                    raise Failure("%s: holds %s in %s/, which its devices rule keeps off its disk (%s)"
                                  % (d.name, ", ".join(show(k) for k in there[:5]), show(self.rule_dir), phase))
            # each device's never files are exactly what the driver last wrote there
            disk = {k: (v[2] if v[0] == "file" else v[1]) for k, v in snap.items() if self.is_never(k)}
            model = {k: data for k, (data, _) in d.written.items() if self.is_never(k)}
            if disk != model:
                bad = []
                for k in sorted(set(disk) | set(model)):
                    if disk.get(k) != model.get(k):
                        label = d.written[k][1] if k in d.written else "-"
                        bad.append("%s: disk=%s, driver wrote %s (%s)" % (
                            show(k), "absent" if k not in disk else "%d bytes %s" % (len(disk[k]), hashlib.sha1(disk[k]).hexdigest()[:8]),
                            "nothing" if k not in model else "%d bytes %s" % (len(model[k]), hashlib.sha1(model[k]).hexdigest()[:8]), label))
                raise Failure("%s: its never paths (%s) are not what the driver left there (%s): %s"
                              % (d.name, NEVER_GLOB, phase, "; ".join(bad[:8])))
        # never committed: no never path in any tree of main's history (every main is this commit)
        d = self.devices[0]
        r = d.git("log", "-m", "--root", "--no-renames", "--format=", "--name-only", "-z", "main")
        if r.returncode != 0:
            raise Failure("%s: git log failed: %s" % (d.name, r.stderr.decode(errors="replace")[-300:]))
        committed = sorted(set(p for p in r.stdout.replace(b"\n", b"\0").split(b"\0") if p and self.is_never(p)))
        if committed:
            raise Failure("never paths were committed to main (%s): %s" % (phase, ", ".join(show(p) for p in committed[:8])))
        # the receive-only device committed nothing of its own: no commit of its on main but merges,
        # and no merge that kept its local bytes
        r = self.ro.git("log", "--format=%H %P%x00%an%x00%B%x01", "main")
        for rec in r.stdout.split(b"\x01"):
            rec = rec.strip(b"\n")
            if not rec:
                continue
            ids, author, body = rec.split(b"\0", 2)
            if author.decode(errors="replace") != self.ro.name:
                continue
            if len(ids.split()) < 3 or b"changed on disk during the merge" in body:
                raise Failure("%s is receive-only, but main has a commit of its own content (%s): %s %s"
                              % (self.ro.name, phase, ids.split()[0].decode()[:12], body.decode(errors="replace").strip()[:300]))

    def check_idle(self):
        before = self.mains_snapshot()
        time.sleep(self.args.idle_seconds)            # observing, not a pass criterion
        self.check_all_alive()
        after = self.mains_snapshot()
        for n in before:
            if before[n] != after[n]:
                raise Failure("%s: main moved while idle (%s -> %s)" % (n, (before[n] or "none")[:12], (after[n] or "none")[:12]))

    def open_records(self):
        out = {}
        for d in self.devices:
            recs = [r for r in d.records() if r.get("status") == "open"]
            out[d.name] = recs
        return out

    def records_problem(self, opened):
        for name, recs in opened.items():
            by_path = {}
            for r in recs:
                key = r.get("pathBytes") or r.get("path")
                by_path.setdefault(key, []).append(r.get("id"))
            for key, ids in by_path.items():
                if len(ids) > 1:
                    p = bytes.fromhex(key) if re.fullmatch(r"(?:[0-9a-f]{2})+", key or "") else str(key).encode()
                    return "%s: %d open records for %s: %s" % (name, len(ids), show(p), ", ".join(ids))
        sets = {n: sorted(r.get("id") for r in recs) for n, recs in opened.items()}
        if len(set(tuple(s) for s in sets.values())) != 1:
            return "open record ids differ: " + "; ".join("%s=%s" % (n, ",".join(s) or "none") for n, s in sets.items())
        return None

    def check_conflicts(self):
        """Returns the number of open records; resolves them and waits for quiescence again."""
        deadline = time.monotonic() + 20
        while True:
            opened = self.open_records()
            problem = self.records_problem(opened)
            if problem is None:
                break
            if time.monotonic() > deadline:
                raise Failure("conflict records (after 20 s): " + problem)
            self.check_all_alive()
            time.sleep(0.2)
        n = len(next(iter(opened.values())))
        for d in self.devices:
            st = d.status()
            if (st.get("conflicts") or {}).get("open") != n:
                raise Failure("%s: status says %s open conflicts, `conflicts --json` lists %d" % (d.name, (st.get("conflicts") or {}).get("open"), n))
        if n == 0:
            return 0, None
        # (never on the receive-only device: it settles nothing of its own)
        d = self.pick([x for x in self.devices if x is not self.ro])
        r = d.cli("resolve", "--all", "--keep", "newest", timeout=90)
        if r.returncode != 0:
            raise Failure("`resolve --all --keep newest` on %s failed (%d): %s" % (d.name, r.returncode, (r.stdout + r.stderr).decode(errors="replace")[-500:]))
        self.note("resolved %d records on %s" % (n, d.name))
        t0 = time.monotonic()
        deadline = t0 + self.args.timeout
        while True:
            opened = self.open_records()
            left = {k: [r.get("id") for r in v] for k, v in opened.items() if v}
            if not left:
                break
            if time.monotonic() > deadline:
                raise Failure("records still open %d s after `resolve --all` on %s: %s" % (self.args.timeout, d.name, left))
            self.check_all_alive()
            time.sleep(0.2)
        self.wait_quiescent("after resolve --all on %s" % d.name)
        return n, int((time.monotonic() - t0) * 1000)

    def execute(self):
        self.setup()
        # a starting point: a few files on the first device (and one on each other), then everyone runs
        self.round = 0
        for i in range(6):
            self.do_op(self.devices[0]) if i else self.write_file(self.devices[0], b"a.txt", b"start\n")
        for d in self.devices[1:]:
            self.write_file(d, b"start-%s.txt" % d.name.encode(), b"hello from %s\n" % d.name.encode())
        self.heal()
        self.check_invariants("after the first heal")
        self.sample_rss()
        for rnd in range(1, self.args.rounds + 1):
            self.round = rnd
            conflict = rnd % 2 == 0 or self.chance(0.25)
            self.note("round %d begins%s" % (rnd, " (partitioned)" if conflict else ""))
            if conflict:
                self.conflict_round()
                if self.chance(0.5):
                    self.normal_round()
            else:
                self.normal_round()
            settle = self.heal()
            self.check_invariants("after heal")
            self.sample_rss()
            self.check_idle()
            n, rsettle = self.check_conflicts()
            self.check_invariants("after resolve --all" if n else "after the idle check")
            self.settles.append(settle)
            print("seed=%d round=%d/%d%s: settle %d ms%s%s" % (
                self.seed, rnd, self.args.rounds, " (partitioned)" if conflict else "", settle,
                ", %d conflicts resolved, settle %d ms" % (n, rsettle) if n else "", self.policy_summary()), flush=True)
        self.check_rss()

    def sample_rss(self):
        for d in self.devices:
            if d.proc is None:
                continue
            try:
                with open("/proc/%d/status" % d.proc.pid) as f:
                    anon = next(int(l.split()[1]) / 1024.0 for l in f if l.startswith("RssAnon:"))
            except (OSError, StopIteration):
                continue
            r = d.git("rev-list", "--count", "main")
            commits = int(r.stdout.strip() or 0) if r.returncode == 0 else 0
            d.rss.append((d.proc.pid, anon, commits, self.round))

    def check_rss(self):
        """Each agent process's RssAnon from its first sample (after a heal) to its last: it may grow
        by RSS_WARMUP_MB (caches filling) plus RSS_PER_1000_MB for every 1,000 commits on its main."""
        for d in self.devices:
            by_pid = {}
            for pid, anon, commits, rnd in d.rss:
                by_pid.setdefault(pid, []).append((anon, commits, rnd))
            for pid, xs in by_pid.items():
                (a0, c0, r0), (a1, c1, r1) = xs[0], xs[-1]
                bound = RSS_WARMUP_MB + RSS_PER_1000_MB * (c1 - c0) / 1000.0
                line = "rss %s (pid %d): RssAnon %.1f MB at round %d (%d commits) -> %.1f MB at round %d (%d commits): %+.1f MB; bound %.1f MB" % (
                    d.name, pid, a0, r0, c0, a1, r1, c1, a1 - a0, bound)
                self.rss_lines.append(line)
                print(line, flush=True)
                if a1 - a0 > bound:
                    raise Failure("%s: the agent's memory grew %.1f MB over %d commits (%s); bound %.1f MB = %.0f MB warm-up + %.1f MB per 1,000 commits"
                                  % (d.name, a1 - a0, c1 - c0, line, bound, RSS_WARMUP_MB, RSS_PER_1000_MB))

    def stop_all(self):
        procs = [d for d in self.devices if d.proc is not None]
        for d in procs:
            try:
                d.proc.send_signal(signal.SIGTERM)
            except OSError:
                pass
        deadline = time.monotonic() + 10
        for d in procs:
            try:
                d.proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                d.proc.kill()
                d.proc.wait()
            d.proc = None


def main():
    env = os.environ
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", default=env.get("SEED"), help="integer, or several separated by commas (env SEED; default: time)")
    ap.add_argument("--rounds", type=int, default=int(env.get("ROUNDS", 5)))
    ap.add_argument("--devices", type=int, default=int(env.get("DEVICES", 3)))
    ap.add_argument("--topology", choices=["mesh", "star", "hub"], default=env.get("TOPOLOGY", "mesh"))
    ap.add_argument("--binary", default=env.get("SYNCAGENT", ".build/release/syncagent"))
    ap.add_argument("--keep", action="store_true", help="keep the temp dir even when every round holds")
    ap.add_argument("--timeout", type=float, default=120, help="quiescence deadline, seconds (default 120)")
    ap.add_argument("--idle-seconds", type=float, default=3, help="how long to watch idle devices for commits")
    ap.add_argument("--log-level", default="info")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every operation")
    ap.add_argument("--policy", action="store_true", default=env.get("POLICY", "") not in ("", "0"),
                    help="per-path [[rule]]s (never, devices, max_bytes, manual) on every device and the last "
                         "device receive-only, with the invariants adapted (env POLICY=1; default off)")
    args = ap.parse_args()
    if not 3 <= args.devices <= (50 if args.topology == "hub" else 5):
        ap.error("--devices must be 3..5 (3..50 with --topology hub: a mesh of n devices is n*(n-1) links)")
    args.binary = os.path.abspath(args.binary)
    if not (os.path.isfile(args.binary) and os.access(args.binary, os.X_OK)):
        ap.error("--binary %s is not an executable file" % args.binary)
    seeds = [int(s) for s in str(args.seed).split(",")] if args.seed else [int(time.time())]

    def on_signal(signum, frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)

    rounds_ok = 0
    settles = []
    saved_env = dict(os.environ)
    for seed in seeds:
        os.environ.clear()
        os.environ.update(saved_env)
        run = Run(args, seed)
        print("convergence: seed=%d rounds=%d devices=%d topology=%s%s binary=%s" % (
            seed, args.rounds, args.devices, args.topology, " policy" if args.policy else "", args.binary), flush=True)
        ok = False
        try:
            run.execute()
            ok = True
        except Failure as e:
            print("FAILED seed=%d round=%d: %s" % (seed, run.round, e), flush=True)
        except BaseException:
            run.stop_all()
            print("aborted seed=%d round=%d (signal or driver error); kept %s" % (seed, run.round, run.root), flush=True)
            raise
        finally:
            run.stop_all()
        if not ok:
            print("  replay: python3 %s --binary %s --seed %d --rounds %d --devices %d --topology %s%s" % (
                sys.argv[0], args.binary, seed, args.rounds, args.devices, args.topology, " --policy" if args.policy else ""))
            print("  kept %s (every operation: %s/ops.log)" % (run.root, run.root))
            for d in run.devices:
                tail = d.log_tail()
                print("  --- %s: last lines of %s ---" % (d.name, d.log_path))
                for line in tail:
                    print("    " + line)
            sys.stdout.flush()
            sys.exit(1)
        rounds_ok += args.rounds
        settles += run.settles
        if not args.keep:
            shutil.rmtree(run.root, ignore_errors=True)
        else:
            print("  kept %s" % run.root)
    s = sorted(settles) or [0]
    print("convergence: seeds=%s rounds=%d ok, settle p50=%dms max=%dms" % (
        ",".join(map(str, seeds)), rounds_ok, s[len(s) // 2], s[-1]), flush=True)


if __name__ == "__main__":
    main()
