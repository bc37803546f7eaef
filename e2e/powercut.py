#!/usr/bin/env python3
"""Power-cut harness (issue 43): cuts the power under a running agent, again and again, and checks
that what was acknowledged survives and that nothing a cut damaged spreads.

Two devices, `phone` and `watch`, each the other's peer by the path of its store.git (--hub: and
both with a hub, `hub.git`, a bare repository on the ordinary temp dir, as a `[[peer]]` with `hub =
true`: the phone's agent then pushes `refs/heads/devices/phone` there after every commit and merge;
--hub-only: the hub is their only peer, they see each other only through it; --tablet: a third
device, `tablet`, through the hub only and never cut, writes new files of its own as the watch
writes its first, so the phone's hub round now and then finds two devices' new work and folds it
into one join it writes itself, `Store.foldJoins`; the summary counts those folds). The phone's
data and state directories live on cutfs (e2e/cutfs.py: an in-memory FUSE file system that keeps,
next to what programs see, what a disk would still hold after a power cut; --model strict: only
fsync'd bytes and fsync'd directory entries survive; --model journal: ext4's journal, any fsync
also commits every name, rename and truncate so far). The watch lives on the ordinary temp dir.
Both agents run (`syncagent run`); the phone's with cutfs_preload.so in LD_PRELOAD so that its
syncfs(2) reaches cutfs (FUSE never forwards syncfs; see cutfs.py), and with a boot id of its own
(SYNCAGENT_BOOT_ID) that changes at every cut: a power cut is a reboot of the phone.

Per cut, from the seeded generator: a "user program" on the phone and one on the watch write new
files, edit files (rewriting in place, or writing `NAME.tmp` and renaming it over NAME), delete and
rename files, write a few MB now and then, never fsync (--user-fsync: the phone's fsyncs every file
and directory it touches, so that what a cut damages is the agent's own doing); sometimes the same
path on both at once (a conflict); sometimes `syncagent sync` on the phone and `syncagent resolve`
of an open conflict on either device; with --set, sometimes (--set-prob, 0.4) a SyncAgentKit `set`
on the phone: the sample client `watch-app --config PHONE --goal N --once` (N fresh each time)
writes `settings.json` (temp, fsync, rename, fsync of the directory) and returns once the phone's
agent committed it; only that client writes settings.json (the user programs never touch it). After
a seeded delay (0-2 s) the phone's agent, its children, the phone's user program, the phone's CLI
commands and its `set` are frozen (SIGSTOP; the watch's agent and user program too, for a consistent
look), cutfs cuts the power, the phone's processes are killed (SIGKILL), the watch is thawed, the
phone "boots" (new boot id) and its agent is restarted. Then the harness waits (polling, with a
deadline) for both devices to converge -- the same `main` in both stores, equal data directories,
each HEAD its data directory -- and checks:

  * both agents alive; `git fsck --no-dangling` clean on both stores and on hub.git (a failing fsck
    is run again up to 3 times, 1 s apart: a live agent rolling packs up under it is no damage);
  * acknowledged changes are still there: what the phone's user program had written before a
    `syncagent sync` that exited 0, every file of the phone's commit the watch had fetched at the
    cut (refs/remotes/phone/main, or refs/remotes/hub/phone/main through the hub) and every file of
    the commit the hub held as `devices/phone` at the cut, is in the converged state or was
    replaced by a later operation of the harness (a later version, a deletion) or by a conflict
    settlement; a `resolve` that answered stays resolved; settings.json on both devices parses as
    JSON and holds the goal of the last `set` that returned before the cut, or of a later `set`;
  * no temporary of the agent (`.syncagent-*.tmp`) in either data directory;
  * every file the harness writes is self-describing (a header with a version id, the body's length
    and its SHA-256), so a file that is empty, truncated, zero-filled or a mix of two versions is
    recognised: every file on the watch and in the watch's `main` must be a version written whole
    (settings.json, the Kit's JSON, must parse as JSON there);
  * nothing a cut made spreads: at each path the cut changed on the phone (the cut report lists
    them, with git blob ids before and after), the state the cut left -- an empty file, an older
    version ("went back"), a file deleted before the cut that came back, a name that vanished -- must
    never reach the watch, unless the watch already had it or it was the phone's committed version;
    such paths are left out of the comparison of the two data directories while the phone holds
    what the cut left there.

One line per cut (the phase the phone's agent was in when the power went, from the last operations
cutfs saw it make: objects, refs, conflicts-ref, index, apply (writing into the data directory),
state (its own bookkeeping files) or idle; "set" when a `set` was still running at the freeze; "hub
push" when the agent was pushing to hub.git, which cutfs cannot see, decided at the freeze: the
frozen agent has its push thread (`syncagent-push-hub`) or the thread rolling the hub's packs up
alive, or a file under hub.git open for writing, or the phone's ref there freshly locked, or that
ref (or its conflicts record) was written within --idle-ms before the cut and cutfs saw the agent do
nothing since but its bookkeeping (idle or state); a "set" still running wins over both; what the
cut dropped; what it left broken in the phone's state directory), then a summary with the cuts per
phase. The first violation stops the run (unless --keep-going): `FAILED seed=S cut=N: what`, the
temp dir kept (the phone's disk copied to phone-disk-copy before unmounting; harness.log: every
operation and cut; cut-N.json: cutfs's reports; set-N.out: what a `set` said; --trace: every change
cutfs saw, with pids), exit status 1. --keep keeps the temp dir of a passing run too. The binary is
copied into the temp dir first: a rebuild during a run changes nothing.

    python3 e2e/powercut.py --binary .build/release/syncagent --seed 1 --cuts 20
    python3 e2e/powercut.py --seed 12 --cuts 8 --model journal --zero-fill --user-fsync
    python3 e2e/powercut.py --seed 3 --cuts 20 --hub --set     # a hub; SyncAgentKit sets (watch-app)
    python3 e2e/powercut.py --check-fs          # cutfs's own checks: POSIX, durability, git, inotify
    python3 e2e/powercut.py --seed 1 --cuts 1000 --mix
        # the long soak: one run per row of MIX (plain, hub + set, journal + set, hub only + set,
        # journal + hub); --model mix is the same (make soak-powercut MODEL=mix)

The seed fixes every decision of the harness; the agents' own timing still varies, so a failing
seed is replayed by running it again (most replay within a run or two). Needs root, /dev/fuse,
fuse3 and python3-pyfuse3 (for /usr/bin/python3) and cc for the preload. Python 3 standard library
only (cutfs itself runs under /usr/bin/python3 with pyfuse3). Exit status 0: every cut held;
1: a violation; 2: bad usage, set-up failure or a bug of the harness.
"""

import argparse
import ctypes
import errno
import hashlib
import json
import mmap
import os
import random
import re
import select
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
CUTFS = os.path.join(HERE, "cutfs.py")
PRELOAD_SRC = os.path.join(HERE, "cutfs_preload.c")
SYS_PYTHON = "/usr/bin/python3"
EMPTY_BLOB = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
NEVER_SYNCED_RE = re.compile(r"(\.tmp$|~$|^\.#|^\..*\.sw[pox]x?$|^4913$)")
TEMP_RE = re.compile(r"^\.syncagent-.*\.tmp$|^\..*\.syncagent\.tmp$")
HEADER_RE = re.compile(rb"^sa-powercut v=(\d+) len=(\d+) sha256=([0-9a-f]{64})\n")


class Violation(Exception):
    pass


class SetupError(Exception):
    pass


def blob_oid(data):
    h = hashlib.sha1(b"blob %d\0" % len(data))
    h.update(data)
    return h.hexdigest()


def describe_rc(rc):
    if rc is None:
        return "still running"
    if rc < 0:
        try:
            return "killed by %s" % signal.Signals(-rc).name
        except ValueError:
            return "killed by signal %d" % -rc
    return "exit status %d" % rc


def tail(path, n=25):
    try:
        with open(path, "rb") as f:
            lines = f.read().decode("utf-8", "replace").splitlines()
        return "\n".join("    " + l for l in lines[-n:])
    except OSError:
        return "    (no log)"


# ---- self-describing versions ------------------------------------------------------------------

WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november "
         "oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu").split()


def make_version(vid, size, rng, binary=False):
    """A file the harness can recognise: header (version id, body length, body SHA-256), body."""
    if binary:
        body = rng.randbytes(size)
    else:
        lines = []
        n = 0
        while n < size:
            line = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))) + "\n"
            lines.append(line)
            n += len(line)
        body = "".join(lines).encode()
    header = b"sa-powercut v=%d len=%d sha256=%s\n" % (vid, len(body), hashlib.sha256(body).hexdigest().encode())
    return header + body


def parse_version(data):
    """The version id of a whole version, or None (empty, truncated, zero-filled, mixed)."""
    m = HEADER_RE.match(data)
    if not m:
        return None
    body = data[m.end():]
    if len(body) != int(m.group(2)) or hashlib.sha256(body).hexdigest().encode() != m.group(3):
        return None
    return int(m.group(1))


# ---- cutfs ------------------------------------------------------------------------------------

def mounted(mountpoint):
    mp = os.path.realpath(mountpoint)
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                parts = line.split()
                sep = parts.index("-")
                if parts[4].encode().decode("unicode_escape") == mp and parts[sep + 1] == "fuse.cutfs":
                    return True
    except OSError:
        pass
    return False


class CutFS:
    """One cutfs process: mount, commands over its control socket, unmount."""

    def __init__(self, mountpoint, workdir, extra=()):
        self.mountpoint = mountpoint
        self.control = os.path.join(workdir, "cutfs.sock")
        self.ready = os.path.join(workdir, "cutfs.ready")
        self.log = os.path.join(workdir, "cutfs.log")
        self.out = os.path.join(workdir, "cutfs.out")
        self.extra = list(extra)
        self.proc = None

    def mount(self, timeout=30):
        if not os.path.exists(SYS_PYTHON):
            raise SetupError("%s is missing (cutfs runs under Debian's python3 with python3-pyfuse3)" % SYS_PYTHON)
        chk = subprocess.run([SYS_PYTHON, "-c", "import pyfuse3, trio"], capture_output=True, text=True)
        if chk.returncode != 0:
            raise SetupError("pyfuse3 is missing for %s: apt-get install -y fuse3 python3-pyfuse3 (%s)"
                             % (SYS_PYTHON, chk.stderr.strip().splitlines()[-1:]))
        if shutil.which("fusermount3") is None:
            raise SetupError("fusermount3 is missing: apt-get install -y fuse3")
        os.makedirs(self.mountpoint, exist_ok=True)
        for p in (self.ready, self.control):
            if os.path.exists(p):
                os.unlink(p)
        out = open(self.out, "ab")
        self.proc = subprocess.Popen([SYS_PYTHON, CUTFS, self.mountpoint, "--control", self.control,
                                      "--ready", self.ready, "--log", self.log] + self.extra,
                                     stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True)
        out.close()
        deadline = time.monotonic() + timeout
        while not (os.path.exists(self.ready) and mounted(self.mountpoint) and os.path.exists(self.control)):
            if self.proc.poll() is not None:
                raise SetupError("cutfs exited at mount: %s\n%s" % (describe_rc(self.proc.returncode), tail(self.out)))
            if time.monotonic() > deadline:
                raise SetupError("cutfs did not mount %s within %d s\n%s" % (self.mountpoint, timeout, tail(self.out)))
            time.sleep(0.05)
        os.stat(self.mountpoint)
        # The socket file appears at bind, before cutfs listens on it: a refused connect until then.
        while True:
            try:
                self.command("ping")
                break
            except (ConnectionRefusedError, FileNotFoundError) as e:
                if self.proc.poll() is not None:
                    raise SetupError("cutfs exited at mount: %s\n%s" % (describe_rc(self.proc.returncode), tail(self.out)))
                if time.monotonic() > deadline:
                    raise SetupError("cutfs did not answer on %s within %d s (%s)\n%s" % (self.control, timeout, e, tail(self.out)))
                time.sleep(0.05)

    def command(self, cmd, timeout=120):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        try:
            s.connect(self.control)
            s.sendall((cmd + "\n").encode())
            buf = b""
            while not buf.endswith(b"\n"):
                chunk = s.recv(1 << 20)
                if not chunk:
                    break
                buf += chunk
        finally:
            s.close()
        reply = json.loads(buf)
        if not reply.get("ok"):
            raise SetupError("cutfs %s: %s" % (cmd, reply))
        return reply

    def sync(self):
        self.command("sync")

    def cut(self):
        return self.command("cut")

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def unmount(self, timeout=30):
        if self.proc is None:
            return
        deadline = time.monotonic() + timeout
        while mounted(self.mountpoint):
            r = subprocess.run(["fusermount3", "-u", self.mountpoint], capture_output=True, text=True)
            if r.returncode == 0:
                break
            if time.monotonic() > deadline:
                subprocess.run(["fusermount3", "-u", "-z", self.mountpoint], capture_output=True)
                break
            time.sleep(0.2)      # a killed process's descriptors are still being closed
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None


