#!/usr/bin/env python3
"""Long-run resource check: memory, file descriptors and threads stay flat while changes stream in.

The workload of issue 7, as a user would see it: two agents, phone <-> watch, on a tree of --files
files; one small change on the phone every --interval-ms and a `syncagent status --json` on both after
each; optionally (--dead-peer) a third peer in both configs that never answers (a TCP address nobody
listens on inside 127.0.0.0/8, so every retry fails). Every --sample commits it waits until the watch
holds the phone's last write (so the figures are for synced commits), then reads each agent's
/proc/<pid>/status (RssAnon, VmRSS, VmHWM, Threads) and counts /proc/<pid>/fd.

At the end it checks, for each agent:
  * growth of RssAnon over the second half of the run <= --max-growth-mb-per-1000 per 1,000 commits
    (the level-off check; the first half is warm-up: caches fill, the heap finds its size);
  * peak VmRSS <= --max-rss-mb;
  * open file descriptors and threads at the end <= the second-half starting figure + a small slack
    (--fd-slack, --thread-slack): flat, not growing with commits or retries.

    python3 e2e/memory.py --binary .build/release/syncagent --commits 10000 --files 1000 --dead-peer

Prints one table row per sample and a verdict line per agent; exit 0 when every bound held, 1 when
one did not (the temp dir is kept), 2 on bad usage. Python 3 standard library only.
"""

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time


WRAP = []


