"""`make bench PEERS=1`: syncagent against Unison and `rsync -a` (Debian's packages) and Syncthing, on the
same files, in one run.

Each workload runs on fresh directories, first through a phone/watch pair of agents (each the
other's peer by the path of its store, debounce 20 ms), then through one `unison A B -batch -auto`
run started after the writes (Debian ships no unison-fsmonitor, so Unison has no continuous mode
here: its figure is the time of that one run), then through one `rsync -a A/ B/` (a one-way copy
with no history and no fsync: the floor a user can see). Times are what a user waits: from the
last write until every file on the other side holds every byte (agent), or the run's wall time
(Unison, rsync: they return only when done). Content: text (zlib shrinks it), random bytes
(archives: nothing to shrink), documents as a user has them (1-100 KB, log-uniform, nine in ten
text: `bench.doc_content`) and photos (2-5 MB, random). Receiving-side CPU: the watch agent's,
against the whole Unison run's (both of its sides live in one process here, so it is an upper bound
for Unison).

Rows (BENCH_SCALE scales the counts): 10k new 4 KB files (text, random), 10k modified files, 10k new
and modified documents, 300 new photos (agents, Unison and rsync only), the 100k-file first sync to
an empty peer with the agents' peak RSS, 1 file in a 1k-file tree (p50 of 20), and the receiving
side's CPU. Each row prints ours, each peer's, the ratios and the targets of issue 45 (<= 1x Unison
and Syncthing unless a row says otherwise; photos <= 0.7x Unison and <= 2x rsync; new files
<= 1.5x rsync; the 100k first sync <= 0.3x Unison and <= 1.5x rsync with <= 48 MB).

The 10k rows (text, random, documents) and the photos row run PEERS_ROUNDS rounds (default 3),
each tool once a round in turn, and print medians (each round's figures in a note; Syncthing runs
in the first round only). PEERS_ROWS=photos,docs,... runs only
those rows (one, text, random, docs, first, photos).

Syncthing (Debian's 1.19, installed when missing) runs the 4 KB 10k workloads and the 1-file latency
through bench/syncthing.py: two instances on loopback, its watcher at the shortest delay (1 s); times
from the last write until the other side holds every byte, like the agents'. Its 100k first sync is
not run (224 s in PEERS.md).
"""

import os
import random
import resource
import shutil
import subprocess
import time

import syncthing

# bench.py's own module (it runs as __main__): set by `run`, so that BenchError is the one it catches.
bench = None


def log(msg):
    bench.log(msg)


def BenchError(msg):
    return bench.BenchError(msg)

UNISON = "unison"