def build_preload(outdir):
    so = os.path.join(outdir, "cutfs_preload.so")
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        raise SetupError("a C compiler (cc) is needed for %s" % PRELOAD_SRC)
    r = subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", so, PRELOAD_SRC, "-ldl"], capture_output=True, text=True)
    if r.returncode != 0:
        raise SetupError("building %s failed: %s" % (PRELOAD_SRC, r.stderr))
    return so


# ---- processes --------------------------------------------------------------------------------

def children_of():
    kids = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                s = f.read()
            ppid = int(s[s.rindex(")") + 2:].split()[1])
        except (OSError, ValueError):
            continue
        kids.setdefault(ppid, []).append(int(d))
    return kids


def tree(pids):
    """The pids and every process below them."""
    kids = children_of()
    out, todo = [], list(pids)
    while todo:
        p = todo.pop()
        if p in out:
            continue
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def signal_all(pids, sig):
    for p in pids:
        try:
            os.kill(p, sig)
        except ProcessLookupError:
            pass


def all_stopped(pids):
    for p in pids:
        try:
            tids = os.listdir("/proc/%d/task" % p)
        except OSError:
            continue
        for t in tids:
            try:
                with open("/proc/%d/task/%s/stat" % (p, t)) as f:
                    s = f.read()
            except OSError:
                continue
            state = s[s.rindex(")") + 2]
            if state not in "TtZX":
                return False
    return True


def freeze(pids, timeout=5.0):
    """SIGSTOP the processes and wait until every thread of theirs has stopped. False on timeout
    (a thread still in a system call that does not return: the cut goes ahead anyway)."""
    signal_all(pids, signal.SIGSTOP)
    deadline = time.monotonic() + timeout
    while not all_stopped(pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.002)
    return True


# ---- the user program -------------------------------------------------------------------------