def proc_status(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            v = v.strip()
            if k in ("RssAnon", "VmRSS", "VmHWM"):
                out[k] = int(v.split()[0]) / 1024.0  # MB
            elif k == "Threads":
                out[k] = int(v)
    out["fds"] = len(os.listdir("/proc/%d/fd" % pid))
    return out


# Libraries an agent must not load: Foundation with its internationalization and ICU cost each agent
# ~8 MB resident; the agent uses FoundationEssentials only (see NO_FOUNDATION in the Makefile).
UNWANTED_LIBRARIES = ("libFoundation.so", "libFoundationInternationalization.so", "lib_FoundationICU.so")


def unwanted_libraries(pid):
    with open("/proc/%d/maps" % pid) as f:
        mapped = {line.split()[-1].rsplit("/", 1)[-1] for line in f if "/" in line}
    return sorted(mapped.intersection(UNWANTED_LIBRARIES))


def free_port():
    """A TCP port on 127.0.0.1 that nobody listens on: connections are refused at once."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Agent:
    def __init__(self, binary, root, name):
        self.binary = binary
        self.name = name
        self.dir = os.path.join(root, name)
        self.data = os.path.join(self.dir, "data")
        self.state = os.path.join(self.dir, "state")
        self.store = os.path.join(self.state, "store.git")
        self.config = os.path.join(self.dir, "syncagent.toml")
        self.proc = None
        self.pid = None
        self.log = os.path.join(self.dir, "run.log")

    def init(self, peers, extra):
        os.makedirs(self.dir, exist_ok=True)
        cmd = [self.binary, "init", "--device", self.name, "--data", self.data, "--state", self.state,
               "--config", self.config]
        for name, url in peers:
            cmd += ["--peer", "%s=%s" % (name, url)]
        r = subprocess.run(cmd, capture_output=True, timeout=60)
        if r.returncode != 0:
            sys.exit("init %s failed: %s" % (self.name, (r.stdout + r.stderr).decode(errors="replace")))
        with open(self.config) as f:
            text = f.read()
        # As a user would: uncomment the [watch] keys and set them.
        text = text.replace("# debounce_ms = 200", "debounce_ms = %d" % extra[0])
        text = text.replace("# max_delay_ms = 2000", "max_delay_ms = %d" % extra[1])
        # The peer that never answers is retried every second (its backoff is capped by
        # poll_seconds), so retries are many: nothing may pile up per retry.
        text = text.replace('name = "tablet"\nurl', 'name = "tablet"\npoll_seconds = 1\nurl')
        if extra[2] is not None:
            text += "\n[store]\ncache_mb = %d\n" % extra[2]
        with open(self.config, "w") as f:
            f.write(text)

    def start(self):
        err = open(self.log, "wb")
        wrap = [w.replace("{dir}", self.dir) for w in WRAP]
        self.proc = subprocess.Popen(wrap + [self.binary, "run", "--config", self.config, "--log-level", "notice"],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
        err.close()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                sys.exit("agent %s exited at start-up; see %s" % (self.name, self.log))
            st = self.status()
            if st and st.get("running") and (st.get("pid") == self.proc.pid or WRAP):
                self.pid = st.get("pid")  # the agent itself, also when a profiler wraps it
                return
            time.sleep(0.1)
        sys.exit("agent %s did not report running within 60 s" % self.name)

    def status(self):
        r = subprocess.run([self.binary, "status", "--json", "--config", self.config],
                           capture_output=True, timeout=60)
        if r.returncode != 0:
            return None
        try:
            return json.loads(r.stdout)
        except ValueError:
            return None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def commits(self):
        r = subprocess.run(["git", "--git-dir", self.store, "rev-list", "--count", "main"],
                           capture_output=True, timeout=120)
        return int(r.stdout.strip() or 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", required=True)
    ap.add_argument("--commits", type=int, default=2000, help="changes made on the phone (one commit each)")
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--interval-ms", type=int, default=60)
    ap.add_argument("--debounce-ms", type=int, default=20)
    ap.add_argument("--sample", type=int, default=250, help="commits between samples")
    ap.add_argument("--dead-peer", action="store_true", help="a third peer that never answers, in both configs")
    ap.add_argument("--no-status", action="store_true", help="no `status --json` after each change")
    ap.add_argument("--max-growth-mb-per-1000", type=float, default=0.4)
    ap.add_argument("--max-rss-mb", type=float, default=64)
    ap.add_argument("--fd-slack", type=int, default=8)
    ap.add_argument("--thread-slack", type=int, default=4)
    ap.add_argument("--sync-timeout", type=float, default=120)
    ap.add_argument("--keep", action="store_true", help="keep the temp dir even when every bound held")
    ap.add_argument("--cache-mb", type=int, default=None, help="[store] cache_mb in both configs (default: the agent's)")
    ap.add_argument("--wrap", default="", help="a profiler to run each agent under, e.g. 'heaptrack -o {dir}/heaptrack'")
    args = ap.parse_args()
    WRAP.extend(args.wrap.split())
    if args.commits < 2 * args.sample:
        sys.exit("--commits must be at least twice --sample")

    root = os.path.realpath(tempfile.mkdtemp(prefix="syncagent-memory.", dir=os.environ.get("TMPDIR", "/tmp")))
    home = os.path.join(root, "home")
    os.makedirs(home)
    os.environ.update({"HOME": home, "XDG_CONFIG_HOME": os.path.join(home, ".config"),
                       "XDG_STATE_HOME": os.path.join(home, ".local", "state"),
                       "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "LC_ALL": "C"})
    phone, watch = Agent(args.binary, root, "phone"), Agent(args.binary, root, "watch")
    dead = []
    if args.dead_peer:
        dead = [("tablet", "git://127.0.0.1:%d/tablet.git" % free_port())]
    extra = (args.debounce_ms, max(200, args.debounce_ms * 5), args.cache_mb)
    phone.init([("watch", watch.store)] + dead, extra)
    watch.init([("phone", phone.store)] + dead, extra)
    # The tree: --files files in 10 directories, written before the agents start (start-up commit).
    for i in range(args.files):
        d = os.path.join(phone.data, "dir%02d" % (i % 10))
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "file%05d.txt" % i), "w") as f:
            f.write("file %d, initial\n" % i)
    os.makedirs(watch.data, exist_ok=True)
    agents = [phone, watch]
    ok = False
    try:
        for a in agents:
            a.start()

        def synced(i):
            """The watch holds the phone's write number i."""
            rel = target(i)
            try:
                with open(os.path.join(watch.data, rel)) as f:
                    return f.read() == body(i)
            except OSError:
                return False

        def target(i):
            n = i % args.files
            return os.path.join("dir%02d" % (n % 10), "file%05d.txt" % n)

        def body(i):
            return "file %d, change %d\n" % (i % args.files, i)

        def wait_synced(i):
            deadline = time.monotonic() + args.sync_timeout
            while not synced(i):
                for a in agents:
                    if not a.alive():
                        raise RuntimeError("agent %s died; see %s" % (a.name, a.log))
                if time.monotonic() > deadline:
                    raise RuntimeError("the watch did not receive change %d within %d s" % (i, args.sync_timeout))
                time.sleep(0.05)

        # Both agents hold the whole tree before the first sample.
        deadline = time.monotonic() + args.sync_timeout
        while not os.path.exists(os.path.join(watch.data, target(args.files - 1))):
            if time.monotonic() > deadline:
                raise RuntimeError("the watch did not receive the initial tree within %d s" % args.sync_timeout)
            time.sleep(0.1)

        samples = []   # (changes, elapsed, {name: proc_status})
        t0 = time.monotonic()

        def sample(i):
            if i:
                wait_synced(i)
            row = {a.name: proc_status(a.pid) for a in agents}
            samples.append((i, time.monotonic() - t0, row))
            print("%6d changes %6.0f s | " % (i, time.monotonic() - t0) + " | ".join(
                "%s anon %5.1f MB rss %5.1f MB fds %3d thr %2d" % (
                    a.name, row[a.name]["RssAnon"], row[a.name]["VmRSS"], row[a.name]["fds"], row[a.name]["Threads"])
                for a in agents), flush=True)

        sample(0)
        for i in range(1, args.commits + 1):
            with open(os.path.join(phone.data, target(i)), "w") as f:
                f.write(body(i))
            if not args.no_status:
                for a in agents:
                    if a.status() is None:
                        raise RuntimeError("`status --json` on %s failed" % a.name)
            time.sleep(args.interval_ms / 1000.0)
            if i % args.sample == 0:
                sample(i)
        for a in agents:
            if not a.alive():
                raise RuntimeError("agent %s died; see %s" % (a.name, a.log))
        commits = {a.name: a.commits() for a in agents}
        print("commits on main: " + ", ".join("%s %d" % kv for kv in commits.items()), flush=True)

        # Verdict: the second half is the level-off window.
        mid = next(s for s in samples if s[0] >= args.commits // 2)
        last = samples[-1]
        span = (last[0] - mid[0]) / 1000.0
        failures = []
        for a in agents:
            m, l = mid[2][a.name], last[2][a.name]
            growth = l["RssAnon"] - m["RssAnon"]
            peak = max(s[2][a.name]["VmHWM"] for s in samples)
            per1000 = growth / span if span else 0
            line = ("%s: RssAnon %.1f -> %.1f MB over the last %d changes (%+.2f MB per 1,000; bound %.2f), "
                    "peak RSS %.1f MB (bound %.0f), fds %d -> %d, threads %d -> %d" % (
                        a.name, m["RssAnon"], l["RssAnon"], last[0] - mid[0], per1000,
                        args.max_growth_mb_per_1000, peak, args.max_rss_mb, m["fds"], l["fds"],
                        m["Threads"], l["Threads"]))
            print(line, flush=True)
            if per1000 > args.max_growth_mb_per_1000:
                failures.append("%s: RssAnon grew %.2f MB per 1,000 commits over the second half" % (a.name, per1000))
            if peak > args.max_rss_mb:
                failures.append("%s: peak RSS %.1f MB is over %.0f MB" % (a.name, peak, args.max_rss_mb))
            if l["fds"] > m["fds"] + args.fd_slack:
                failures.append("%s: open file descriptors grew from %d to %d" % (a.name, m["fds"], l["fds"]))
            if l["Threads"] > m["Threads"] + args.thread_slack:
                failures.append("%s: threads grew from %d to %d" % (a.name, m["Threads"], l["Threads"]))
        for a in agents:
            loaded = unwanted_libraries(a.pid)
            if loaded:
                failures.append("%s: loaded %s (build with `make build`, which leaves Foundation out)" % (a.name, ", ".join(loaded)))
        for f in failures:
            print("FAIL " + f, flush=True)
        ok = not failures
    except RuntimeError as e:
        print("FAIL %s" % e, flush=True)
    finally:
        for a in agents:
            a.stop()
        if ok and not args.keep:
            shutil.rmtree(root, ignore_errors=True)
        else:
            print("kept %s" % root, flush=True)
    print("memory: %s" % ("every bound held" if ok else "FAILED"), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