def ensure_unison():
    """Installs Debian's unison when it is missing (as root); returns its version line."""
    if shutil.which(UNISON) is None:
        if os.geteuid() != 0:
            raise BenchError("PEERS=1 needs unison: run `sudo apt-get install -y unison` first")
        log("installing unison from Debian's packages")
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
        subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", "unison"], check=True, env=env,
                       stdout=subprocess.DEVNULL)
    p = subprocess.run([UNISON, "-version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return p.stdout.strip()


def ensure_rsync():
    """Installs Debian's rsync when it is missing (as root); returns its version line."""
    if shutil.which("rsync") is None:
        if os.geteuid() != 0:
            raise BenchError("PEERS=1 needs rsync: run `sudo apt-get install -y rsync` first")
        log("installing rsync from Debian's packages")
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", "rsync"], check=True, env=env,
                       stdout=subprocess.DEVNULL)
    p = subprocess.run(["rsync", "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return " ".join(p.stdout.splitlines()[0].split()[:3])


def rsync_take(base, data, mod=None):
    """`rsync -a A/ B/` of `data` written into a fresh A (the floor a user can see: a one-way copy,
    no history, no fsync), then of `mod` written over it: (seconds new, seconds modified or None)."""
    a, b = os.path.join(base, "rsync-a"), os.path.join(base, "rsync-b")
    os.makedirs(a)
    os.makedirs(b)

    def run():
        bench.checkpoint_journal(base)  # as before the agents' and Unison's runs: none pays for another's writes
        t0 = time.perf_counter()
        p = subprocess.run(["rsync", "-a", a + "/", b + "/"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        t = time.perf_counter() - t0
        if p.returncode != 0:
            raise BenchError(f"rsync failed ({p.returncode}): {p.stdout.decode(errors='replace')[-800:]}")
        return t

    write_files(a, data)
    t_new = run()
    same_tree(a, b)
    t_mod = None
    if mod is not None:
        write_files(a, mod)
        t_mod = run()
        same_tree(a, b)
    shutil.rmtree(a, ignore_errors=True)
    shutil.rmtree(b, ignore_errors=True)
    return t_new, t_mod


def row(name, ours, unison=None, rsync=None, syncthing=None, targets=None, shown="time"):
    """One row of the table: our figure, each peer's, and the target ratio against each peer
    (None: the ratio is printed, no target)."""
    return {"name": name, "ours": ours, "peers": {"Unison": unison, "rsync -a": rsync, "Syncthing": syncthing},
            "targets": targets or {}, "shown": shown}


class UnisonPair:
    """Two directories and Unison's archive directory, all fresh."""

    def __init__(self, base):
        self.a = os.path.join(base, "unison-a")
        self.b = os.path.join(base, "unison-b")
        self.home = os.path.join(base, "unison-home")
        for d in (self.a, self.b, self.home):
            os.makedirs(d)

    def run(self):
        """One run A <-> B; returns (wall seconds, CPU seconds of the run, peak RSS MB)."""
        env = dict(os.environ, UNISON=self.home, HOME=self.home)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        p = subprocess.run([UNISON, self.a, self.b, "-batch", "-auto", "-silent", "-times", "-perms", "0",
                            "-confirmbigdeletes=false"],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if p.returncode != 0:
            raise BenchError(f"unison failed ({p.returncode}): {p.stdout.decode(errors='replace')[-800:]}")
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        return wall, cpu, after.ru_maxrss / 1024


def contents(n, kind, version=0):
    """n files' bytes: `text` (the main bench's lines, padded) or `random`, 4 KB plus one byte per
    version: an edit changes the size, which Unison's fast check needs to see an edit made within
    the second of its last run (same size, inode and whole-second mtime read as unchanged)."""
    if kind == "docs":
        return [bench.doc_content(i, version) for i in range(n)]
    size = 4096 + version
    if kind == "text":
        return [(bench.file_content(i, version) * 64)[:size] for i in range(n)]
    rng = random.Random(f"{n}-{version}")
    return [rng.randbytes(size) for _ in range(n)]


def write_files(root, data, only=None):
    made = set()
    for i in (range(len(data)) if only is None else only):
        d = os.path.join(root, f"d{i // bench.FILES_PER_DIR:04d}")
        if d not in made:
            os.makedirs(d, exist_ok=True)
            made.add(d)
        with open(os.path.join(root, bench.rel_path(i)), "wb") as f:
            f.write(data[i])


def wait_all(root, data, agents, timeout=300.0, before=None):
    """Until every file under root holds its bytes; returns perf_counter when the last one did.
    Polled by `stat` (the size it must have and, for a file `before` lists, other stat data than
    it had then: the agents, Syncthing and Unison all rename a whole file into place), the last
    written first and stopping at the first not yet in place, so a poll costs a stat or two; the
    bytes of every file are compared once, after the clock is read. The harness used to read each
    file (600 MB of photos) while the tool under test ran, on the same two cores, where Unison's
    run is timed with nothing reading beside it. A file whose bytes differ then is polled by
    content from there on, and the figure is the time it was found right."""
    deadline = time.perf_counter() + timeout
    paths = [os.path.join(root, bench.rel_path(i)) for i in range(len(data))]

    def in_place(i):
        sig = stat_signature(paths[i])
        return sig is not None and sig[1] == len(data[i]) and (before is None or sig != before[i])

    order = list(range(len(data) - 1, -1, -1))
    k = 0
    wrong = []
    while True:
        while k < len(order) and in_place(order[k]):
            k += 1
        wrong = [i for i in wrong if not bench.holds(paths[i], data[i])]
        now = time.perf_counter()
        if k == len(order):
            wrong += [i for i in order if not bench.holds(paths[i], data[i])]
            order, k = [], 0
            if not wrong:
                return now
        if now > deadline:
            left = len(order) - k + len(wrong)
            raise BenchError(f"{root}: {left} of {len(data)} files without their bytes after {timeout:.0f} s")
        bench.check_running(agents)
        time.sleep(0.005)


def stat_signature(path):
    """(inode, size, mtime, ctime) of the file at path; None when it is absent."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def signatures(root, n):
    """The stat data of root's first n bench files (None for an absent one), for `wait_all`."""
    return [stat_signature(os.path.join(root, bench.rel_path(i))) for i in range(n)]


def cpu_of(agent):
    agent.sample_usage()
    return agent.stats.get("cpu_s", float("nan"))


def same_tree(a, b):
    p = subprocess.run(["diff", "-r", "-q", a, b], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if p.returncode != 0:
        raise BenchError(f"{a} and {b} differ: {p.stdout.decode(errors='replace')[:500]}")


def agents_take(syncagent, base, phase, agents, data):
    """A phone/watch pair of agents, started, then `data` written on the phone: (seconds from the
    last write until the watch holds every byte, the watch's CPU meanwhile, its peak RSS in MB, the
    phone, the watch), both still running and converged."""
    phone, watch = bench.make_pair(syncagent, base, phase, agents)
    # What the row or round before left unwritten (the 100k row's removal: minutes of journal work)
    # is written out first, its journal checkpointed, untimed, as before Unison's and rsync's runs:
    # none pays for it.
    bench.checkpoint_journal(base)
    phone.start()
    watch.start()
    wait_running(phone)
    wait_running(watch)
    cpu0 = cpu_of(watch)
    write_files(phone.data, data)
    t_last = time.perf_counter()
    t_done = wait_all(watch.data, data, (phone, watch))
    bench.wait_converged(phone, watch, timeout=bench.COMMIT_TIMEOUT_S)
    return t_done - t_last, cpu_of(watch) - cpu0, watch.stats.get("peak_rss_mb") or float("nan"), phone, watch


def stop_and_compare(phone, watch):
    phone.stop()
    watch.stop()
    same_tree(phone.data, watch.data)


def unison_take(base, data):
    """A fresh Unison pair under `base`, `data` written into its A side, one run: (the pair, wall
    seconds, CPU seconds, peak RSS MB), both sides checked equal."""
    u = UnisonPair(base)
    bench.checkpoint_journal(base)  # as before the agents' run (agents_take)
    write_files(u.a, data)
    wall, cpu, rss = u.run()
    same_tree(u.a, u.b)
    return u, wall, cpu, rss


def bench_bulk_pair(syncagent, tmp, rows, notes, agents, n, kind):
    """n new files, then n modified, through agents and through Unison (the documents: `ROUNDS`
    rounds in turn, medians)."""
    label = f"{n // 1000}k" if n >= 1000 else str(n)
    new = contents(n, kind)
    mod = contents(n, kind, version=1)
    # Every kind in rounds: one round of 4 KB files judged 1.38x rsync in one run and 1.53x in the
    # run before, the agents and rsync each moving by a tenth from one minute to the next.
    rounds = ROUNDS
    a_new, a_cpu, a_rss, a_mod, u_new, u_cpu, u_rss, u_mod, r_new, r_mod = ([] for _ in range(10))
    s_new = s_mod = s_cpu = None
    for k in range(rounds):
        base = os.path.join(tmp, f"peers-{kind}-{n}-r{k}")
        os.makedirs(base)
        t, cpu, rss, phone, watch = agents_take(syncagent, base, f"peers-{kind}-r{k}", agents, new)
        a_new.append(t), a_cpu.append(cpu), a_rss.append(rss)
        before = signatures(watch.data, n)
        write_files(phone.data, mod)
        t_last = time.perf_counter()
        t_done = wait_all(watch.data, mod, (phone, watch), before=before)
        a_mod.append(t_done - t_last)
        bench.wait_converged(phone, watch, timeout=bench.COMMIT_TIMEOUT_S)
        stop_and_compare(phone, watch)

        u, t, cpu, rss = unison_take(base, new)
        u_new.append(t), u_cpu.append(cpu), u_rss.append(rss)
        time.sleep(1.1)  # and a second later, as a user's edit would be
        write_files(u.a, mod)
        u_mod.append(u.run()[0])
        same_tree(u.a, u.b)
        t_new, t_mod = rsync_take(base, new, mod)
        r_new.append(t_new), r_mod.append(t_mod)
        if kind != "docs" and k == 0:  # Syncthing on documents: known from the 4 KB rows, and it would add minutes
            s_new, s_mod, s_cpu, s_rss = syncthing_bulk(base, new, mod)
        bench.cleanup(base)
    what = "documents (1-100 KB, 9 in 10 text)" if kind == "docs" else f"4 KB files, {kind}"
    rows.append(row(f"{label} new {what}", median(a_new), median(u_new), median(r_new), s_new,
                    {"Unison": 1.0, "rsync -a": 1.5, "Syncthing": 1.0}))
    rows.append(row(f"{label} modified {what}", median(a_mod), median(u_mod), median(r_mod), s_mod, {"Unison": 1.0, "Syncthing": 1.0}))
    rows.append(row(f"receiving CPU, {label} new {kind}", median(a_cpu), median(u_cpu), None, s_cpu, {"Unison": 1.0, "Syncthing": 1.0}))
    notes.append(f"{label} {kind}: "
                 + (f"medians of {rounds} rounds (new: {spread('agents', a_new)}; {spread('Unison', u_new)}; "
                    f"modified: {spread('agents', a_mod)}; {spread('Unison', u_mod)}); " if rounds > 1 else "")
                 + f"watch agent peak RSS {max(a_rss):.0f} MB, Unison peak RSS {max(u_rss):.0f} MB"
                 + (f", receiving Syncthing {s_rss:.0f} MB" if s_new is not None else ", Syncthing not run")
                 + "; agent and Syncthing times from the last write on the sending side until the other holds every byte")


def median(values):
    return bench.median(values)


def spread(name, values):
    return f"{name} " + "/".join(bench.fmt_time(v) for v in values)


# The 10k and photos rows run this many rounds, each tool once a round in turn, and print
# each tool's median: on this kind of machine one run of the same tool on the same files varied
# 1.8x from one minute to the next (disk writeback), more than the gaps these rows judge.
ROUNDS = max(1, int(os.environ.get("PEERS_ROUNDS", "3")))


def bench_photos(syncagent, tmp, rows, notes, agents, n):
    """n new photos of 2-5 MB random bytes (incompressible, big), through agents, one Unison run
    and `rsync -a`, `ROUNDS` times in turn (medians); Syncthing is left out (its 1 s watcher delay
    and block hashing are known from the 4 KB rows, and it would add a minute)."""
    rng = random.Random(f"photos-{n}")
    data = [rng.randbytes(rng.randint(2_000_000, 5_000_000)) for _ in range(n)]
    a_new, a_cpu, a_rss, u_new, u_cpu, u_rss, r_new = [], [], [], [], [], [], []
    for k in range(ROUNDS):
        base = os.path.join(tmp, f"peers-photos-{n}-r{k}")
        os.makedirs(base)
        t, cpu, rss, phone, watch = agents_take(syncagent, base, f"peers-photos-r{k}", agents, data)
        stop_and_compare(phone, watch)
        a_new.append(t), a_cpu.append(cpu), a_rss.append(rss)
        _, t, cpu, rss = unison_take(base, data)
        u_new.append(t), u_cpu.append(cpu), u_rss.append(rss)
        r_new.append(rsync_take(base, data)[0])
        bench.cleanup(base)
    total = sum(map(len, data)) / 1e6
    rows.append(row(f"{n} new photos (2-5 MB, {total:.0f} MB)", median(a_new), median(u_new), median(r_new), None,
                    {"Unison": 0.7, "rsync -a": 2.0}))
    rows.append(row(f"receiving CPU, {n} new photos", median(a_cpu), median(u_cpu), None, None, {"Unison": 1.0}))
    notes.append(f"{n} photos: medians of {ROUNDS} rounds ({spread('agents', a_new)}; {spread('Unison', u_new)}; "
                 f"{spread('rsync', r_new)}); watch agent peak RSS {max(a_rss):.0f} MB, Unison peak RSS {max(u_rss):.0f} MB; "
                 f"Syncthing not run for this row")


def syncthing_pair(base):
    """A connected Syncthing pair; a second try on fresh ports when the first does not connect
    (seen once: two instances on loopback that never found each other within 60 s)."""
    for attempt in (1, 2):
        try:
            home = os.path.join(base, f"st{attempt}")
            os.makedirs(home, exist_ok=True)
            return syncthing.SyncthingPair(home)
        except syncthing.SyncthingError as e:
            if attempt == 2:
                raise BenchError(f"Syncthing: {e} (twice, on fresh ports)")
            log(f"    Syncthing: {e}; trying once more on fresh ports")


def syncthing_bulk(base, new, mod):
    """The same new then modified files through a Syncthing pair: (new s, modified s, receiving CPU s,
    receiving peak RSS MB)."""
    pair = syncthing_pair(base)
    try:
        cpu0, _ = pair.b.usage()
        write_files(pair.a.data, new)
        t_last = time.perf_counter()
        s_new = wait_all(pair.b.data, new, ()) - t_last
        pair.wait(lambda: pair.idle(pair.a) and pair.idle(pair.b), 300, "Syncthing did not settle after the new files")
        cpu1, _ = pair.b.usage()
        before = signatures(pair.b.data, len(mod))
        write_files(pair.a.data, mod)
        t_last = time.perf_counter()
        s_mod = wait_all(pair.b.data, mod, (), before=before) - t_last
        pair.wait(lambda: pair.idle(pair.a) and pair.idle(pair.b), 300, "Syncthing did not settle after the edits")
        _, rss = pair.b.usage()
        syncthing.same_tree(pair.a.data, pair.b.data)
        return s_new, s_mod, cpu1 - cpu0, rss
    except syncthing.SyncthingError as e:
        raise BenchError(f"Syncthing: {e}")
    finally:
        pair.stop()


def bench_first_sync(syncagent, tmp, rows, notes, agents, n):
    """An n-file tree on the phone (committed), then an empty watch starts: until it holds all."""
    label = f"{n // 1000}k"
    base = os.path.join(tmp, f"peers-first-{n}")
    os.makedirs(base)
    phone, watch = bench.make_pair(syncagent, base, "peers-first", agents)
    data = [bench.file_content(i) for i in range(n)]
    write_files(phone.data, data)
    phone.start()
    bench.wait_tree_count(phone, n)
    phone.wait_idle()
    bench.checkpoint_journal(base)
    t0 = time.perf_counter()
    watch.start()
    t1 = wait_all(watch.data, data, (phone, watch))
    a_time = t1 - t0
    bench.wait_converged(phone, watch, timeout=bench.COMMIT_TIMEOUT_S)
    phone.stop()
    watch.stop()  # both sample their usage first
    a_rss = max(phone.stats.get("peak_rss_mb") or 0, watch.stats.get("peak_rss_mb") or 0)
    u = UnisonPair(base)
    write_files(u.a, data)
    bench.checkpoint_journal(base)
    u_time, _, u_rss = u.run()
    same_tree(u.a, u.b)
    shutil.rmtree(u.a, ignore_errors=True)
    shutil.rmtree(u.b, ignore_errors=True)
    r_time, _ = rsync_take(base, data)
    bench.cleanup(base)
    rows.append(row(f"{label}-file first sync to an empty peer", a_time, u_time, r_time, None, {"Unison": 0.3, "rsync -a": 1.5}))
    rows.append(row(f"  peak RSS of the larger agent", a_rss, None, None, None, {"MB": 48}, shown="mb"))
    notes.append(f"{label} first sync: agent from the watch's start until it holds every byte; peak RSS "
                 f"{a_rss:.0f} MB (the larger agent), Unison {u_rss:.0f} MB")


def bench_one_file(syncagent, tmp, rows, notes, agents, files=1000, changes=20):
    base = os.path.join(tmp, "peers-one")
    os.makedirs(base)
    phone, watch = bench.make_pair(syncagent, base, "peers-one", agents)
    data = [bench.file_content(i) for i in range(files)]
    write_files(phone.data, data)
    phone.start()
    watch.start()
    wait_all(watch.data, data, (phone, watch))
    bench.wait_converged(phone, watch, timeout=bench.COMMIT_TIMEOUT_S)
    u = UnisonPair(base)
    write_files(u.a, data)
    u.run()
    time.sleep(1.1)  # see bench_bulk_pair: Unison's fast check and whole-second mtimes
    a_lat, u_lat = [], []
    for k in range(changes):
        i = (k * 37 + 11) % files
        want = bench.file_content(i, k + 1) + b"+" * (k + 1)  # a new size: see contents()
        t0 = time.perf_counter()
        with open(os.path.join(phone.data, bench.rel_path(i)), "wb") as f:
            f.write(want)
        a_lat.append(bench.wait_bytes(os.path.join(watch.data, bench.rel_path(i)), want, agents=(phone, watch)) - t0)
        bench.wait_settled(phone, watch)
        with open(os.path.join(u.a, bench.rel_path(i)), "wb") as f:
            f.write(want)
        u_lat.append(u.run()[0])
        if not bench.holds(os.path.join(u.b, bench.rel_path(i)), want):
            raise BenchError(f"unison did not copy {bench.rel_path(i)}")
    phone.stop()
    watch.stop()
    s_lat = []
    pair = syncthing_pair(base)
    try:
        write_files(pair.a.data, data)
        wait_all(pair.b.data, data, ())
        pair.wait(lambda: pair.idle(pair.a) and pair.idle(pair.b), 120, "Syncthing did not settle")
        for k in range(5):  # ~1-2 s each (its watcher waits at least 1 s): 5 samples
            i = (k * 37 + 11) % files
            want = bench.file_content(i, k + 1) + b"+" * (k + 1)
            t0 = time.perf_counter()
            with open(os.path.join(pair.a.data, bench.rel_path(i)), "wb") as f:
                f.write(want)
            s_lat.append(bench.wait_bytes(os.path.join(pair.b.data, bench.rel_path(i)), want) - t0)
            pair.wait(lambda: pair.idle(pair.a) and pair.idle(pair.b), 120, "Syncthing did not settle")
    except syncthing.SyncthingError as e:
        raise BenchError(f"Syncthing: {e}")
    finally:
        pair.stop()
    bench.cleanup(base)
    rows.append(row(f"1 file -> peer p50, {files // 1000}k-file tree", bench.pct(a_lat, 50), bench.pct(u_lat, 50),
                    None, bench.pct(s_lat, 50), {"Unison": 1.0, "Syncthing": 1.0}))
    # Unison's figure is one run started after the write: no detection, no wait. Ours is from the
    # write: a lone save waits 5 ms after its close, not the debounce (README "What gets committed").


def wait_running(agent, timeout=60):
    """Until a fresh agent (no commit yet) answers running with nothing pending."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        bench.check_running([agent])
        s = agent.status()
        if s.get("running") and s.get("pending") == 0:
            return
        time.sleep(0.05)
    raise BenchError(f"{agent.name}: not running within {timeout} s")


def run(main_module, syncagent, tmp, agents):
    """Runs every peer row; returns (rows, notes, version line)."""
    global bench
    bench = main_module
    version = ensure_unison() + ", " + ensure_rsync()
    try:
        version += ", " + syncthing.ensure_syncthing()
    except (syncthing.SyncthingError, subprocess.CalledProcessError) as e:
        raise BenchError(f"Syncthing: {e}")
    rows, notes = [], []
    scale = bench.SCALE
    n10 = max(100, int(10_000 * scale))
    n100 = max(1000, int(100_000 * scale))
    # PEERS_ROWS=photos,docs,... runs only those rows (one, text, random, docs, first, photos).
    picked = set(filter(None, os.environ.get("PEERS_ROWS", "").split(",")))

    def wanted(name):
        return not picked or name in picked

    if wanted("one"):
        log("peers 1/4: 1 file in a 1k-file tree, agents against one Unison run")
        bench_one_file(syncagent, tmp, rows, notes, agents)
    for kind in ("text", "random", "docs"):
        if not wanted(kind):
            continue
        log(f"peers: {n10} new then modified files ({kind}), agents against one Unison run and rsync -a each")
        bench_bulk_pair(syncagent, tmp, rows, notes, agents, n10, kind)
    if wanted("first"):
        log(f"peers 4/4: {n100}-file first sync to an empty peer")
        bench_first_sync(syncagent, tmp, rows, notes, agents, n100)
    # Last: Unison's peak RSS is read as the largest of any child so far (RUSAGE_CHILDREN), and
    # this row's is the largest.
    n_photos = max(20, int(300 * scale))
    if wanted("photos"):
        log(f"peers: {n_photos} new photos of 2-5 MB, agents against one Unison run and rsync -a")
        bench_photos(syncagent, tmp, rows, notes, agents, n_photos)
    notes.append("Syncthing: two instances on loopback, file watcher at its shortest delay (1 s), discovery and relays "
                 "off; its 100k-file first sync is not run here (224 s in PEERS.md: it would double the run)")
    return rows, notes, version


def print_table(rows, notes, version):
    print()
    print(f"syncagent vs {version} (one run of `unison A B -batch -auto` or `rsync -a A/ B/` after the writes; "
          f"the agents run all along, debounce {bench.DEBOUNCE_MS} ms)")
    print()
    names = ["Unison", "rsync -a", "Syncthing"]
    print(f"  {'workload':<46}{'syncagent':>11}" + "".join(f"{n:>11}{'ratio':>7}" for n in names) + "  target")
    for r in rows:
        a = r["ours"]
        if r["shown"] == "mb":
            limit = r["targets"]["MB"]
            cols = "".join(f"{'-':>11}{'-':>7}" for _ in names)
            print(f"  {r['name']:<46}{a:>8.0f} MB{cols}  <= {limit} MB {'met' if a <= limit else 'MISSED'}")
            continue
        cols, verdicts = "", []
        for n in names:
            p = r["peers"].get(n)
            if p is None:
                cols += f"{'-':>11}{'-':>7}"
                continue
            cols += f"{bench.fmt_time(p):>11}{a / p:>7.2f}"
            t = r["targets"].get(n)
            if t is not None:
                verdicts.append(f"<= {t:g}x {n} {'met' if a / p <= t else 'MISSED'}")
        print(f"  {r['name']:<46}{bench.fmt_time(a):>11}{cols}  {'; '.join(verdicts) or '-'}")
    for n in notes:
        print(f"  note: {n}")