def writer_main(opsfile, journal):
    """Runs a list of file operations in a data directory, never fsyncing (unless the spec says
    "fsync": then every file and the directories that name it, as a careful program would);
    journals each one ("B id" before, "E id ok|skip" after) to a file outside the cut file system."""
    with open(opsfile) as f:
        spec = json.load(f)
    root = spec["root"]
    careful = spec.get("fsync", False)
    jfd = os.open(journal, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def j(line):
        os.write(jfd, (line + "\n").encode())

    def sync_dirs(path):
        """fsync the directory of path and every parent up to the data directory."""
        if not careful:
            return
        d = os.path.dirname(path)
        while True:
            fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
            os.fsync(fd)
            os.close(fd)
            if os.path.samefile(d, root) or len(d) <= len(root):
                break
            d = os.path.dirname(d)

    for op in spec["ops"]:
        if op.get("sleep"):
            time.sleep(op["sleep"])
        kind, oid = op["kind"], op["id"]
        p = os.path.join(root, op["path"])
        j("B %d" % oid)
        result = "ok"
        try:
            if kind in ("write", "replace"):
                with open(op["src"], "rb") as f:
                    data = f.read()
                # the version this write replaces, as a person editing the file would have seen it:
                # a write over a version it saw is a later edit, whatever the two ids say
                try:
                    with open(p, "rb") as f:
                        seen = parse_version(f.read())
                    if seen is not None:
                        j("R %d %d" % (oid, seen))
                except OSError:
                    pass
                os.makedirs(os.path.dirname(p), exist_ok=True)
                target = p + ".tmp" if kind == "replace" else p
                fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                if op.get("pause"):
                    time.sleep(op["pause"])     # --slow-big: a program that creates a file, then takes its time
                try:
                    for i in range(0, len(data), 256 << 10):
                        os.write(fd, data[i:i + (256 << 10)])
                    if careful:
                        os.fsync(fd)
                finally:
                    os.close(fd)
                if kind == "replace":
                    os.rename(target, p)
                sync_dirs(p)
            elif kind == "delete":
                os.unlink(p)
                sync_dirs(p)
            elif kind == "rename":
                q = os.path.join(root, op["to"])
                os.makedirs(os.path.dirname(q), exist_ok=True)
                if os.path.lexists(q) or not os.path.isfile(p):
                    result = "skip"
                else:
                    os.rename(p, q)
                    sync_dirs(p)
                    sync_dirs(q)
            elif kind == "rmtree":
                shutil.rmtree(p)
                sync_dirs(p)
        except FileNotFoundError:
            result = "skip"
        except OSError as e:
            result = "error %s" % e
        j("E %d %.6f %s" % (oid, time.time(), result))
    os.close(jfd)


def read_replaced(path):
    """op id -> the version id the write found at its path just before it wrote ("R" lines)."""
    out = {}
    try:
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 3 and parts[0] == "R" and parts[1].isdigit() and parts[2].isdigit():
                    out[int(parts[1])] = int(parts[2])
    except OSError:
        pass
    return out


def read_journal(path):
    """op id -> (status, time done): "started" (None) | "ok" | "skip" | "error ..."."""
    out = {}
    try:
        with open(path) as f:
            for line in f:
                parts = line.rstrip("\n").split(" ", 3)
                if len(parts) < 2 or not parts[1].isdigit():
                    continue
                if parts[0] == "B":
                    out.setdefault(int(parts[1]), ("started", None))
                elif parts[0] == "E" and len(parts) == 4:
                    out[int(parts[1])] = (parts[3], float(parts[2]))
    except OSError:
        pass
    return out


# ---- git --------------------------------------------------------------------------------------

def git_ref(git_dir, name):
    """The commit a ref names in a repository, or None."""
    r = subprocess.run(["git", "--git-dir=" + git_dir, "rev-parse", "-q", "--verify", name + "^{commit}"],
                       capture_output=True, timeout=60)
    return r.stdout.decode().strip() if r.returncode == 0 else None


def ls_tree(git_dir, commit):
    """path -> (mode, oid) of a commit's tree; {} when it cannot be read."""
    if not commit:
        return {}
    r = subprocess.run(["git", "--git-dir=" + git_dir, "ls-tree", "-r", "-z", "--full-tree", commit],
                       capture_output=True, timeout=60)
    out = {}
    if r.returncode != 0:
        return out
    for item in r.stdout.split(b"\0"):
        if not item:
            continue
        meta, path = item.split(b"\t", 1)
        mode, _type, oid = meta.split()
        out[path.decode("utf-8", "surrogateescape")] = (mode.decode(), oid.decode())
    return out


def git_fsck(git_dir, retries=3):
    """`git fsck --no-dangling` of a repository: (None when clean, else its output; the output of
    each failed attempt). A failing fsck is run again, up to `retries` times 1 s apart, before it
    counts: a live agent rolls packs up (its own, or the hub's small packs) while fsck reads them,
    and fsck then reports a pack it listed and can no longer open ("packfile ... index not
    opened", seed 4344 --model journal --zero-fill); a real damage fails every time."""
    out, failures = None, []
    for attempt in range(retries + 1):
        if attempt:
            time.sleep(1)
        r = subprocess.run(["git", "--git-dir=" + git_dir, "fsck", "--no-dangling", "--no-progress"],
                           capture_output=True, timeout=300)
        if r.returncode == 0:
            return None, failures
        out = (r.stdout + r.stderr).decode(errors="replace").strip() or describe_rc(r.returncode)
        failures.append(out)
    return out, failures


def settings_goal(data):
    """goalMinutes of a settings.json the Kit wrote, or a text saying why it is not one."""
    try:
        v = json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        return None, "not JSON (%d bytes%s: %s)" % (len(data), ", all zeros" if data and not data.strip(b"\0") else "", e)
    if not isinstance(v, dict) or not isinstance(v.get("goalMinutes"), int):
        return None, "JSON without an integer goalMinutes: %r" % (v,)
    return v["goalMinutes"], None


# ---- a device ---------------------------------------------------------------------------------

class Device:
    def __init__(self, h, name, home, disk):
        self.h = h
        self.name = name
        self.dir = os.path.join(h.root, name)
        self.data = os.path.join(disk, "data")
        self.state = os.path.join(disk, "state")
        self.store = os.path.join(self.state, "store.git")
        self.config = os.path.join(self.dir, "syncagent.toml")
        self.proc = None
        self.run_seq = 0
        self.log_path = None
        self.env = None
        os.makedirs(self.dir, exist_ok=True)

    def cli(self, *args, timeout=60, check=False):
        r = subprocess.run([self.h.binary] + list(args) + ["--config", self.config], capture_output=True,
                           timeout=timeout, env=self.env)
        if check and r.returncode != 0:
            raise SetupError("syncagent %s (%s): %s" % (" ".join(args), self.name, r.stderr.decode(errors="replace")))
        return r

    def init(self, peer_name, peer_store, hub=None, hub_only=False):
        """`syncagent init`: the other device as a path peer; with `hub`, the hub too (`--hub
        hub=PATH`: a `[[peer]]` with `hub = true`); with `hub_only`, the hub alone."""
        peers = [] if hub_only else ["--peer", "%s=%s" % (peer_name, peer_store)]
        if hub:
            peers += ["--hub", "hub=%s" % hub]
        r = subprocess.run([self.h.binary, "init", "--device", self.name, "--data", self.data, "--state", self.state,
                            "--config", self.config] + peers, capture_output=True, text=True)
        if r.returncode != 0:
            raise SetupError("syncagent init %s: %s" % (self.name, r.stderr))
        with open(self.config) as f:
            text = f.read()
        text = text.replace("# debounce_ms = 200", "debounce_ms = %d" % self.h.args.debounce_ms)
        text = text.replace("# poll_seconds = 30", "poll_seconds = %d" % self.h.args.poll_seconds)
        with open(self.config, "w") as f:
            f.write(text)

    def start(self, timeout=60):
        self.run_seq += 1
        self.log_path = os.path.join(self.dir, "run-%d.log" % self.run_seq)
        out = open(os.path.join(self.dir, "run-%d.out" % self.run_seq), "wb")
        err = open(self.log_path, "wb")
        self.proc = subprocess.Popen([self.h.binary, "run", "--config", self.config, "--log-level", self.h.args.log_level],
                                     stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=self.env)
        out.close()
        err.close()
        deadline = time.monotonic() + timeout
        while True:
            rc = self.proc.poll()
            if rc is not None:
                p, self.proc = self.proc, None
                raise Violation("agent %s (pid %d) exited at start-up: %s\n%s" % (self.name, p.pid, describe_rc(rc), tail(self.log_path)))
            st = self.status()
            if st and st.get("running") is True and st.get("pid") == self.proc.pid:
                return
            if time.monotonic() > deadline:
                raise Violation("agent %s (pid %d) did not report running within %d s\n%s"
                                % (self.name, self.proc.pid, timeout, tail(self.log_path)))
            time.sleep(0.1)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def check_alive(self):
        if self.proc is not None and self.proc.poll() is not None:
            rc = self.proc.returncode
            raise Violation("agent %s (pid %d) died: %s\n%s" % (self.name, self.proc.pid, describe_rc(rc), tail(self.log_path)))

    def stop(self, timeout=40):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def kill(self):
        if self.proc is not None:
            try:
                self.proc.kill()
            except ProcessLookupError:
                pass
            self.proc.wait()
            self.proc = None

    def status(self):
        try:
            r = self.cli("status", "--json", timeout=20)
        except subprocess.TimeoutExpired:
            return None
        if r.returncode != 0:
            return None
        try:
            return json.loads(r.stdout)
        except ValueError:
            return None

    def git(self, *args, timeout=60):
        return subprocess.run(["git", "--git-dir=" + self.store] + list(args), capture_output=True, timeout=timeout)

    def ref(self, name="refs/heads/main"):
        return git_ref(self.store, name)

    def tree(self, commit):
        """path -> (mode, oid) of a commit's tree; {} when it cannot be read."""
        return ls_tree(self.store, commit)

    def blob(self, oid):
        r = self.git("cat-file", "blob", oid)
        return r.stdout if r.returncode == 0 else None

    def conflicts(self, all_=False):
        args = ["conflicts", "--json"] + (["--all"] if all_ else [])
        try:
            r = self.cli(*args, timeout=30)
        except subprocess.TimeoutExpired:
            return None
        if r.returncode != 0:
            return None
        try:
            return json.loads(r.stdout)
        except ValueError:
            return None

    def scan(self):
        """path -> entry of the data directory: ("file", oid, version|None, exec) | ("link", target)
        | ("dir",) for an empty directory | ("other",)."""
        out = {}
        root = self.data
        for d, dirs, files in os.walk(root):
            rel_d = os.path.relpath(d, root)
            if rel_d != "." and not dirs and not files:
                out[rel_d + "/"] = ("dir",)
            for n in files + [x for x in dirs if os.path.islink(os.path.join(d, x))]:
                p = os.path.join(d, n)
                rel = os.path.relpath(p, root)
                try:
                    st = os.lstat(p)
                    if stat.S_ISLNK(st.st_mode):
                        out[rel] = ("link", os.readlink(p))
                    elif stat.S_ISREG(st.st_mode):
                        with open(p, "rb") as f:
                            data = f.read()
                        out[rel] = ("file", blob_oid(data), parse_version(data), bool(st.st_mode & 0o100))
                    else:
                        out[rel] = ("other",)
                except FileNotFoundError:
                    continue
        return out


# ---- the harness ------------------------------------------------------------------------------

PHASES = ("idle", "objects", "refs", "conflicts-ref", "index", "apply", "state", "hub push", "set", "other")
SETTINGS = "settings.json"         # written by SyncAgentKit `set` (watch-app) only, never by the user programs


def phase_of(path):
    if path is None:
        return "other"
    if path.startswith("data/"):
        return "apply"
    if "/refs/syncagent/" in path or path.endswith("/syncagent") or "/syncagent/" in path:
        return "conflicts-ref"
    if "/objects/" in path:
        return "objects"
    if "/refs/" in path or path.endswith("packed-refs") or path.endswith("packed-refs.lock") or "/logs/" in path \
            or path.endswith("HEAD") or path.endswith("HEAD.lock"):
        return "refs"
    if path.endswith("/index") or path.endswith("/index.lock"):
        return "index"
    if path.startswith("state/"):
        return "state"
    return "other"


class Harness:
    def __init__(self, args):
        self.args = args
        self.binary = os.path.abspath(args.binary)
        self.rng = random.Random(args.seed)
        self.root = os.path.realpath(tempfile.mkdtemp(prefix="syncagent-powercut.%d." % args.seed, dir=args.tmpdir))
        self.disk = os.path.join(self.root, "phone-disk")
        self.scratch = os.path.join(self.root, "scratch")
        os.makedirs(self.scratch)
        home = os.path.join(self.root, "home")
        os.makedirs(home)
        env = dict(os.environ)
        env.update(HOME=home, XDG_CONFIG_HOME=os.path.join(home, ".config"),
                   XDG_STATE_HOME=os.path.join(home, ".local/state"), GIT_CONFIG_NOSYSTEM="1",
                   GIT_CONFIG_GLOBAL="/dev/null", LC_ALL="C")
        for k in ("SYNCAGENT_CONFIG", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "LD_PRELOAD"):
            env.pop(k, None)
        os.environ.clear()
        os.environ.update(env)
        extra = ["--unsynced", "zeros"] if args.zero_fill else []
        extra += ["--model", args.model]
        if args.trace:
            extra += ["--trace", os.path.join(self.root, "cutfs.trace")]
        self.fs = CutFS(self.disk, self.root, extra)
        # the hub: an ordinary bare repository on the ordinary temp disk (never cut)
        self.hub = os.path.join(self.root, "hub.git") if (args.hub or args.hub_only) else None
        self.watch_app = None
        self.set_rng = random.Random("set-%d" % args.seed)   # its own draws: --set leaves the rest of the run as it was
        self.next_goal = 100
        self.set_goals = []            # every goal a `set` was started with, in order (each larger than the last)
        self.set_acked = None          # (goal, cut) of the last `set` that exited 0 before a cut
        self.set_counts = {"started": 0, "acked": 0, "failed": 0, "killed": 0, "alive at the cut": 0}
        self.hub_acked = 0             # cuts at which the hub held a commit of the phone's
        self.phone = Device(self, "phone", home, self.disk)
        self.watch = Device(self, "watch", home, os.path.join(self.root, "watch"))
        self.phone.env = dict(env)
        self.watch.env = dict(env)
        # --tablet: a third device, through the hub only, never cut
        self.tablet = Device(self, "tablet", home, os.path.join(self.root, "tablet")) if args.tablet else None
        if self.tablet:
            self.tablet.env = dict(env)
            self.tablet_rng = random.Random("tablet-%d" % args.seed)   # how many files, where, when, how big (their bytes and ids come from the run's own draws)
        self.boot(0)
        self.next_id = 1
        self.ops = {}                  # op id -> {"dev", "kind", "path", "to", "vid", "status", "cut"}
        self.op_of_version = {}        # version id -> the op id that wrote it
        self.versions = {}             # blob oid -> version id (every version the harness wrote)
        self.valid_oids = set()
        self.acked = []                # (what, path, vid or None (deleted), op id, cut)
        self.resolved = {}             # conflict id -> cut
        self.forbidden = {}            # path -> {"after": oid or None, "cut": n, "why": text}
        # path -> oid: what a phone write the cut stopped halfway left there, which the phone's agent
        # had committed before the cut (a state of the file the user program made): not a version
        # the harness wrote whole, yet no damage of the agent's either
        self.unfinished = {}
        self.phase_counts = dict((p, 0) for p in PHASES)
        self.cut_no = 0
        self.times = []
        self.dropped_total = [0, 0]
        self.reported = set()
        self.cut_times = {}
        self.violations = 0
        self.violation_kinds = {}

    def devices(self):
        """The devices of the run: phone, watch and, with --tablet, the tablet."""
        return (self.phone, self.watch) + ((self.tablet,) if self.tablet else ())

    def boot(self, n):
        """The phone's boot id: a power cut is a reboot of the phone, seen by its agent and CLI
        through SYNCAGENT_BOOT_ID (the agent's stand-in for /proc/sys/kernel/random/boot_id)."""
        if self.args.same_boot:
            n = 0
        self.phone.env["SYNCAGENT_BOOT_ID"] = str(uuid.uuid5(uuid.NAMESPACE_OID, "powercut-%d-%d-%d" % (self.args.seed, os.getpid(), n)))

    def note(self, msg):
        with open(os.path.join(self.root, "harness.log"), "a") as f:
            f.write("%s cut %d: %s\n" % (time.strftime("%H:%M:%S"), self.cut_no, msg))

    def say(self, msg):
        if not self.args.quiet:
            print(msg, flush=True)

    # -- set-up --
    def setup(self):
        # a copy of the binary: a rebuild during the run neither stops it (ETXTBSY) nor mixes versions
        copy = os.path.join(self.root, "syncagent")
        shutil.copy2(self.binary, copy)
        self.binary = copy
        if self.args.set:
            app = self.args.watch_app or os.path.join(os.path.dirname(os.path.abspath(self.args.binary)), "watch-app")
            if not os.access(app, os.X_OK):
                raise SetupError("--set needs the sample client watch-app (Samples/WatchApp): none at %s (--watch-app)" % app)
            self.watch_app = os.path.join(self.root, "watch-app")
            shutil.copy2(app, self.watch_app)
        ver = subprocess.run([copy, "--version"], capture_output=True, text=True).stdout.strip()
        with open(copy, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()[:12]
        self.say("binary %s (%s, sha256 %s, built %s)" % (self.args.binary, ver or "?", digest,
                 time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(os.stat(self.args.binary).st_mtime))))
        self.fs.mount()
        # the data and state directories exist on the disk before init (the user made them long ago)
        os.makedirs(self.phone.data)
        os.makedirs(self.phone.state)
        self.fs.sync()
        if not self.args.no_syncfs_shim:
            so = build_preload(self.root)
            self.phone.env["LD_PRELOAD"] = so
        self.phone.env["SYNCAGENT_BOOT_ID"] = "powercut-%d-boot-0" % self.args.seed
        os.makedirs(self.watch.dir, exist_ok=True)
        if self.hub:
            r = subprocess.run(["git", "init", "--bare", "-q", self.hub], capture_output=True, text=True)
            if r.returncode != 0:
                raise SetupError("git init --bare %s: %s" % (self.hub, r.stderr))
        self.phone.init("watch", self.watch.store, self.hub, self.args.hub_only)
        self.watch.init("phone", self.phone.store, self.hub, self.args.hub_only)
        if self.tablet:
            self.tablet.init("phone", self.phone.store, self.hub, hub_only=True)
        if not self.args.no_initial_sync:
            self.fs.sync()
        self.watch.start()
        self.phone.start()
        if self.tablet:
            self.tablet.start()
        # initial files on both sides
        ops_p, ops_w = [], []
        for i in range(self.args.files):
            dev_ops = ops_p if i % 4 else ops_w
            path = "d%d/f%03d.txt" % (i % 8, i) if i % 5 else "f%03d.txt" % i
            dev_ops.append(self.plan_write(path, "write", self.rng.randint(40, 3000)))
        self.run_writer(self.phone, ops_p, wait=True)
        self.run_writer(self.watch, ops_w, wait=True)
        self.wait_converged(deadline=self.args.timeout * 2, initial=True)
        if not self.args.no_initial_sync:
            self.fs.sync()       # the starting point is on the disk
        self.say("set up: %d files, phone on cutfs at %s%s, temp dir %s" % (
            self.args.files, self.disk, "" if not self.hub else ", hub %s (%s)" % (
                self.hub, "the only peer" if self.args.hub_only else "beside the path peers"), self.root))

    # -- planning --
    def new_id(self):
        i = self.next_id
        self.next_id += 1
        return i

    def plan_write(self, path, kind, size, binary=False):
        vid = self.new_id()
        data = make_version(vid, size, self.rng, binary)
        oid = blob_oid(data)
        self.versions[oid] = vid
        self.valid_oids.add(oid)
        src = os.path.join(self.scratch, "v%d" % vid)
        with open(src, "wb") as f:
            f.write(data)
        return {"id": vid, "kind": kind, "path": path, "src": src, "vid": vid}

    def plan_ops(self, dev, listing, n, window):
        # settings.json is the Kit's (only `set` writes it): the user programs leave it alone
        files = sorted(p for p, e in listing.items() if e[0] == "file" and p != SETTINGS)
        ops = []
        for _ in range(n):
            if self.args.bulk and self.rng.random() < self.args.bulk:
                # a folder of 300 new documents at once: a commit of that many files goes into a
                # pack in stored blocks, which the agent rewrites deflated once the store is at rest
                folder = "b%d" % self.next_id
                for k in range(300):
                    op = self.plan_write("%s/doc-%d.txt" % (folder, k), "write", self.rng.randint(600, 6000))
                    op["sleep"] = 0
                    ops.append(op)
                    files.append(op["path"])
                continue
            r = self.rng.random()
            if r < 0.22 or not files:
                d = self.rng.choice(["", "d0/", "d1/", "d2/", "d3/", "d4/", "d5/", "d6/", "d7/", "n%d/" % self.rng.randint(0, 3)])
                path = "%s%s-%d.txt" % (d, dev.name[0], self.next_id)
                op = self.plan_write(path, "write", self.rng.randint(20, 4000))
                files.append(path)
            elif r < 0.50:
                op = self.plan_write(self.rng.choice(files), "write", self.rng.randint(20, 4000))
            elif r < 0.72:
                op = self.plan_write(self.rng.choice(files), "replace", self.rng.randint(20, 4000))
            elif r < 0.82:
                path = self.rng.choice(files)
                files.remove(path)
                op = {"id": self.new_id(), "kind": "delete", "path": path}
            elif r < 0.88:
                # a whole version moves (a damaged file a cut left would only carry its damage along)
                whole = [p for p in files if listing.get(p, ("file", None, 0))[2] is not None]
                if not whole:
                    continue
                path = self.rng.choice(whole)
                files.remove(path)
                to = "%s/%s-r%d.txt" % (os.path.dirname(path) or "d0", dev.name[0], self.next_id)
                files.append(to)
                op = {"id": self.new_id(), "kind": "rename", "path": path, "to": to}
            elif r < 0.94:
                path = "big/%s-%d.bin" % (dev.name[0], self.next_id)
                op = self.plan_write(path, self.rng.choice(["write", "replace"]),
                                     self.rng.randint(1 << 20, self.args.big_mb << 20), binary=True)
                if self.args.slow_big:
                    op["pause"] = round(self.rng.uniform(0.1, 1.5), 3)
                files.append(path)
            else:
                big = [p for p in files if p.startswith("big/")]
                if big:
                    path = self.rng.choice(big)
                    files.remove(path)
                    op = {"id": self.new_id(), "kind": "delete", "path": path}
                else:
                    op = self.plan_write(self.rng.choice(files), "write", self.rng.randint(20, 4000))
            op["sleep"] = round(self.rng.uniform(0, window / max(1, n)), 3)
            ops.append(op)
        return ops

    def run_writer(self, dev, ops, wait=False):
        tag = "%s-%d-%d" % (dev.name, self.cut_no, self.next_id)
        spec = os.path.join(self.scratch, "ops-%s.json" % tag)
        journal = os.path.join(self.root, "journal-%s" % tag)
        with open(spec, "w") as f:
            json.dump({"root": dev.data, "ops": ops, "fsync": self.args.user_fsync and dev is self.phone}, f)
        for op in ops:
            self.ops[op["id"]] = {"dev": dev.name, "kind": op["kind"], "path": op["path"], "to": op.get("to"),
                                  "vid": op.get("vid"), "status": "planned", "cut": self.cut_no}
        p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--writer", spec, journal],
                             stdin=subprocess.DEVNULL)
        w = {"proc": p, "journal": journal, "ops": ops, "dev": dev}
        if wait:
            p.wait()
            self.collect_writer(w)
        return w

    def collect_writer(self, w):
        done = read_journal(w["journal"])
        replaced = read_replaced(w["journal"])
        for op in w["ops"]:
            st, t_done = done.get(op["id"], ("not started", None))
            self.ops[op["id"]]["status"] = st
            self.ops[op["id"]]["t"] = t_done
            if op["id"] in replaced:
                self.ops[op["id"]]["replaced"] = replaced[op["id"]]
            if op.get("vid") is not None:
                self.op_of_version[op["vid"]] = op["id"]
            self.note("%s op %d: %s %s%s%s -> %s" % (w["dev"].name, op["id"], op["kind"], op["path"],
                      " -> " + op["to"] if op.get("to") else "", " (version %d)" % op["vid"] if op.get("vid") else "", st))
            if st.startswith("error"):
                self.note("%s op %d %s %s: %s" % (w["dev"].name, op["id"], op["kind"], op["path"], st))
        return done

    # -- one cut --
    def one_cut(self):
        self.cut_no += 1
        t_start = time.monotonic()
        rng = self.rng
        window = rng.uniform(0, self.args.max_delay)
        phone_list = self.phone.scan()
        watch_list = self.watch.scan()
        n_phone = rng.randint(0, 8)
        n_watch = rng.randint(0, 5)
        phone_ops = self.plan_ops(self.phone, phone_list, n_phone, window)
        watch_ops = self.plan_ops(self.watch, watch_list, n_watch, window)
        conflict = None
        common = sorted(p for p in phone_list if phone_list[p][0] == "file" and watch_list.get(p, ("",))[0] == "file"
                        and p not in self.forbidden and p != SETTINGS)
        if common and rng.random() < 0.35:
            conflict = rng.choice(common)
            # both edits first thing, at once: neither agent can merge the other's before its own commit
            for ops, dev in ((phone_ops, self.phone), (watch_ops, self.watch)):
                op = self.plan_write(conflict, rng.choice(["write", "replace"]), rng.randint(20, 3000))
                op["sleep"] = 0
                ops.insert(0, op)
        do_sync = rng.random() < 0.4
        sync_at = rng.uniform(0, window)
        do_resolve = rng.random() < 0.4
        resolve_at = rng.uniform(0, window)
        resolve_dev = self.phone if rng.random() < 0.7 else self.watch
        resolve_keep = rng.choice(["phone", "watch", "newest"])
        resolve_pick = rng.random()
        do_set = self.watch_app is not None and self.set_rng.random() < self.args.set_prob
        # a `set` takes 50-300 ms: a third of them start in the window's last 200 ms, for cuts in mid-set
        set_at = self.set_rng.uniform(0, window) if self.set_rng.random() < 0.65 else max(0.0, window - self.set_rng.uniform(0, 0.2))

        # the tablet writes new files of its own in the same window (while the watch does too, the
        # phone's hub round finds two devices with new work: one fold, `Store.foldJoins`)
        tablet_ops = []
        if self.tablet:
            # all at once, as the watch writes its first file: both commits then reach the hub
            # within a round of the phone's more often than apart
            start = watch_ops[0]["sleep"] if watch_ops else self.tablet_rng.uniform(0, window)
            for k in range(self.tablet_rng.randint(1, 4)):
                op = self.plan_write("t%d/tab-%d.txt" % (self.tablet_rng.randint(0, 2), self.next_id), "write",
                                     self.tablet_rng.randint(20, 3000))
                op["sleep"] = start if k == 0 else 0
                tablet_ops.append(op)

        # phone commands run as processes the cut kills
        wp = self.run_writer(self.phone, phone_ops)
        ww = self.run_writer(self.watch, watch_ops)
        wt = self.run_writer(self.tablet, tablet_ops) if self.tablet else None
        t0 = time.monotonic()
        sync_proc = sync_before = None
        sync_state = "-"
        resolve_proc = None
        resolve_info = "-"
        kset = None
        while True:
            now = time.monotonic() - t0
            if do_set and kset is None and now >= set_at:
                kset = self.start_set()
            if do_sync and sync_proc is None and now >= sync_at:
                sync_before = self.ops_done_snapshot(wp)
                sync_proc = subprocess.Popen([self.binary, "sync", "--config", self.phone.config],
                                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=self.phone.env)
                sync_state = "started"
            if do_resolve and resolve_proc is None and now >= resolve_at:
                do_resolve = False
                recs = resolve_dev.conflicts() or []
                recs = [r for r in recs if r.get("status") == "open"]
                if recs:
                    rec = recs[int(resolve_pick * len(recs))]
                    resolve_proc = (subprocess.Popen([self.binary, "resolve", rec["id"], "--keep", resolve_keep,
                                                      "--config", resolve_dev.config], stdout=subprocess.DEVNULL,
                                                     stderr=subprocess.PIPE, env=resolve_dev.env), rec, resolve_dev)
                    resolve_info = "%s on %s" % (rec["id"], resolve_dev.name)
                else:
                    resolve_info = "none open"
            sync_state, resolve_info = self.poll_commands(sync_proc, sync_state, sync_before, resolve_proc, resolve_info)
            self.poll_set(kset)
            if now >= window:
                break
            time.sleep(min(0.01, window - now) if window > now else 0)

        # the cut
        sync_state, resolve_info = self.poll_commands(sync_proc, sync_state, sync_before, resolve_proc, resolve_info)
        self.poll_set(kset)
        self.phone.check_alive()
        self.watch.check_alive()
        phone_pids = [self.phone.proc.pid]
        extra = [wp["proc"].pid]
        if sync_proc is not None and sync_proc.poll() is None:
            extra.append(sync_proc.pid)
        if resolve_proc is not None and resolve_proc[2] is self.phone and resolve_proc[0].poll() is None:
            extra.append(resolve_proc[0].pid)
        if kset is not None and kset["proc"].poll() is None:
            extra.append(kset["proc"].pid)
        frozen_phone = tree(phone_pids + extra)
        frozen_watch = tree([self.watch.proc.pid]) + ([ww["proc"].pid] if ww["proc"].poll() is None else [])
        all_frozen = freeze(frozen_phone + frozen_watch)
        t_cut = time.time()
        self.cut_times[self.cut_no] = t_cut
        # a `set` still running, the hub: looked at while everything is frozen
        set_alive = False
        if kset is not None:
            self.poll_set(kset)     # it may have exited between the last look and the freeze
            set_alive = kset["state"] == "started"
            if set_alive:
                self.set_counts["alive at the cut"] += 1
        hub_phone = hub_act = hub_why = None
        if self.hub:
            hub_phone = git_ref(self.hub, "refs/heads/devices/phone")
            hub_act, hub_why = self.hub_activity(frozen_phone, t_cut)
        pre_main = self.phone.ref()
        pre_tree = self.phone.tree(pre_main)
        report = self.fs.cut()
        # The machine comes back with a new boot id (the agent tells a power cut from a kill by it).
        self.phone.env["SYNCAGENT_BOOT_ID"] = "powercut-%d-boot-%d" % (self.args.seed, self.cut_no)
        with open(os.path.join(self.root, "cut-%d.json" % self.cut_no), "w") as f:
            json.dump(report, f, indent=1)
        try:                                   # the last 10 reports are kept
            os.unlink(os.path.join(self.root, "cut-%d.json" % (self.cut_no - 10)))
        except FileNotFoundError:
            pass
        self.dropped_total[0] += report["bytes_dropped"]
        self.dropped_total[1] += report["names_dropped"]
        # what the watch holds right now (frozen)
        watch_main = self.watch.ref()
        watch_fetched = self.watch.ref("refs/remotes/phone/main")
        watch_fetched_hub = self.watch.ref("refs/remotes/hub/phone/main") if self.hub else None
        changes = [c for c in report["changes"] if c["path"].startswith("data/")]
        store_damage = self.store_damage(report["changes"])
        if store_damage:
            self.note("the cut left in the phone's state directory: " + "; ".join(store_damage))
        watch_at_cut = {}
        for c in changes:
            rel = c["path"][5:]
            watch_at_cut[rel] = self.file_oid(os.path.join(self.watch.data, rel))
        # kill the phone's side, thaw the watch's
        signal_all(frozen_phone, signal.SIGKILL)
        for p in [self.phone.proc, wp["proc"], sync_proc, resolve_proc[0] if resolve_proc and resolve_proc[2] is self.phone else None,
                  kset["proc"] if kset else None]:
            if p is not None:
                try:
                    p.wait(20)
                except subprocess.TimeoutExpired:
                    pass
        self.phone.proc = None
        if kset is not None and kset["state"] == "started":
            kset["state"] = "killed"
            self.set_counts["killed"] += 1
            self.note("set goal %d: killed by the cut" % kset["goal"])
        signal_all(frozen_watch, signal.SIGCONT)
        if sync_state == "started":
            sync_state = "killed"
        if resolve_proc is not None and resolve_proc[2] is self.phone and "->" not in resolve_info:
            resolve_info += " -> killed"
        if resolve_proc is not None and resolve_proc[2] is self.watch:
            try:
                resolve_proc[0].wait(60)
            except subprocess.TimeoutExpired:
                pass
            sync_state, resolve_info = self.poll_commands(None, sync_state, None, resolve_proc, resolve_info)
        self.collect_writer(wp)

        # the phase the phone's agent was in
        agent_ops = [o for o in report.get("recent", []) if o.get("tgid") == phone_pids[0]]
        phase = "idle"
        recent_ops = [o for o in agent_ops if t_cut - o["t"] < self.args.idle_ms / 1000.0]
        for o in reversed(recent_ops):
            # its bookkeeping (events, peers' state) follows every step: name the step itself
            p = o.get("path") or ""
            if p.startswith("state/events.jsonl") or p.startswith("state/peers.json") or p.startswith("state/session"):
                phase = "state"
                continue
            phase = phase_of(p)
            break
        cutfs_phase = phase
        if set_alive:
            phase = "set"
        elif hub_act == "in flight" or (hub_act == "recent" and phase in ("idle", "state")):
            phase = "hub push"
        self.phase_counts[phase] += 1
        last_log = ""
        try:
            with open(self.phone.log_path, "rb") as f:
                lines = f.read().decode("utf-8", "replace").splitlines()
                last_log = lines[-1] if lines else ""
        except OSError:
            pass
        self.note("cut: phase %s (cutfs saw %s; set %s; hub %s%s; frozen cleanly: %s); last agent ops: %s; last log line: %s"
                  % (phase, cutfs_phase, self.set_desc(kset), (hub_phone or "-")[:12], hub_act and " (%s: %s)" % (hub_act, hub_why) or "", all_frozen,
                     json.dumps(agent_ops[-6:]), last_log))

        post_main = self.phone.ref()
        post_tree = self.phone.tree(post_main) if post_main else {}
        watch_tree = self.watch.tree(watch_main)
        # the watch's fetch of the phone is acknowledged: every file of that commit stays
        for fetched in (watch_fetched, watch_fetched_hub):
            if fetched:
                for path, (mode, oid) in self.watch.tree(fetched).items():
                    if oid in self.versions:
                        self.acked.append(("fetched by the watch (%s)" % fetched[:12], path, self.versions[oid], None, self.cut_no))
        # so is what the hub accepted: the phone's branch there at the cut
        if hub_phone:
            self.hub_acked += 1
            for path, (mode, oid) in ls_tree(self.hub, hub_phone).items():
                if oid in self.versions:
                    self.acked.append(("accepted by the hub as devices/phone (%s)" % hub_phone[:12], path, self.versions[oid], None, self.cut_no))

        def legit_at(rel):
            """What rel may hold without being the cut's doing: the watch's file, the phone's main
            before and after the cut, the watch's main."""
            return {watch_at_cut.get(rel), pre_tree.get(rel, (None, None))[1], post_tree.get(rel, (None, None))[1],
                    watch_tree.get(rel, (None, None))[1]}

        # what the cut did to the phone's data directory: never to reach the watch
        for c in changes:
            rel = c["path"][5:]
            before, after = c["before"], c["after"]
            a_oid = after.get("oid") if after and after["type"] == "file" else None
            if after is not None and after["type"] not in ("file",):
                continue            # directories, links: their files are listed on their own
            if after is None and before is not None and before["type"] != "file":
                continue
            legit = legit_at(rel)
            if a_oid is None and after is None:
                # a name the cut took away: the watch must keep what it has there
                if watch_at_cut.get(rel) is None:
                    continue
                if rel not in pre_tree and rel not in post_tree and rel not in watch_tree:
                    continue
                self.forbidden[rel] = {"after": None, "cut": self.cut_no,
                                       "why": "the cut took %s away on the phone (it was %s); the watch had %s"
                                       % (rel, self.vdesc(before.get("oid")), self.vdesc(watch_at_cut.get(rel)))}
            elif a_oid not in legit:
                was = self.vdesc(before.get("oid") if before else None, before)
                had = self.vdesc(watch_at_cut.get(rel))
                if before is None:
                    why = "the cut brought %s back on the phone as %s (deleted or renamed away before the cut); the watch had %s" % (
                        rel, self.vdesc(a_oid, after), had)
                elif a_oid in self.versions:
                    why = "the cut took %s on the phone back to %s (it was %s; the watch had %s)" % (rel, self.vdesc(a_oid, after), was, had)
                else:
                    why = "the cut left %s on the phone as %s (it was %s; the watch had %s)" % (rel, self.vdesc(a_oid, after), was, had)
                self.forbidden[rel] = {"after": a_oid, "cut": self.cut_no, "why": why}
        # The phone's write the cut stopped halfway: what it left is the user program's unfinished
        # work, though the cut changed nothing there (make test on 22f3f61, seed 103 cut 3: the
        # writer had opened big/p-133.bin and written nothing yet, so the file was empty before the
        # cut and after it, and no change named it). The agent keeps a new file like that back as
        # a write the power may have cut short; it must not reach the watch either.
        for op in phone_ops:
            if op["kind"] not in ("write", "replace") or self.ops[op["id"]]["status"] != "started":
                continue
            rel = op["path"]
            left = self.file_oid(os.path.join(self.phone.data, rel))
            if left is None or left in self.versions or rel in self.forbidden:
                continue
            if left in legit_at(rel):
                # the agent committed it before the cut, while the program was writing: it may be anywhere
                self.unfinished[rel] = left
                self.note("unfinished: the cut stopped the phone's op %d halfway through writing version %d to %s, "
                          "which the phone had committed as %s" % (op["id"], op["vid"], rel, self.vdesc(left)))
                continue
            self.forbidden[rel] = {"after": left, "cut": self.cut_no,
                                   "why": "the cut stopped the phone's op %d halfway through writing version %d there; it left %s"
                                   % (op["id"], op["vid"], self.vdesc(left))}
            self.note("held apart: %s" % self.forbidden[rel]["why"])

        # the phone boots again; restart its agent, wait for both to converge, check
        self.boot(self.cut_no)
        t_conv = time.monotonic()
        try:
            self.phone.start(timeout=self.args.timeout)
            ww["proc"].wait(60)
            self.collect_writer(ww)
            if wt:
                wt["proc"].wait(60)
                self.collect_writer(wt)
            self.wait_converged(deadline=self.args.timeout)
            conv_s = time.monotonic() - t_conv
            self.check_all(report)
        except Violation as e:
            raise Violation("%s\n  (the cut came %.2fs into the activity, the phone's agent in phase %s; sync %s; resolve %s%s%s%s)" % (
                e, window, phase, sync_state, resolve_info, "; set %s" % self.set_desc(kset) if self.watch_app else "",
                "; hub held devices/phone %s" % (hub_phone or "-")[:12] if self.hub else "", "; the cut left in the phone's state directory: " + ", ".join(store_damage)
                if store_damage else ""))
        dt = time.monotonic() - t_start
        self.times.append(dt)
        self.say("cut %d/%d seed=%d: at %.2fs, phase %s; phone ops %d, watch ops %d%s; sync %s; resolve %s%s%s; "
                 "dropped %d bytes, %d names, %d paths changed; %d crash-changed paths held apart%s; "
                 "converged in %.1fs; %.1fs" % (
                     self.cut_no, self.args.cuts, self.args.seed, window, phase, len(phone_ops), len(watch_ops),
                     ", conflict on %s" % conflict if conflict else "", sync_state, resolve_info,
                     "; set %s" % self.set_desc(kset) if self.watch_app else "",
                     "; hub at %s" % (hub_phone or "-")[:12] if self.hub else "",
                     report["bytes_dropped"], report["names_dropped"], len(changes), len(self.forbidden),
                     "; store left with: " + ", ".join(store_damage[:6]) + (" and %d more" % (len(store_damage) - 6) if len(store_damage) > 6 else "")
                     if store_damage else "", conv_s, dt))
        # scratch copies of this cut's versions are no longer needed
        for op in phone_ops + watch_ops + tablet_ops:
            if "src" in op:
                try:
                    os.unlink(op["src"])
                except OSError:
                    pass

    # -- SyncAgentKit `set` (the sample client watch-app, on the phone) --
    def start_set(self):
        """One `set` of settings.json with a fresh goal (each larger than any before), run like the
        phone's other commands: with its environment, frozen and killed with it."""
        goal = self.next_goal
        self.next_goal += self.set_rng.randint(1, 9)
        self.set_goals.append(goal)
        self.set_counts["started"] += 1
        out_path = os.path.join(self.root, "set-%d.out" % self.cut_no)
        out = open(out_path, "wb")
        p = subprocess.Popen([self.watch_app, "--config", self.phone.config, "--goal", str(goal), "--once"],
                             stdin=subprocess.DEVNULL, stdout=out, stderr=out, env=self.phone.env)
        out.close()
        self.note("set goal %d: started (pid %d)" % (goal, p.pid))
        return {"proc": p, "goal": goal, "out": out_path, "state": "started"}

    def poll_set(self, kset):
        """A `set` that exited 0 is acknowledged: its goal, or a later one, must stay."""
        if kset is None or kset["state"] != "started" or kset["proc"].poll() is None:
            return
        rc = kset["proc"].returncode
        try:
            with open(kset["out"], "rb") as f:
                said = f.read().decode("utf-8", "replace").strip()
        except OSError:
            said = ""
        if rc == 0:
            kset["state"] = "acked"
            self.set_acked = (kset["goal"], self.cut_no)
            self.set_counts["acked"] += 1
        else:
            kset["state"] = "failed(%d)" % rc
            self.set_counts["failed"] += 1
        self.note("set goal %d: %s: %s" % (kset["goal"], kset["state"], said[-400:]))

    def set_desc(self, kset):
        return "-" if kset is None else "goal %d %s" % (kset["goal"], kset["state"])

    # -- the hub --
    def hub_activity(self, pids, t_cut):
        """What the frozen phone was doing with hub.git (cutfs never sees it: the hub is on the
        ordinary disk): ("in flight", why) when its agent has a push thread (the agent names it
        `syncagent-push-<peer>`, cut to 15 bytes by the kernel) or a thread rolling the hub's packs
        up (`syncagent-hub-packs`) alive, or one of its processes has a file under hub.git open for
        writing, or the phone's ref there is freshly locked; ("recent", why) when that ref or its
        conflicts record was written within --idle-ms before the cut; (None, None) otherwise. (A
        fetch from the hub only reads there: open or mapped packs for reading say nothing.)"""
        hub = self.hub + "/"
        for p in pids:
            try:
                tids = os.listdir("/proc/%d/task" % p)
            except OSError:
                continue
            for t in tids:
                try:
                    with open("/proc/%d/task/%s/comm" % (p, t)) as f:
                        comm = f.read().strip()
                except OSError:
                    continue
                if comm.startswith("syncagent-push-") or comm.startswith("syncagent-hub-p"):
                    return "in flight", "thread %s (%s) alive" % (t, comm)
        for p in pids:
            try:
                fds = os.listdir("/proc/%d/fd" % p)
            except OSError:
                continue
            for fd in fds:
                try:
                    target = os.readlink("/proc/%d/fd/%s" % (p, fd))
                    if not target.startswith(hub):
                        continue
                    with open("/proc/%d/fdinfo/%s" % (p, fd)) as f:
                        flags = int(re.search(r"^flags:\s*([0-7]+)", f.read(), re.M).group(1), 8)
                except (OSError, AttributeError, ValueError):
                    continue
                if flags & 3:          # O_WRONLY or O_RDWR
                    return "in flight", "pid %d has %s open for writing" % (p, target[len(hub):])
        refs = ("refs/heads/devices/phone", "refs/syncagent/devices/phone/conflicts")
        for ref in refs:
            try:
                m = os.stat(os.path.join(self.hub, ref + ".lock")).st_mtime
            except OSError:
                continue
            if t_cut - m < 5:
                return "in flight", "%s.lock (%.0f ms old)" % (ref, (t_cut - m) * 1000)
        for ref in refs:
            try:
                m = os.stat(os.path.join(self.hub, ref)).st_mtime
            except OSError:
                continue
            if t_cut - m < self.args.idle_ms / 1000.0:
                return "recent", "%s written %.0f ms before the cut" % (ref, (t_cut - m) * 1000)
        return None, None

    def poll_commands(self, sync_proc, sync_state, sync_before, resolve_proc, resolve_info):
        """Records a `sync` that exited 0 and a `resolve` that answered (acknowledgements)."""
        if sync_proc is not None and sync_state == "started" and sync_proc.poll() is not None:
            if sync_proc.returncode == 0:
                sync_state = "acked"
                self.ack_sync(sync_before)
            else:
                sync_state = "failed(%d)" % sync_proc.returncode
        if resolve_proc is not None and resolve_proc[0].poll() is not None and "->" not in resolve_info:
            p, rec, dev = resolve_proc
            if p.returncode == 0:
                self.resolved[rec["id"]] = self.cut_no
                resolve_info += " -> acked"
            else:
                resolve_info += " -> failed(%d)" % p.returncode
        return sync_state, resolve_info

    def store_damage(self, changes):
        """What the cut left broken in the phone's state directory (for the log and the cut's line):
        files of git's that are empty or zero-filled now, and names that vanished."""
        out = []
        for c in changes:
            p = c["path"]
            if not p.startswith("state/"):
                continue
            rel = p[len("state/"):]
            b, a = c["before"], c["after"]
            if a is None and b is not None and b["type"] == "file" and not rel.endswith(".lock") \
                    and "tmp" not in os.path.basename(rel) and "/objects/" not in rel:
                # (a loose object or pack whose name was never durable is just gone: fsck says whether
                # anything durable needed it)
                out.append("%s missing" % rel)
            elif a is not None and a["type"] == "file" and (a["size"] == 0 or a.get("zeros")) and not rel.endswith(".lock"):
                if b is None or b["type"] != "file" or b["size"] != 0:
                    out.append("%s %s" % (rel, "empty" if a["size"] == 0 else "zero-filled (%d bytes)" % a["size"]))
        return out

    def vdesc(self, oid, d=None):
        if oid is None:
            if d is not None and d.get("type") == "file":
                return "a file of %d bytes" % d.get("size", -1)
            return "nothing"
        if oid == EMPTY_BLOB:
            return "an empty file"
        if d is not None and d.get("zeros"):
            return "%d zero bytes" % d.get("size", -1)
        v = self.versions.get(oid)
        if v is not None:
            return "version %d" % v
        return "bytes the harness never wrote whole (%s%s)" % (oid[:12], ", %d bytes" % d["size"] if d and "size" in d else "")

    def settings_problems(self, where, data):
        floor = self.set_acked
        if data is None:
            if floor is not None:
                return [(("set", where, floor[0]), "%s: settings.json is gone, though a `set` of goal %d returned before cut %d"
                         % (where, floor[0], floor[1]))]
            return []
        goal, why = settings_goal(data)
        if why is not None:
            return [(("settings", where, blob_oid(data)), "%s: settings.json is %s" % (where, why))]
        if goal not in self.set_goals:
            return [(("settings", where, goal), "%s: settings.json holds goal %d, which no `set` wrote" % (where, goal))]
        if floor is not None and goal < floor[0]:
            return [(("set", where, floor[0]), "%s: settings.json holds goal %d, though a `set` of goal %d returned before "
                     "cut %d (only a later `set` may replace it)" % (where, goal, floor[0], floor[1]))]
        return []

    def read_file(self, path):
        try:
            with open(path, "rb") as f:
                return f.read()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None

    def file_oid(self, path):
        try:
            with open(path, "rb") as f:
                return blob_oid(f.read())
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None

    def ops_done_snapshot(self, w):
        """The phone's completed operations right now: each path's last one (a `sync` starting now
        must keep them)."""
        done = read_journal(w["journal"])
        last = {}
        for op in w["ops"]:
            st = done.get(op["id"], (None, None))[0]
            if st != "ok":
                continue
            if op["kind"] in ("write", "replace"):
                last[op["path"]] = (op["vid"], op["id"])
            elif op["kind"] == "delete":
                last[op["path"]] = (None, op["id"])
            elif op["kind"] == "rename":
                last[op["path"]] = (None, op["id"])
        # earlier cuts' writes on the phone that were never acknowledged are covered by the scan
        return last

    def ack_sync(self, before):
        for path, (vid, oid) in before.items():
            self.acked.append(("written on the phone before a `syncagent sync` that exited 0", path, vid, oid, self.cut_no))

    # -- convergence --
    def compare(self):
        """None when both devices agree (leaving the cut's paths apart), else what differs."""
        self.phone.check_alive()
        self.watch.check_alive()
        pm, wm = self.phone.ref(), self.watch.ref()
        if not pm or pm != wm:
            return "mains differ: phone %s, watch %s" % (pm, wm)
        if self.tablet:
            self.tablet.check_alive()
            if self.tablet.ref() != pm:
                return "the tablet's main %s is not the phone's %s" % (self.tablet.ref(), pm)
            ts, ws = self.tablet.scan(), self.watch.scan()
            differ = [k for k in sorted(set(ts) | set(ws)) if ts.get(k) != ws.get(k) and k not in self.forbidden
                      and k.rstrip("/") not in self.forbidden and not NEVER_SYNCED_RE.search(os.path.basename(k.rstrip("/")))]
            if differ:
                return "the tablet's data directory differs from the watch's: " + "; ".join(
                    "%s: tablet %s, watch %s" % (k, self.edesc(ts.get(k)), self.edesc(ws.get(k))) for k in differ[:8])
        ps, ws = self.phone.scan(), self.watch.scan()
        # Directories on the phone that hold a path the cut left (kept apart): left alone, the
        # phone's copy lists no empty directory there while the watch's may (seed 5004, cut 16: a
        # new file the cut emptied, held back, alone in a directory the watch holds empty).
        holding = set()
        for f in self.forbidden:
            parts = f.rstrip("/").split("/")[:-1]
            for i in range(1, len(parts) + 1):
                holding.add("/".join(parts[:i]) + "/")
        diffs = []
        for k in sorted(set(ps) | set(ws)):
            if k in self.forbidden or k.rstrip("/") in self.forbidden:
                continue
            # A name the agent never syncs (README "What gets committed"): the writer's own
            # temporary, left by a cut that killed it between its write and its rename (seed 9001
            # cut 15: big/p-140.bin.tmp).
            if NEVER_SYNCED_RE.search(os.path.basename(k.rstrip("/"))):
                continue
            a, b = ps.get(k), ws.get(k)
            if a is None and b is not None and b[0] == "dir" and k in holding:
                continue
            if a != b:
                diffs.append("%s: phone %s, watch %s" % (k, self.edesc(a), self.edesc(b)))
        if diffs:
            return "data directories differ: " + "; ".join(diffs[:8])
        # each HEAD is its data directory (outside the cut's paths)
        for dev, scan in ((self.phone, ps), (self.watch, ws)):
            t = dev.tree(pm)
            want = {}
            for k, e in scan.items():
                if e[0] == "file":
                    want[k] = e[1]
                elif e[0] == "dir":
                    want[k + ".syncagent-keep"] = EMPTY_BLOB
                elif e[0] == "link":
                    want[k] = None
            have = dict((k, v[1]) for k, v in t.items())
            for k in sorted(set(want) | set(have)):
                if k in self.forbidden or TEMP_RE.match(os.path.basename(k)) or NEVER_SYNCED_RE.search(os.path.basename(k)):
                    continue
                if dev is self.phone and k.endswith("/.syncagent-keep") and k[:-len(".syncagent-keep")] in holding:
                    continue
                if want.get(k, "-") != have.get(k, "-") and not (k in want and want[k] is None and k in have):
                    return "%s: HEAD and data differ at %s (data %s, HEAD %s)" % (dev.name, k, want.get(k), have.get(k))
        return None

    def edesc(self, e):
        if e is None:
            return "nothing"
        if e[0] == "file":
            return "version %s" % e[2] if e[2] is not None else "damaged file %s" % e[1][:12]
        return e[0]

    def wait_converged(self, deadline, initial=False):
        end = time.monotonic() + deadline
        last = None
        stable_main = None
        while True:
            why = self.compare()
            if why is None:
                m = self.phone.ref()
                if stable_main == m:
                    return
                stable_main = m
                time.sleep(0.3)
                continue
            stable_main = None
            last = why
            if time.monotonic() > end:
                extra = []
                for dev in self.devices():
                    st = dev.status()
                    if st:
                        extra.append("%s: pending %s, problems %s, peers %s" % (
                            dev.name, st.get("pending"), st.get("problems"),
                            [(p.get("name"), p.get("reachable"), p.get("lastError")) for p in st.get("peers", [])]))
                raise Violation("%s did not converge within %d s: %s\n  %s" % (
                    "set-up" if initial else "the devices", deadline, last, "\n  ".join(extra)))
            time.sleep(0.3)

    # -- invariants --
    def check_all(self, report):
        """Every invariant after a converged cut. Each problem has a key, so that with --keep-going
        a lasting one (an empty file on the watch) is reported once."""
        problems = []

        def problem(key, msg):
            problems.append((key, msg))

        # git_fsck runs a failing fsck again (up to 3 times, 1 s apart) before it counts: the live
        # agents roll packs up (the watch its own, either the hub's) while fsck reads them
        repos = [(dev.name, dev.store) for dev in (self.phone, self.watch)] + ([("hub", self.hub)] if self.hub else [])
        for name, git_dir in repos:
            out, failures = git_fsck(git_dir)
            if failures and out is None:
                self.note("git fsck %s failed %d time(s), then passed: %s" % (name, len(failures), failures[0][:400]))
            if out is not None:
                problem(("fsck", name, out[:200]), "git fsck %s: %s" % (name, out[:1500]))
        ps, ws = self.phone.scan(), self.watch.scan()
        main = self.watch.ref()
        # temporaries
        for dev, scan in ((self.phone, ps), (self.watch, ws)):
            for k in scan:
                if TEMP_RE.match(os.path.basename(k.rstrip("/"))):
                    problem(("temp", dev.name, k), "%s: the agent's temporary %s is left in the data directory" % (dev.name, k))
        # whole versions only, on the watch and in main
        for k, e in ws.items():
            if e[0] == "file" and e[2] is None and k != SETTINGS and self.unfinished.get(k) != e[1]:
                why = self.forbidden.get(k, {}).get("why", "")
                problem(("damaged", k, e[1]), "watch: %s is %s, a version the harness never wrote whole%s" % (
                    k, self.vdesc(e[1]), " (%s)" % why if why else ""))
        for k, (mode, oid) in self.watch.tree(main).items():
            if k.endswith(".syncagent-keep") or mode == "120000" or oid in self.valid_oids or k == SETTINGS \
                    or self.unfinished.get(k) == oid:
                continue
            data = self.watch.blob(oid)
            if data is not None and parse_version(data) is not None:
                self.valid_oids.add(oid)
                continue
            problem(("damaged", k, oid), "main %s holds %s as %s" % (main[:12], k, self.vdesc(oid)))
        # damage on the phone only where a cut left it (a name the agent never syncs is the user
        # program's own: a writer's temporary the cut stopped halfway, seen with a 30 s pause after its open)
        for k, e in ps.items():
            if e[0] == "file" and e[2] is None and k not in self.forbidden and k != SETTINGS and self.unfinished.get(k) != e[1] \
                    and not NEVER_SYNCED_RE.search(os.path.basename(k)):
                problem(("damaged", k, e[1]), "phone: %s is %s, not from a cut the harness saw" % (k, self.vdesc(e[1])))
        # settings.json, the Kit's: whole JSON on the watch, in its main and on the phone; the goal of
        # the last `set` that returned before a cut, or of a later one (a later `set` may be lost)
        if self.set_goals:
            wtree = self.watch.tree(main)
            seen = [("watch", self.read_file(os.path.join(self.watch.data, SETTINGS))),
                    ("phone", self.read_file(os.path.join(self.phone.data, SETTINGS))),
                    ("the watch's main %s" % (main or "-")[:12],
                     self.watch.blob(wtree[SETTINGS][1]) if SETTINGS in wtree else None)]
            for where, data in seen:
                for key, msg in self.settings_problems(where, data):
                    problem(key, msg)
        # nothing the cut made reached the watch
        for k, f in sorted(self.forbidden.items()):
            w = ws.get(k)
            if f["after"] is None:
                if w is None and not self.touched_since(k, f["cut"], deletes_only=True):
                    problem(("spread", k, None, f["cut"]), "a name the cut took away spread as a deletion: %s (cut %d: %s)"
                            % (k, f["cut"], f["why"]))
            elif w is not None and w[0] == "file" and w[1] == f["after"]:
                problem(("spread", k, f["after"], f["cut"]), "what the cut left spread to the watch: %s (cut %d: %s)"
                        % (k, f["cut"], f["why"]))
        # acknowledged changes
        conflicted = set()
        recs = self.watch.conflicts(all_=True) or []
        for r in recs:
            conflicted.add(r.get("path"))
        open_ids = set(r.get("id") for r in recs if r.get("status") == "open")
        for cid, n in self.resolved.items():
            if cid in open_ids:
                problem(("reopened", cid), "conflict %s was resolved (resolve exited 0, cut %d) and is open again on the watch" % (cid, n))
        precs = self.phone.conflicts(all_=True) or []
        for r in precs:
            conflicted.add(r.get("path"))
            if r.get("id") in self.resolved and r.get("status") == "open":
                problem(("reopened-phone", r.get("id")), "phone: conflict %s was resolved (cut %d) and is open again"
                        % (r.get("id"), self.resolved[r.get("id")]))
        keep = []
        for (what, path, vid, opid, n) in self.acked:
            if path in conflicted:
                continue
            w = ws.get(path)
            if vid is None:
                # a deletion or rename away was acknowledged: the path may only be back by a later write
                if w is not None and w[0] == "file" and (w[2] is None or w[2] < opid):
                    problem(("ack", path, opid), "%s: %s was deleted (op %d) and is back as %s" % (what, path, opid, self.edesc(w)))
                    continue
            elif w is None:
                # A deletion or a move away after it: planned later (a higher id), or done after the
                # version was written (ids are given as each device's batch is planned, so one
                # device's move or deletion planned before the other's write can run after it:
                # seeds 9500 cut 95, 9502 cut 4).
                written = self.ops.get(vid, {}).get("t")
                if not (self.touched_since(path, None, after_id=vid, deletes_only=True)
                        or (written is not None and self.touched_since(path, None, after_t=written, deletes_only=True))):
                    problem(("ack", path, vid), "%s: version %d of %s is lost (nothing at that path on the watch, no later deletion)"
                            % (what, vid, path))
                    continue
            elif w[0] == "file":
                if w[2] is None:
                    problem(("ack", path, vid), "%s: version %d of %s became %s" % (what, vid, path, self.edesc(w)))
                    continue
                if w[2] < vid and not self.edited_over(w[2], vid):
                    problem(("ack", path, vid), "%s: version %d of %s went back to version %d" % (what, vid, path, w[2]))
                    continue
            keep.append((what, path, vid, opid, n))
        # acknowledgements older than the last few cuts have been checked enough
        self.acked = [a for a in keep if a[4] >= self.cut_no - 3]
        new = [(k, m) for k, m in problems if k not in self.reported]
        for k, m in new:
            self.reported.add(k)
        if new:
            msg = "\n  ".join(m for _, m in new)
            if not self.args.keep_going:
                raise Violation(msg)
            self.violations += 1
            print("VIOLATION seed=%d cut=%d: %s" % (self.args.seed, self.cut_no, msg), flush=True)
            self.note("VIOLATION " + msg)
            for k, _m in new:
                self.violation_kinds[k[0]] = self.violation_kinds.get(k[0], 0) + 1
                if k[0] == "spread":
                    self.forbidden.pop(k[1], None)
        # an unfinished write's state gone from both devices: forget it
        for k in list(self.unfinished):
            if all(s.get(k, (None, None))[1:2] != (self.unfinished[k],) for s in (ps, ws)):
                del self.unfinished[k]
        # what the cut made is gone from the phone: forget it
        for k in list(self.forbidden):
            e = ps.get(k)
            f = self.forbidden[k]
            if f["after"] is not None:
                # as long as the phone holds what the cut left there, it must not spread
                if e is None or e[0] != "file" or e[1] != f["after"]:
                    del self.forbidden[k]
            elif self.touched_since(k, f["cut"]) or (e is not None and ws.get(k) == e):
                del self.forbidden[k]

    def edited_over(self, newer, older):
        """Whether version `newer` was written over a file holding `older`, directly or through a
        chain of such writes. Ids are handed out as each device's batch is planned, so a write
        planned before the other device's version can run after that version arrived (CI on
        59d2995: the phone wrote version 130 over the watch's 131): that is a later edit, not a
        version going back. A write that never saw `older` is no such edit."""
        seen = set()
        v = newer
        while v is not None and v not in seen:
            if v == older:
                return True
            seen.add(v)
            op = self.ops.get(self.op_of_version.get(v))
            v = op.get("replaced") if op else None
        return False

    def touched_since(self, path, cut, after_id=None, deletes_only=False, after_t=None):
        """Whether a harness operation on `path` (done after cut `cut`, or with an id above
        `after_id`) explains a change there. An operation that started and never finished (its
        writer was killed by the cut) counts as done after it."""
        t_cut = self.cut_times.get(cut, 0) if cut is not None else None
        for i, op in self.ops.items():
            if op["status"] in ("planned", "not started", "skip"):
                continue
            if t_cut is not None and op.get("t") is not None and op["t"] <= t_cut:
                continue
            if t_cut is not None and op.get("t") is None and op["cut"] < cut:
                continue
            if after_id is not None and i <= after_id:
                continue
            if after_t is not None and (op.get("t") is None or op["t"] <= after_t):
                continue
            if op["path"] != path and op.get("to") != path:
                continue
            if deletes_only and op["kind"] not in ("delete", "rename", "rmtree"):
                continue
            return True
        return False

    # -- the run --
    def run(self):
        ok = False
        try:
            self.setup()
            for _ in range(self.args.cuts):
                self.one_cut()
            ok = self.violations == 0
        except Violation as e:
            print("FAILED seed=%d cut=%d: %s" % (self.args.seed, self.cut_no, e), flush=True)
        except SetupError as e:
            print("SETUP FAILED seed=%d: %s" % (self.args.seed, e), flush=True)
            self.teardown(False)
            return 2
        except KeyboardInterrupt:
            print("interrupted at cut %d" % self.cut_no, flush=True)
        except Exception:
            import traceback
            traceback.print_exc()
            print("HARNESS ERROR seed=%d cut=%d (a bug of powercut.py, not a violation)" % (self.args.seed, self.cut_no), flush=True)
            self.teardown(False)
            return 2
        self.summary()
        self.teardown(ok)
        return 0 if ok else 1

    def summary(self):
        n = len(self.times)
        if n:
            avg = sum(self.times) / n
            print("powercut seed=%d: %d cuts, %.1f s per cut (min %.1f, max %.1f); phases: %s; "
                  "dropped %d bytes and %d names in all" % (
                      self.args.seed, n, avg, min(self.times), max(self.times),
                      ", ".join("%s %d" % (p, c) for p, c in self.phase_counts.items() if c),
                      self.dropped_total[0], self.dropped_total[1]), flush=True)
        if self.watch_app:
            print("sets (SyncAgentKit, watch-app): %s; last acknowledged goal %s" % (
                ", ".join("%s %d" % kv for kv in self.set_counts.items()),
                "%d (cut %d)" % self.set_acked if self.set_acked else "none"), flush=True)
        if self.hub:
            print("hub: devices/phone acknowledged at %d of %d cuts" % (self.hub_acked, self.cut_no), flush=True)
        if self.tablet:
            print("tablet: the phone took its devices' new work in one step (a fold) %d times" % self.phone_folds(), flush=True)
        if self.violation_kinds:
            print("violations by kind: %s" % ", ".join("%s %d" % kv for kv in sorted(self.violation_kinds.items())), flush=True)

    def phone_folds(self):
        """How often the phone's agent merged a fold of the hub's devices (its logs, every run)."""
        n = 0
        for k in range(1, self.phone.run_seq + 1):
            try:
                with open(os.path.join(self.phone.dir, "run-%d.log" % k), "rb") as f:
                    n += f.read().count(b"(its devices' new work in one step)")
            except OSError:
                pass
        return n

    def teardown(self, ok):
        for dev in self.devices():
            try:
                dev.stop()
            except Exception:
                dev.kill()
        keep = self.args.keep or not ok
        if keep and self.fs.alive() and mounted(self.disk):
            copy = os.path.join(self.root, "phone-disk-copy")
            subprocess.run(["cp", "-a", self.disk, copy], capture_output=True)
        if self.args.keep_mounted and keep:
            print("left mounted: %s (fusermount3 -u %s)" % (self.disk, self.disk))
        else:
            self.fs.unmount()
        if keep:
            print("kept %s (phone's disk copied to phone-disk-copy; harness.log, cutfs.log, */run-*.log)" % self.root, flush=True)
        else:
            shutil.rmtree(self.root, ignore_errors=True)


