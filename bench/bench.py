#!/usr/bin/env python3
"""syncagent benchmark: the agent against `git add -A && git commit` on the same data, same run.

Three measurements, each printed with the ratio agent/git (below 1 means the agent is faster):
  1. change -> commit latency, p50 and p99 over 50 single-file modifications (agent debounce 20 ms);
  2. a 10,000-file bulk commit (files made while the agent is stopped; timed from `syncagent run`);
  3. one change in a 100,000-file tree (p50 over 10 modifications), plus the initial 100k commit.

"Committed" means refs/heads/main changed: the loose ref file is polled about every millisecond.
The git baseline runs in a plain repository holding an identical copy of the data, with a
deterministic environment (no global/system config, fixed identity, gc.auto=0 so no background
repacking skews the other side) and git's default durability: loose objects are not fsynced,
which matters for the bulk rows if the agent syncs each object. Samples of the two sides are
interleaved.

Timings are reported, never asserted. The script exits non-zero if the agent loses data (its HEAD
tree differs from the data directory), fails to commit in time, or does not exit 0 on SIGTERM.

Environment: SYNCAGENT (the binary; required), BENCH_KEEP=1 keeps the temp dir (removed otherwise),
BENCH_SCALE (default 1.0) scales the file counts down for a quick smoke run.
Standard library only.
"""

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SCALE = float(os.environ.get("BENCH_SCALE", "1"))
DEBOUNCE_MS = 20
DEFAULT_DEBOUNCE_MS = 200
LATENCY_FILES = 1_000
LATENCY_CHANGES = 50
BULK_FILES = max(100, int(10_000 * SCALE))
BIG_FILES = max(100, int(100_000 * SCALE))
BIG_CHANGES = 10
FILES_PER_DIR = 100
POLL_S = 0.001
COMMIT_TIMEOUT_S = 300.0

GIT_ENV = dict(os.environ)
GIT_ENV.update({
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    "GIT_TERMINAL_PROMPT": "0",
    "LC_ALL": "C",
})
for k in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY"):
    GIT_ENV.pop(k, None)


class BenchError(Exception):
    pass


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def git(args, git_dir=None, work_tree=None, cwd=None, input_bytes=None):
    cmd = ["git"]
    if git_dir:
        cmd.append(f"--git-dir={git_dir}")
    if work_tree:
        cmd.append(f"--work-tree={work_tree}")
    cmd += args
    p = subprocess.run(cmd, cwd=cwd, env=GIT_ENV, input=input_bytes,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        raise BenchError(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr.decode(errors='replace').strip()}")
    return p.stdout


def read_ref(git_dir):
    """The oid refs/heads/main points at, or None (unborn). Loose ref first, then packed-refs."""
    try:
        with open(os.path.join(git_dir, "refs", "heads", "main"), "rb") as f:
            v = f.read().strip()
            if v:
                return v.decode()
    except FileNotFoundError:
        pass
    try:
        with open(os.path.join(git_dir, "packed-refs"), "rb") as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2 and parts[1] == b"refs/heads/main":
                    return parts[0].decode()
    except FileNotFoundError:
        pass
    return None


def wait_ref_change(git_dir, old, timeout=COMMIT_TIMEOUT_S, agent=None):
    """Polls until refs/heads/main differs from `old`; returns (perf_counter at detection, new oid)."""
    deadline = time.perf_counter() + timeout
    while True:
        cur = read_ref(git_dir)
        now = time.perf_counter()
        if cur is not None and cur != old:
            return now, cur
        if now > deadline:
            raise BenchError(f"no commit in {git_dir} within {timeout:.0f} s")
        if agent is not None and agent.proc.poll() is not None:
            raise BenchError(agent.unexpected_exit())
        time.sleep(POLL_S)


def file_content(i, version=0):
    return f"file {i} version {version}\n".encode() + b"x" * 64 + b"\n"


def rel_path(i):
    return os.path.join(f"d{i // FILES_PER_DIR:04d}", f"f{i:06d}.txt")


def make_tree(root, n):
    """n small files, FILES_PER_DIR per directory. Same n -> byte-identical trees."""
    made = set()
    for i in range(n):
        d = os.path.join(root, f"d{i // FILES_PER_DIR:04d}")
        if d not in made:
            os.makedirs(d, exist_ok=True)
            made.add(d)
        with open(os.path.join(root, rel_path(i)), "wb") as f:
            f.write(file_content(i))


def modify(root, i, version):
    with open(os.path.join(root, rel_path(i)), "wb") as f:
        f.write(file_content(i, version))


def tree_count(git_dir):
    out = git(["ls-tree", "-r", "-z", "--name-only", "--full-tree", "HEAD"], git_dir=git_dir)
    return out.count(b"\0")


def verify_store(git_dir, data, what):
    """HEAD's tree must hold exactly the data directory's files with the same bytes."""
    out = git(["ls-tree", "-r", "-z", "--full-tree", "HEAD"], git_dir=git_dir)
    committed = {}
    for rec in out.split(b"\0"):
        if not rec:
            continue
        meta, path = rec.split(b"\t", 1)
        mode, _typ, oid = meta.split(b" ")
        committed[path] = (mode, oid)
    on_disk = []
    dbytes = os.fsencode(data)
    for dirpath, dirnames, filenames in os.walk(dbytes):
        if dirpath == dbytes and b".git" in dirnames:
            dirnames.remove(b".git")  # the git baseline's repository
        for name in filenames:
            full = os.path.join(dirpath, name)
            on_disk.append(os.path.relpath(full, dbytes))
    on_disk.sort()
    oids = git(["hash-object", "--no-filters", "--stdin-paths"], cwd=data,
               input_bytes=b"\n".join(on_disk) + b"\n").split() if on_disk else []
    disk = {p: o for p, o in zip(on_disk, oids)}
    missing = sorted(set(disk) - set(committed))
    extra = sorted(set(committed) - set(disk))
    wrong = sorted(p for p in set(disk) & set(committed) if committed[p][1] != disk[p])
    if missing or extra or wrong:
        def show(xs):
            return ", ".join(x.decode(errors="replace") for x in xs[:5]) + (" ..." if len(xs) > 5 else "")
        raise BenchError(f"{what}: DATA LOSS: HEAD of {git_dir} differs from {data}: "
                         f"{len(missing)} missing [{show(missing)}], {len(extra)} extra [{show(extra)}], "
                         f"{len(wrong)} with other content [{show(wrong)}]")
    return len(disk)


class Agent:
    def __init__(self, syncagent, base, name):
        self.bin = syncagent
        self.base = base
        self.data = os.path.join(base, "data")
        self.state = os.path.join(base, "state")
        self.config = os.path.join(base, "syncagent.toml")
        self.store = os.path.join(self.state, "store.git")
        self.log_path = os.path.join(base, "agent.log")
        self.proc = None
        self.name = name
        self.stats = {}
        p = subprocess.run([syncagent, "init", "--device", "bench", "--data", self.data, "--state", self.state,
                            "--config", self.config], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if p.returncode != 0:
            raise BenchError(f"syncagent init failed ({p.returncode}): {p.stdout.decode(errors='replace')}")
        with open(self.config) as f:
            text = f.read()
        if "# debounce_ms = 200\n" not in text:
            raise BenchError(f"{self.config}: no '# debounce_ms = 200' line to set the debounce")
        with open(self.config, "w") as f:
            f.write(text.replace("# debounce_ms = 200\n", f"debounce_ms = {DEBOUNCE_MS}\n", 1))

    def start(self):
        self.logf = open(self.log_path, "ab")
        self.proc = subprocess.Popen([self.bin, "run", "--config", self.config],
                                     stdin=subprocess.DEVNULL, stdout=self.logf, stderr=self.logf)

    def unexpected_exit(self):
        rc = self.proc.returncode
        why = (" (the bench did not signal it: some other process sent SIGTERM/SIGINT?)" if rc == 0
               else f" (killed by signal {-rc})" if rc < 0 else "")
        return f"{self.name}: agent exited before the bench stopped it, status {rc}{why}; log: {self.log_path}"

    def status(self):
        p = subprocess.run([self.bin, "status", "--json", "--config", self.config],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            return json.loads(p.stdout)
        except ValueError:
            return {}

    def wait_idle(self, timeout=COMMIT_TIMEOUT_S):
        """Until the agent answers running, with a HEAD and nothing pending."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise BenchError(self.unexpected_exit())
            s = self.status()
            if s.get("running") and s.get("head") and s.get("pending") == 0:
                return
            time.sleep(0.05)
        raise BenchError(f"agent not idle within {timeout:.0f} s (last status {self.status()})")

    def sample_usage(self):
        """CPU seconds and peak RSS of the running agent, from /proc."""
        pid = self.proc.pid
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            tick = os.sysconf("SC_CLK_TCK")
            cpu = (int(fields[11]) + int(fields[12])) / tick
            hwm = None
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        hwm = int(line.split()[1]) / 1024
            self.stats = {"cpu_s": cpu, "peak_rss_mb": hwm}
        except (OSError, IndexError, ValueError):
            pass

    def stop(self, timeout=120):
        if self.proc is None:
            return
        self.sample_usage()
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise BenchError(f"{self.name}: agent did not exit within {timeout} s of SIGTERM; log: {self.log_path}")
        finally:
            self.logf.close()
        self.proc = None
        if rc != 0:
            raise BenchError(f"{self.name}: agent exited {rc} after SIGTERM (expected 0); log: {self.log_path}")

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def log_problems(self):
        out = []
        try:
            with open(self.log_path, errors="replace") as f:
                for line in f:
                    parts = line.split(" ", 2)
                    if len(parts) >= 2 and parts[1] in ("notice", "warning", "error", "critical"):
                        out.append(line.rstrip("\n"))
                    elif len(parts) < 2 or parts[1] not in ("trace", "debug", "info"):
                        out.append(line.rstrip("\n"))  # anything not in swift-log's format
        except OSError:
            pass
        return out

    def commits(self):
        return int(git(["rev-list", "--count", "HEAD"], git_dir=self.store).strip())


class GitRepo:
    def __init__(self, base):
        self.work = os.path.join(base, "repo")
        os.makedirs(self.work)
        git(["init", "-q", "-b", "main", self.work])
        git(["config", "gc.auto", "0"], cwd=self.work)
        self.git_dir = os.path.join(self.work, ".git")

    def commit(self):
        git(["add", "-A"], cwd=self.work)
        git(["commit", "-q", "-m", "x"], cwd=self.work)


def cleanup(path):
    """Removes a phase's files as soon as the phase is done (keeps the disk footprint down)."""
    if os.environ.get("BENCH_KEEP") == "1":
        return
    t = time.perf_counter()
    subprocess.run(["rm", "-rf", "--one-file-system", path])
    log(f"    removed {os.path.basename(path)} data in {time.perf_counter() - t:.1f} s")


def pct(xs, p):
    """Nearest-rank percentile (p99 of 50 samples is the largest)."""
    s = sorted(xs)
    return s[max(0, math.ceil(p / 100 * len(s)) - 1)]


def bench_latency(syncagent, tmp, rows, notes, agents):
    log(f"1/3 change->commit latency: {LATENCY_FILES} files, {LATENCY_CHANGES} changes, debounce {DEBOUNCE_MS} ms")
    base = os.path.join(tmp, "latency")
    os.makedirs(base)
    agent = Agent(syncagent, base, "latency")
    agents.append(agent)
    repo = GitRepo(base)
    make_tree(agent.data, LATENCY_FILES)
    make_tree(repo.work, LATENCY_FILES)
    repo.commit()
    agent.start()
    wait_ref_change(agent.store, None, agent=agent)
    agent.wait_idle()
    time.sleep(0.2)
    a_lat, g_lat = [], []
    for k in range(LATENCY_CHANGES):
        i = (k * 37) % LATENCY_FILES
        old = read_ref(agent.store)
        t0 = time.perf_counter()
        modify(agent.data, i, k + 1)
        t1, _ = wait_ref_change(agent.store, old, timeout=30, agent=agent)
        a_lat.append(t1 - t0)

        old = read_ref(repo.git_dir)
        t0 = time.perf_counter()
        modify(repo.work, i, k + 1)
        repo.commit()
        t1, _ = wait_ref_change(repo.git_dir, old, timeout=30)
        g_lat.append(t1 - t0)
        time.sleep(0.03)
    agent.wait_idle()
    n_commits = agent.commits()
    agent.stop()
    verify_store(agent.store, agent.data, "latency")
    verify_store(repo.git_dir, repo.work, "latency (git baseline)")
    cleanup(base)
    label = f"(debounce {DEBOUNCE_MS}ms)"
    rows.append((f"change->commit p50 {label}", pct(a_lat, 50), pct(g_lat, 50)))
    rows.append((f"change->commit p99 {label}", pct(a_lat, 99), pct(g_lat, 99)))
    notes.append(f"latency: {LATENCY_CHANGES} changes in a {LATENCY_FILES}-file tree; agent min/max "
                 f"{min(a_lat)*1e3:.1f}/{max(a_lat)*1e3:.1f} ms, git min/max "
                 f"{min(g_lat)*1e3:.1f}/{max(g_lat)*1e3:.1f} ms; agent made {n_commits} commits "
                 f"(1 initial + {n_commits - 1} for {LATENCY_CHANGES} changes)")
    notes.append(f"latency agent: cpu {agent.stats.get('cpu_s', float('nan')):.2f} s, "
                 f"peak RSS {agent.stats.get('peak_rss_mb') or float('nan'):.0f} MB")


def bench_bulk(syncagent, tmp, rows, notes, agents):
    log(f"2/3 bulk commit of {BULK_FILES} files made while the agent is stopped")
    base = os.path.join(tmp, "bulk")
    os.makedirs(base)
    agent = Agent(syncagent, base, "bulk")
    agents.append(agent)
    repo = GitRepo(base)
    make_tree(agent.data, BULK_FILES)
    make_tree(repo.work, BULK_FILES)

    t0 = time.perf_counter()
    agent.start()
    old, count, steps = None, 0, 0
    while count < BULK_FILES:
        t1, old = wait_ref_change(agent.store, old, agent=agent)
        count = tree_count(agent.store)
        steps += 1
    a_time = t1 - t0
    agent.wait_idle()
    n_commits = agent.commits()
    agent.stop()
    n = verify_store(agent.store, agent.data, "bulk")
    if n != BULK_FILES:
        raise BenchError(f"bulk: expected {BULK_FILES} files, data dir holds {n}")

    t0 = time.perf_counter()
    repo.commit()
    g_time = time.perf_counter() - t0
    if tree_count(repo.git_dir) != BULK_FILES:
        raise BenchError("bulk: git baseline did not commit every file")
    cleanup(base)
    rows.append((f"{BULK_FILES // 1000}k-file bulk commit (from start)", a_time, g_time))
    notes.append(f"bulk: agent landed {BULK_FILES} files in {n_commits} commit(s); "
                 f"cpu {agent.stats.get('cpu_s', float('nan')):.2f} s, "
                 f"peak RSS {agent.stats.get('peak_rss_mb') or float('nan'):.0f} MB")


def bench_big_tree(syncagent, tmp, rows, notes, agents):
    log(f"3/3 single change in a {BIG_FILES}-file tree ({BIG_CHANGES} changes); writing the files")
    base = os.path.join(tmp, "big")
    os.makedirs(base)
    agent = Agent(syncagent, base, "big")
    agents.append(agent)
    repo = GitRepo(base)
    t = time.perf_counter()
    make_tree(agent.data, BIG_FILES)
    make_tree(repo.work, BIG_FILES)
    log(f"    wrote 2 x {BIG_FILES} files in {time.perf_counter() - t:.1f} s; initial commits")

    t0 = time.perf_counter()
    agent.start()
    old, count = None, 0
    while count < BIG_FILES:
        t1, old = wait_ref_change(agent.store, old, agent=agent)
        count = tree_count(agent.store)
    a_init = t1 - t0
    agent.wait_idle()
    time.sleep(0.2)
    t0 = time.perf_counter()
    repo.commit()
    g_init = time.perf_counter() - t0
    if tree_count(repo.git_dir) != BIG_FILES:
        raise BenchError("big: git baseline did not commit every file")

    log(f"    initial commits done (agent {a_init:.1f} s, git {g_init:.1f} s); timing {BIG_CHANGES} changes")
    a_lat, g_lat = [], []
    for k in range(BIG_CHANGES):
        i = (k * 9973 + 12345) % BIG_FILES
        old = read_ref(agent.store)
        t0 = time.perf_counter()
        modify(agent.data, i, k + 1)
        t1, _ = wait_ref_change(agent.store, old, timeout=60, agent=agent)
        a_lat.append(t1 - t0)

        old = read_ref(repo.git_dir)
        t0 = time.perf_counter()
        modify(repo.work, i, k + 1)
        repo.commit()
        t1, _ = wait_ref_change(repo.git_dir, old, timeout=60)
        g_lat.append(t1 - t0)
        time.sleep(0.03)
    agent.wait_idle()
    n_commits = agent.commits()
    agent.stop()
    log("    verifying the agent's store against the data directory")
    n = verify_store(agent.store, agent.data, "big")
    if n != BIG_FILES:
        raise BenchError(f"big: expected {BIG_FILES} files, data dir holds {n}")
    # removed (slow: ~400k files) after the table is printed
    k = f"{BIG_FILES // 1000}k"
    rows.append((f"{k}-file initial commit (from start)", a_init, g_init))
    rows.append((f"1 change in {k} tree p50 (debounce {DEBOUNCE_MS}ms)", pct(a_lat, 50), pct(g_lat, 50)))
    notes.append(f"{k} tree: {BIG_CHANGES} changes, agent min/max {min(a_lat)*1e3:.1f}/{max(a_lat)*1e3:.1f} ms, "
                 f"git min/max {min(g_lat)*1e3:.1f}/{max(g_lat)*1e3:.1f} ms; agent made {n_commits} commits; "
                 f"cpu {agent.stats.get('cpu_s', float('nan')):.2f} s, "
                 f"peak RSS {agent.stats.get('peak_rss_mb') or float('nan'):.0f} MB")


def fmt_time(s):
    return f"{s * 1e3:.1f} ms" if s < 1 else f"{s:.2f} s"


def main():
    sys.stdout.reconfigure(line_buffering=True)
    syncagent = os.environ.get("SYNCAGENT")
    if not syncagent or not os.access(syncagent, os.X_OK):
        print(f"bench: SYNCAGENT must name the syncagent binary (got {syncagent!r}); try `make bench`",
              file=sys.stderr)
        return 2
    syncagent = os.path.abspath(syncagent)
    version = subprocess.run([syncagent, "--version"], stdout=subprocess.PIPE, text=True).stdout.strip()
    gitv = git(["--version"]).decode().strip()
    tmp = tempfile.mkdtemp(prefix="syncagent-bench.")
    rows, notes, agents = [], [], []
    started = time.perf_counter()
    failed = None
    try:
        bench_latency(syncagent, tmp, rows, notes, agents)
        bench_bulk(syncagent, tmp, rows, notes, agents)
        bench_big_tree(syncagent, tmp, rows, notes, agents)
    except BenchError as e:
        failed = str(e)
    except KeyboardInterrupt:
        failed = "interrupted"
    finally:
        for a in agents:
            a.kill()

    sys.stderr.flush()
    print()
    print(f"syncagent {version} ({syncagent}) vs {gitv}; {os.cpu_count()} CPUs; data in {tmp}")
    print(f"agent debounce_ms = {DEBOUNCE_MS} in every run (the default is {DEFAULT_DEBOUNCE_MS} ms); "
          f"ratio = syncagent / git (below 1: the agent is faster)")
    print()
    print(f"  {'benchmark':<44}{'syncagent':>12}{'git CLI':>12}{'ratio':>9}")
    for name, a, g in rows:
        print(f"  {name:<44}{fmt_time(a):>12}{fmt_time(g):>12}{a / g:>9.2f}")
    print()
    print("git CLI = modify, then `git add -A && git commit -q -m x` in a plain repo with the same files;")
    print("times end when refs/heads/main moves (polled every ~1 ms). p99 of 50 samples is the largest.")
    print("git runs with gc.auto=0 and its default core.fsync (loose objects are not fsynced).")
    for n in notes:
        print(f"  note: {n}")
    problems = [(a.name, line) for a in agents for line in a.log_problems()]
    if problems:
        print(f"  agent log: {len(problems)} notice/warning/error line(s):")
        for name, line in problems[:20]:
            print(f"    [{name}] {line}")
    else:
        print("  agent log: no notices, warnings or errors")
    print(f"  measurements took {time.perf_counter() - started:.0f} s")

    if failed:
        for a in agents:
            try:
                with open(a.log_path, errors="replace") as f:
                    tail = f.readlines()[-15:]
            except OSError:
                continue
            print(f"  last lines of the {a.name} agent's log:", file=sys.stderr)
            for line in tail:
                print(f"    {line.rstrip()}", file=sys.stderr)
    if os.environ.get("BENCH_KEEP") == "1":
        print(f"  kept {tmp} (agent logs: */agent.log)")
    else:
        cleanup(tmp)
        shutil.rmtree(tmp, ignore_errors=True)
        log(f"total {time.perf_counter() - started:.0f} s")
    if failed:
        print(f"\nbench: FAILED: {failed}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