# ---- cutfs's own checks -----------------------------------------------------------------------

def check_fs(args):
    """POSIX behaviour, the durability model, git, mmap and inotify on a fresh cutfs mount."""
    root = os.path.realpath(tempfile.mkdtemp(prefix="cutfs-check.", dir=args.tmpdir))
    mnt = os.path.join(root, "mnt")
    fs = CutFS(mnt, root)
    failures = []
    results = []

    def check(what, cond, detail=""):
        (results if cond else failures).append(what + ("" if cond else ": " + str(detail)[:600]))

    def P(*parts):
        return os.path.join(mnt, *parts)

    def write(path, data, fsync=False):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(fd, data)
        if fsync:
            os.fsync(fd)
        os.close(fd)

    def read(path):
        try:
            with open(path, "rb") as f:
                return f.read()
        except FileNotFoundError:
            return None

    def fsync_dir(path):
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        os.fsync(fd)
        os.close(fd)

    libc = ctypes.CDLL(None, use_errno=True)

    def renameat2(a, b, flags):
        rc = libc.renameat2(-100, a.encode(), -100, b.encode(), flags)
        return 0 if rc == 0 else ctypes.get_errno()

    try:
        fs.mount()
        t0 = time.monotonic()
        # -- POSIX --
        write(P("a"), b"one\n")
        fd = os.open(P("a"), os.O_WRONLY | os.O_APPEND)
        os.write(fd, b"two\n")
        os.close(fd)
        fd = os.open(P("a"), os.O_WRONLY | os.O_APPEND)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, b"three\n")
        os.close(fd)
        check("O_APPEND appends", read(P("a")) == b"one\ntwo\nthree\n", read(P("a")))
        try:
            os.open(P("a"), os.O_WRONLY | os.O_CREAT | os.O_EXCL)
            check("O_EXCL refuses an existing name", False, "opened")
        except FileExistsError:
            check("O_EXCL refuses an existing name", True)
        fd = os.open(P("a"), os.O_WRONLY | os.O_TRUNC)
        os.close(fd)
        check("O_TRUNC empties", os.stat(P("a")).st_size == 0)
        write(P("b"), b"bee")
        write(P("c"), b"sea")
        ino_b = os.stat(P("b")).st_ino
        os.rename(P("b"), P("c"))
        check("rename replaces the target", read(P("c")) == b"bee" and not os.path.exists(P("b")) and os.stat(P("c")).st_ino == ino_b)
        write(P("d"), b"dee")
        check("RENAME_NOREPLACE refuses", renameat2(P("d"), P("c"), 1) == errno.EEXIST)
        check("RENAME_EXCHANGE swaps", renameat2(P("d"), P("c"), 2) == 0 and read(P("c")) == b"dee" and read(P("d")) == b"bee")
        os.link(P("c"), P("c2"))
        check("hard link", os.stat(P("c")).st_nlink == 2 and os.stat(P("c2")).st_ino == os.stat(P("c")).st_ino)
        os.symlink("c", P("l"))
        check("symbolic link", os.readlink(P("l")) == "c" and read(P("l")) == b"dee")
        os.mkfifo(P("fifo"))
        check("FIFO", stat.S_ISFIFO(os.lstat(P("fifo")).st_mode))
        os.mkdir(P("dir"))
        write(P("dir", "x"), b"x")
        try:
            os.rmdir(P("dir"))
            check("rmdir refuses a non-empty directory", False)
        except OSError as e:
            check("rmdir refuses a non-empty directory", e.errno == errno.ENOTEMPTY)
        check("directory nlink", os.stat(mnt).st_nlink == 3, os.stat(mnt).st_nlink)
        os.truncate(P("c"), 10)
        check("truncate extends with zeros", read(P("c")) == b"dee" + bytes(7))
        os.chmod(P("c"), 0o755)
        check("chmod", stat.S_IMODE(os.stat(P("c")).st_mode) == 0o755)
        os.utime(P("c"), ns=(1_000_000_123, 1_700_000_000_123_456_789))
        check("nanosecond times", os.stat(P("c")).st_mtime_ns == 1_700_000_000_123_456_789, os.stat(P("c")).st_mtime_ns)
        before = os.stat(P("c")).st_mtime_ns
        with open(P("c"), "ab") as f:
            f.write(b"!")
        check("a write moves mtime", os.stat(P("c")).st_mtime_ns > before)
        big = os.urandom(3 << 20)
        write(P("big"), big)
        with open(P("big"), "rb") as f:
            m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
            ok = m[:] == big
            m.close()
        check("mmap read of a 3 MB file", ok)
        os.mkdir(P("many"))
        for i in range(3000):
            write(P("many", "f%04d" % i), b"%d" % i)
        t1 = time.monotonic()
        names = os.listdir(P("many"))
        check("readdir of 3000 entries, each once", sorted(names) == ["f%04d" % i for i in range(3000)], len(names))
        t2 = time.monotonic()
        for n in names:
            os.stat(P("many", n))
        t3 = time.monotonic()
        results.append("timing: 3000 creates %.2fs, listdir %.3fs, 3000 stats %.2fs" % (t1 - t0, t2 - t1, t3 - t2))
        sv = os.statvfs(mnt)
        check("statfs", sv.f_bsize == 4096 and sv.f_namemax == 255)
        fd = os.open(P("c"), os.O_RDONLY)
        os.fsync(fd)
        os.fdatasync(fd)
        os.close(fd)
        check("fsync, fdatasync", True)

        # -- durability --
        fs.sync()
        os.mkdir(P("dir2"))
        fsync_dir(mnt)
        shutil.rmtree(P("many"))
        write(P("new-fsync-only"), b"data", fsync=True)
        write(P("dir", "new-dirsync-only"), b"data")
        write(P("dir", "new-both"), b"data", fsync=True)
        fsync_dir(P("dir"))
        write(P("c2"), b"rewritten, not fsynced")      # c2 is a hard link of c: both change
        write(P("tmp"), b"renamed over, fsynced", fsync=True)
        os.rename(P("tmp"), P("d"))                     # no fsync of the directory
        os.rename(P("dir", "x"), P("dir2", "x-moved"))
        fsync_dir(P("dir2"))                            # only the destination
        os.unlink(P("a"))
        fd_stale = os.open(P("c"), os.O_RDWR)
        rep = fs.cut()
        check("cut report lists changes", len(rep["changes"]) > 0 and rep["names_dropped"] > 0,
              [(c["path"], c["before"], c["after"]) for c in rep["changes"]][:10])
        check("fsync without fsync of the directory: name lost", not os.path.exists(P("new-fsync-only")))
        check("fsync of the directory only: the file exists, empty", read(P("dir", "new-dirsync-only")) == b"")
        check("fsync of both: whole", read(P("dir", "new-both")) == b"data")
        check("unsynced rewrite of a durable file: old bytes", read(P("c")) == b"dee" + bytes(7) + b"!", read(P("c")))
        check("rename without fsync of the directory: old target", read(P("d")) == b"bee" and not os.path.exists(P("tmp")))
        check("rename across directories, destination fsynced: moved whole",
              read(P("dir2", "x-moved")) == b"x" and not os.path.exists(P("dir", "x")))
        check("unlink without fsync of the directory: back", read(P("a")) == b"")
        check("many/ back after the cut (its removal was not durable)", len(os.listdir(P("many"))) == 3000)
        try:
            os.write(fd_stale, b"late")
            check("write through a handle from before the cut fails", False, "wrote")
        except OSError as e:
            check("write through a handle from before the cut fails", e.errno == errno.EIO, e)
        os.lseek(fd_stale, 0, os.SEEK_SET)
        check("read through a handle from before the cut: the bytes it held at the cut", os.read(fd_stale, 64).startswith(b"rewritten"))
        os.close(fd_stale)
        # syncfs through the preload
        so = build_preload(root)
        write(P("by-syncfs"), b"synced by syncfs")
        env = dict(os.environ, LD_PRELOAD=so)
        code = "import ctypes, os; fd = os.open(%r, os.O_RDONLY); print(ctypes.CDLL(None).syncfs(fd))" % mnt
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        fs.cut()
        check("syncfs (with cutfs_preload.so) makes everything durable", read(P("by-syncfs")) == b"synced by syncfs", r.stderr)
        write(P("by-plain-syncfs"), b"x")
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        fs.cut()
        check("syncfs without the preload reaches nothing (FUSE does not forward it)", not os.path.exists(P("by-plain-syncfs")))

        # -- inotify --
        IN_MODIFY, IN_CLOSE_WRITE, IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x2, 0x8, 0x40, 0x80, 0x100, 0x200
        ifd = libc.inotify_init1(os.O_NONBLOCK)
        os.mkdir(P("watched"))
        wd = libc.inotify_add_watch(ifd, P("watched").encode(), IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE)
        write(P("watched", "f"), b"1")
        write(P("watched", "g.tmp"), b"2")
        os.rename(P("watched", "g.tmp"), P("watched", "g"))
        os.unlink(P("watched", "f"))
        seen = []
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline and len(seen) < 7:
            r, _, _ = select.select([ifd], [], [], 0.2)
            if not r:
                continue
            buf = os.read(ifd, 65536)
            i = 0
            while i < len(buf):
                _wd, mask, _cookie, ln = struct.unpack_from("iIII", buf, i)
                name = buf[i + 16:i + 16 + ln].rstrip(b"\0").decode()
                seen.append((mask & 0xfff, name))
                i += 16 + ln
        want = [(IN_CREATE, "f"), (IN_MODIFY, "f"), (IN_CLOSE_WRITE, "f"), (IN_CREATE, "g.tmp"),
                (IN_MOVED_FROM, "g.tmp"), (IN_MOVED_TO, "g"), (IN_DELETE, "f")]
        check("inotify sees creates, writes, closes, renames and deletes through the mount",
              all(w in seen for w in want) and wd >= 0, seen)
        os.close(ifd)

        # -- git --
        gd = P("repo")
        env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null", GIT_AUTHOR_NAME="t",
                   GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")

        def git(*a):
            return subprocess.run(["git", "-C", gd] + list(a), capture_output=True, text=True, env=env)
        os.mkdir(gd)
        git("init", "-q", "-b", "main")
        for i in range(200):
            os.makedirs(os.path.join(gd, "d%d" % (i % 10)), exist_ok=True)
            write(os.path.join(gd, "d%d" % (i % 10), "f%d" % i), os.urandom(2000))
        r1 = git("add", "-A")
        r2 = git("commit", "-q", "-m", "one")
        r3 = git("gc", "-q", "--aggressive")
        r4 = git("fsck", "--strict", "--no-dangling")
        check("git add, commit, gc (packs, mmap), fsck on cutfs", all(r.returncode == 0 for r in (r1, r2, r3, r4)),
              [r.stderr for r in (r1, r2, r3, r4)])
        clone = os.path.join(root, "clone")
        r5 = subprocess.run(["git", "clone", "-q", gd, clone], capture_output=True, text=True, env=env)
        check("git clone from cutfs", r5.returncode == 0 and len(os.listdir(os.path.join(clone, "d0"))) == 20, r5.stderr)
        fs.sync()
        write(os.path.join(gd, "d0", "f0"), b"changed")
        git("commit", "-qam", "two")          # git does not fsync by default: the cut may break it
        fs.cut()
        r6 = git("fsck", "--no-dangling")
        results.append("git commit without core.fsync, then a cut: fsck %s" % ("clean" if r6.returncode == 0 else
                       "fails (" + (r6.stderr or r6.stdout).strip().splitlines()[0] + ")"))
        fs.unmount()

        # -- the journal model (ext4's journal; XFS-like zero-filled sizes) --
        fs = CutFS(mnt, root, ["--model", "journal", "--unsynced", "zeros"])
        fs.mount()
        write(P("old"), b"old bytes")
        write(P("rewritten"), b"0123456789" * 30)
        fs.sync()
        write(P("rewritten"), b"shorter, never fsynced")          # O_TRUNC, then new bytes
        write(P("new"), b"never fsynced")
        write(P("old.tmp"), b"replacement, never fsynced")
        os.rename(P("old.tmp"), P("old"))
        write(P("other"), b"fsynced", fsync=True)      # commits the journal: every name so far
        fs.cut()
        check("journal: another file's fsync makes a new name durable, its bytes zeros",
              read(P("new")) == bytes(len(b"never fsynced")), read(P("new")))
        check("journal: a rename over a file is durable with the journal, its bytes are not",
              read(P("old")) == bytes(len(b"replacement, never fsynced")), read(P("old")))
        check("journal: the fsynced file whole", read(P("other")) == b"fsynced")
        check("journal: a truncate is journaled, the bytes written after it are not (zeros)",
              read(P("rewritten")) == bytes(len(b"shorter, never fsynced")), read(P("rewritten")))
        results.append("total %.1fs" % (time.monotonic() - t0))
    except Exception as e:
        failures.append("exception: %r" % e)
        import traceback
        traceback.print_exc()
    finally:
        fs.unmount()
    for r in results:
        print("ok   " + r if not r.startswith(("timing", "git commit", "total")) else "     " + r)
    for f in failures:
        print("FAIL " + f)
    if not failures:
        shutil.rmtree(root, ignore_errors=True)
    else:
        print("kept %s (cutfs.log)" % root)
    return 1 if failures else 0


# --mix: the long soak spread over the models and transports, one run of each (seed, seed+1, ...)
MIX = (
    ("plain", {}),
    ("hub+set", {"hub": True, "set": True}),
    ("journal+set", {"model": "journal", "zero_fill": True, "user_fsync": True, "set": True}),
    ("hub-only+set", {"hub_only": True, "set": True, "user_fsync": True}),
    ("journal+hub", {"model": "journal", "hub": True}),
)


def mix_options(over):
    return " ".join("--" + k.replace("_", "-") + ("" if v is True else " %s" % v) for k, v in over.items())


def mix_main(args):
    """--cuts spread over MIX: one run per row, seed, seed+1, ..., each with about cuts/len(MIX)
    cuts (together at least --cuts), then one summary: cuts per phase over all the runs, and the
    command that replays each failed run. A failed run does not stop the others."""
    import copy
    each = -(-args.cuts // len(MIX))
    phases = dict((p, 0) for p in PHASES)
    times, lines, failed = [], [], []
    sets = {}
    for i, (name, over) in enumerate(MIX):
        a = copy.copy(args)
        a.mix = False
        a.seed = args.seed + i
        a.cuts = each
        for k, v in over.items():
            setattr(a, k, v)
        opts = mix_options(over)
        print("powercut mix %d/%d (%s): --seed %d --cuts %d %s" % (i + 1, len(MIX), name, a.seed, each, opts), flush=True)
        h = Harness(a)
        rc = h.run()
        for p, c in h.phase_counts.items():
            phases[p] += c
        for k, c in h.set_counts.items():
            sets[k] = sets.get(k, 0) + c
        times += h.times
        lines.append("%s %d cuts%s" % (name, len(h.times), "" if rc == 0 else " (FAILED, exit %d)" % rc))
        if rc != 0:
            failed.append("python3 e2e/powercut.py --seed %d --cuts %d --model %s%s (%s)" % (
                a.seed, each, a.model, "".join(" --" + k.replace("_", "-") for k in ("zero_fill", "user_fsync", "hub", "hub_only", "set")
                                               if getattr(a, k)), name))
        if rc == 2:
            break
    n = len(times)
    print("powercut mix seed=%d: %d cuts (%s), %.1f s per cut; phases: %s; sets: %s" % (
        args.seed, n, ", ".join(lines), sum(times) / n if n else 0,
        ", ".join("%s %d" % (p, c) for p, c in phases.items() if c),
        ", ".join("%s %d" % kv for kv in sets.items())), flush=True)
    for f in failed:
        print("powercut mix FAILED: %s" % f, flush=True)
    return 1 if failed else 0


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "--writer":
        writer_main(sys.argv[2], sys.argv[3])
        return 0
    ap = argparse.ArgumentParser(description="Power-cut harness for syncagent (see the file's docstring).")
    ap.add_argument("--binary", default=os.path.join(os.path.dirname(HERE), ".build/release/syncagent"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cuts", type=int, default=10)
    ap.add_argument("--files", type=int, default=120, help="files written at set-up (default 120)")
    ap.add_argument("--max-delay", type=float, default=2.0, help="the cut comes 0..this many seconds into the activity")
    ap.add_argument("--big-mb", type=int, default=4, help="big files are 1..this many MiB")
    ap.add_argument("--bulk", type=float, default=0.0,
                    help="the chance that an operation is a folder of 300 new documents at once (a pack the agent deflates at rest; default 0)")
    ap.add_argument("--timeout", type=int, default=60, help="seconds to converge after a cut")
    ap.add_argument("--debounce-ms", type=int, default=100)
    ap.add_argument("--poll-seconds", type=int, default=2)
    ap.add_argument("--idle-ms", type=int, default=300, help="no agent operation for this long before the cut: phase idle")
    ap.add_argument("--log-level", default="info")
    ap.add_argument("--model", choices=("strict", "journal", "mix"), default="strict",
                    help="cutfs's durability model: strict (default; only fsynced bytes and fsynced directory entries "
                    "survive) or journal (any fsync also commits every name, rename, unlink and truncate so far, as "
                    "ext4's journal does; bytes still only by their own fsync); mix: the same as --mix (`make soak-powercut MODEL=mix`)")
    ap.add_argument("--slow-big", action="store_true",
                    help="the user programs pause 0.1-1.5 s between creating a big file and writing its first byte "
                    "(a camera app saving a photo): cuts then find new files empty that the cut did not empty")
    ap.add_argument("--zero-fill", action="store_true",
                    help="a file whose name is durable but whose bytes never were keeps its size, zero-filled (XFS, ext4 data=writeback), instead of length 0")
    ap.add_argument("--user-fsync", action="store_true",
                    help="the phone's user program fsyncs every file it writes and the directories along its path "
                    "(a careful program): what a cut then damages is the agent's own doing")
    ap.add_argument("--keep-going", action="store_true",
                    help="report each new violation and go on with the next cut (a run that cannot converge still stops)")
    ap.add_argument("--no-initial-sync", action="store_true",
                    help="do not make the set-up durable (after `syncagent init` and after the first files): the "
                    "first cut finds only what init and the agents made durable themselves")
    ap.add_argument("--same-boot", action="store_true",
                    help="keep the phone's boot id across cuts (SYNCAGENT_BOOT_ID): its agent then cannot tell a cut "
                    "from a kill -9, as an agent that does not look at the boot id never can")
    ap.add_argument("--no-syncfs-shim", action="store_true", help="run the phone's agent without cutfs_preload.so (its syncfs then makes nothing durable)")
    ap.add_argument("--hub", action="store_true",
                    help="both devices also have a hub (hub.git, a bare repository on the ordinary temp dir, `hub = true`): "
                    "the phone's agent pushes devices/phone there after every commit and merge; what the hub holds at a cut is acknowledged")
    ap.add_argument("--hub-only", action="store_true",
                    help="the hub is the devices' only peer (implies --hub): they see each other only through it")
    ap.add_argument("--tablet", action="store_true",
                    help="a third device, `tablet`, with the hub as its only peer (implies --hub), never cut: it writes new "
                    "files of its own in each cut's window, so the phone folds the watch's and the tablet's new work in "
                    "one step (a join it writes and flushes itself); the summary counts the folds")
    ap.add_argument("--set", action="store_true",
                    help="SyncAgentKit `set`s on the phone (the sample client watch-app writing settings.json), cut in "
                    "mid-flight now and then; one that returned is acknowledged")
    ap.add_argument("--set-prob", type=float, default=0.4, help="with --set: the share of cuts with a `set` in their window (default 0.4)")
    ap.add_argument("--watch-app", default=None, help="the watch-app binary (default: beside --binary)")
    ap.add_argument("--mix", action="store_true",
                    help="the long soak: --cuts spread over %d runs (seed, seed+1, ...): %s; the per-phase counts "
                    "summed at the end" % (len(MIX), "; ".join("%s (%s)" % (n, mix_options(o) or "as given") for n, o in MIX)))
    ap.add_argument("--trace", action="store_true", help="cutfs writes every change and fsync it sees to <temp dir>/cutfs.trace")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir of a passing run too")
    ap.add_argument("--keep-mounted", action="store_true", help="on failure, leave the phone's cutfs mounted")
    ap.add_argument("--tmpdir", default=None)
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--check-fs", action="store_true", help="run cutfs's own checks and exit")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("powercut needs root (FUSE mounts)", file=sys.stderr)
        return 2
    if args.check_fs:
        return check_fs(args)
    if not os.access(args.binary, os.X_OK):
        print("no syncagent binary at %s" % args.binary, file=sys.stderr)
        return 2
    if args.hub_only or args.tablet:
        args.hub = True
    if args.model == "mix":
        args.model, args.mix = "strict", True
    if args.mix:
        return mix_main(args)
    return Harness(args).run()


if __name__ == "__main__":
    sys.exit(main())
