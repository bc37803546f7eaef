#!/usr/bin/env python3
"""Many devices through one hub: N agents meet through one bare repository by path (`hub = true`,
`poll_seconds = 1`, debounce 100 ms, no direct peers). Once they agree, each device writes 3 small
new files at once; timed from the burst until (1) every file is on every disk and (2) every device
holds the same `main` with nothing pending. Also the agents' CPU for the burst, the commits the burst
added to `main` and how much the hub grew.

    SYNCAGENT=.build/release/syncagent python3 bench/many.py 6 12 24 50

`make bench` runs it for 6, 12, 24, 50 and 100 devices (BENCH_ONLY=many), and `run_churn` for the
churn row (BENCH_ONLY=churn: 10 devices, each rewriting a file every 3 s for 10 minutes)."""
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402

SETTLE_TIMEOUT_S = float(os.environ.get("MANY_TIMEOUT", "300"))
# How long the idle CPU is sampled before the burst (a measurement window, not a wait for anything).
IDLE_WINDOW_S = 5.0


def cpu_seconds(agent):
    try:
        with open(f"/proc/{agent.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def mains(agents):
    out = []
    for a in agents:
        try:
            out.append(bench.read_ref(a.store))
        except Exception:
            out.append(None)
    return out


def disk_bytes(path):
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                pass
    return total


def holds_all(agents, names):
    for a in agents:
        for n in names:
            if not os.path.exists(os.path.join(a.data, n)):
                return False
    return True


def agreed(agents, seen=None):
    """Every device's main is the same commit and nothing is pending. `seen` (a list) gets the
    moment the mains were read equal: asking 50 agents for their status takes a second or two of
    this busy machine, which is the bench's time, not the agents'."""
    t = time.perf_counter()
    heads = mains(agents)
    if heads[0] is None or any(h != heads[0] for h in heads):
        return False
    if not all(s.get("pending") == 0 for s in (a.status() for a in agents)):
        return False
    if mains(agents) != heads:
        return False  # something moved while the statuses were asked: not settled then
    if seen is not None:
        seen.append(t)
    return True


def wait_for(cond, agents, what, timeout=SETTLE_TIMEOUT_S):
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        for a in agents:
            if a.proc.poll() is not None:
                raise bench.BenchError(a.unexpected_exit())
        if cond():
            return time.perf_counter()
        time.sleep(0.05)
    heads = mains(agents)
    distinct = len(set(heads))
    raise bench.BenchError(f"{len(agents)} devices: {what} not within {timeout:.0f} s ({distinct} different mains)")


def make_fleet(syncagent, base, n, agents_out, label, mesh=False):
    """N agents, each with the bare repository `base`/hub.git as its hub (by path), not started.
    With `mesh`, no hub: every agent has every other's store as a path peer (a phone and a watch)."""
    hub = os.path.join(base, "hub.git")
    os.makedirs(base)
    bench.git(["init", "-q", "--bare", hub])
    agents = []
    names = [f"d{i:02d}" for i in range(n)]
    for i in range(n):
        name = names[i]
        d = os.path.join(base, name)
        os.makedirs(d)
        if mesh:
            others = [(o, os.path.join(base, o, "state", "store.git")) for o in names if o != name]
            a = bench.Agent(syncagent, d, f"{label}/{name}", device=name, peers=others)
            agents.append(a)
            agents_out.append(a)
            continue
        a = bench.Agent(syncagent, d, f"{label}/{name}", device=name, peers=[("hub", hub)])
        with open(a.config) as f:
            text = f.read()
        text = text.replace('name = "hub"\n', 'name = "hub"\nhub = true\n', 1)
        text = text.replace("# poll_seconds = 30\n", "poll_seconds = 1\n", 1)
        text = text.replace(f"debounce_ms = {bench.DEBOUNCE_MS}\n", "debounce_ms = 100\n", 1)
        if "hub = true" not in text or "\npoll_seconds = 1\n" not in text or "debounce_ms = 100\n" not in text:
            raise bench.BenchError(f"{a.config}: could not set hub = true, poll_seconds = 1, debounce_ms = 100")
        with open(a.config, "w") as f:
            f.write(text)
        agents.append(a)
        agents_out.append(a)
    return hub, agents


def run_one(syncagent, tmp, n, agents_out):
    base = os.path.join(tmp, f"many-{n}")
    hub, agents = make_fleet(syncagent, base, n, agents_out, f"many{n}")
    with open(os.path.join(agents[0].data, "start.txt"), "w") as f:
        f.write("the family's first file\n")
    for a in agents:
        a.start()
    wait_for(lambda: holds_all(agents, ["start.txt"]) and agreed(agents), agents, "the first agreement")
    # Idle: every device agrees and nothing changes (each still polls the hub every second).
    idle0, t_idle = sum(cpu_seconds(a) for a in agents), time.perf_counter()
    time.sleep(IDLE_WINDOW_S)
    idle_cpu = (sum(cpu_seconds(a) for a in agents) - idle0) / (time.perf_counter() - t_idle) / n
    before_commits = agents[0].commits()
    before_hub = disk_bytes(hub)
    # The fleet's set-up and the run before (100 stores removed) leave the file system work the
    # burst's first fsyncs would pay: done now, untimed (bench.checkpoint_journal).
    bench.checkpoint_journal(base)
    cpu0 = sum(cpu_seconds(a) for a in agents)
    names = []
    if os.environ.get("MANY_PROFILE"):
        prof = subprocess.Popen(["perf", "record", "-F", "499", "-a", "-g", "-o", os.environ["MANY_PROFILE"]],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    tracer = None
    if os.environ.get("MANY_STRACE"):  # MANY_STRACE=FILE: every syscall of the middle device through the burst
        tracer = subprocess.Popen(["strace", "-f", "-tt", "-y", "-o", os.environ["MANY_STRACE"], "-p", str(agents[n // 2].proc.pid)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1)
    elif os.environ.get("MANY_PERF"):  # MANY_PERF=FILE: the middle device's profile (call graphs) through the burst
        tracer = subprocess.Popen(["perf", "record", "--call-graph", "dwarf,16384", "-F", os.environ.get("MANY_PERF_HZ", "499"), "-o", os.environ["MANY_PERF"],
                                   "-p", str(agents[n // 2].proc.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1)
    t0 = time.perf_counter()
    for a in agents:
        for k in range(3):
            rel = f"{a.name.split('/')[-1]}-{k}.txt"
            with open(os.path.join(a.data, rel), "w") as f:
                f.write(f"file {k} from {a.name}\n")
            names.append(rel)
    t_files = wait_for(lambda: holds_all(agents, names), agents, "every file on every disk") - t0
    seen = []
    wait_for(lambda: agreed(agents, seen), agents, "the same main everywhere")
    t_main = seen[-1] - t0
    cpu = sum(cpu_seconds(a) for a in agents) - cpu0
    if os.environ.get("MANY_PROFILE"):
        prof.send_signal(2)
        prof.wait()
    if tracer:
        tracer.send_signal(2)
        tracer.wait()
    commits = agents[0].commits() - before_commits
    grew = disk_bytes(hub) - before_hub
    for a in agents:
        a.stop()
    for a in agents:
        bench.verify_store(a.store, a.data, a.name)
    if not os.environ.get("MANY_KEEP"):
        shutil.rmtree(base, ignore_errors=True)
    return {"n": n, "idle_cpu": idle_cpu, "files_s": t_files, "main_s": t_main, "cpu_s": cpu, "commits": commits, "hub_bytes": grew}


def run_churn(syncagent, tmp, n, seconds, agents_out, period=3.0):
    """Churn: N devices through one hub on a path, each rewriting a file of its own every `period`
    seconds (the devices take turns, evenly spread) for `seconds`. Per minute: the changes made,
    how long each took to be on every other device (settle), the agents' CPU per change, the hub's
    size and one device's store size. Flat is the goal: the last minute costs what the second
    did (the first has the start in it)."""
    import threading
    mesh = os.environ.get("CHURN_MESH") == "1"  # CHURN_MESH=1: path peers, no hub (a phone and a watch: CHURN_DEVICES=2)
    base = os.path.join(tmp, f"churn-{n}")
    hub, agents = make_fleet(syncagent, base, n, agents_out, f"churn{n}", mesh=mesh)
    names = [a.name.split("/")[-1] for a in agents]
    for a, name in zip(agents, names):
        with open(os.path.join(a.data, f"{name}.txt"), "w") as f:
            f.write(f"{name} 0\n")
    for a in agents:
        a.start()
    wait_for(lambda: holds_all(agents, [f"{x}.txt" for x in names]) and agreed(agents), agents, "the first agreement")

    def version(a, name):
        try:
            with open(os.path.join(a.data, f"{name}.txt")) as f:
                parts = f.read().split()
            return int(parts[1]) if len(parts) == 2 and parts[0] == name else -1
        except (OSError, ValueError):
            return -1

    pending = []  # [t_write, writer index, version]
    settled = []  # (t_write, seconds)
    lock = threading.Lock()
    stop = threading.Event()

    def checker():
        while not stop.is_set() or pending:
            with lock:
                todo = list(pending)
            done = []
            for item in todo:
                t_w, i, v = item
                if all(version(b, names[i]) >= v for j, b in enumerate(agents) if j != i):
                    done.append(item)
                    settled.append((t_w, time.perf_counter() - t_w))
            with lock:
                for item in done:
                    pending.remove(item)
            if stop.is_set() and time.perf_counter() > stop_deadline:
                break
            time.sleep(0.01)

    stop_deadline = float("inf")
    watcher = threading.Thread(target=checker, daemon=True)
    watcher.start()
    t0 = time.perf_counter()
    minutes = max(1, int(round(seconds / 60)))
    marks = [(t0, sum(cpu_seconds(a) for a in agents), disk_bytes(hub), disk_bytes(agents[0].store))]
    k = 0
    # CHURN_PERF=FILE (CHURN_PERF_AT=S, default 120): the middle device's profile (call graphs) for 20 s
    # from S seconds into the churn.
    perf_at = t0 + float(os.environ.get("CHURN_PERF_AT", "120")) if os.environ.get("CHURN_PERF") else None
    while True:
        if perf_at is not None and time.perf_counter() >= perf_at:
            subprocess.Popen(["perf", "record", "--call-graph", "dwarf,16384", "-F", os.environ.get("MANY_PERF_HZ", "499"), "-o", os.environ["CHURN_PERF"],
                              "-p", str(agents[n // 2].proc.pid), "--", "sleep", "20"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            perf_at = None
        i, rnd = k % n, k // n
        due = t0 + rnd * period + i * period / n
        if due >= t0 + seconds:
            break
        while True:
            now = time.perf_counter()
            if now >= due:
                break
            if now >= marks[-1][0] + 60 and len(marks) <= minutes:
                marks.append((marks[-1][0] + 60, sum(cpu_seconds(a) for a in agents), disk_bytes(hub), disk_bytes(agents[0].store)))
                continue
            time.sleep(min(0.05, due - now))
        for a in agents:
            if a.proc.poll() is not None:
                raise bench.BenchError(a.unexpected_exit())
        v = rnd + 1
        with open(os.path.join(agents[i].data, f"{names[i]}.txt"), "w") as f:
            f.write(f"{names[i]} {v}\n")
        with lock:
            pending.append([time.perf_counter(), i, v])
        k += 1
    while len(marks) <= minutes:
        time.sleep(max(0.0, marks[-1][0] + 60 - time.perf_counter()))
        marks.append((marks[-1][0] + 60, sum(cpu_seconds(a) for a in agents), disk_bytes(hub), disk_bytes(agents[0].store)))
    stop_deadline = time.perf_counter() + SETTLE_TIMEOUT_S
    stop.set()
    watcher.join()
    if pending:
        raise bench.BenchError(f"churn, {n} devices: {len(pending)} change(s) never reached every device")
    wait_for(lambda: agreed(agents), agents, "the same main after the churn")
    for a in agents:
        a.stop()
    for a in agents:
        bench.verify_store(a.store, a.data, a.name)
    per_minute = []
    for m in range(minutes):
        start, cpu0, _, _ = marks[m]
        end, cpu1, hub1, store1 = marks[m + 1]
        times = sorted(s for t_w, s in settled if start <= t_w < end)
        per_minute.append({"minute": m + 1, "changes": len(times), "settle_p50": bench.median(times) if times else float("nan"),
                           "settle_max": times[-1] if times else float("nan"),
                           "cpu_per_change": (cpu1 - cpu0) / max(1, len(times)), "hub_bytes": hub1, "store_bytes": store1})
    if not os.environ.get("MANY_KEEP"):
        shutil.rmtree(base, ignore_errors=True)
    return {"n": n, "period": period, "minutes": per_minute, "hub_start": marks[0][2], "mesh": mesh}


def churn_table(result):
    lines = [f"  {'minute':>6} {'changes':>8} {'settle p50':>11} {'settle max':>11} {'CPU/change':>11} {'hub size':>9} {'d00 store':>10}"]
    for r in result["minutes"]:
        lines.append(f"  {r['minute']:>6} {r['changes']:>8} {r['settle_p50'] * 1e3:>8.0f} ms {r['settle_max'] * 1e3:>8.0f} ms"
                     f" {r['cpu_per_change'] * 1e3:>8.1f} ms {r['hub_bytes'] / 1e6:>6.2f} MB {r['store_bytes'] / 1e6:>7.2f} MB")
    return "\n".join(lines)


def table(results):
    lines = [f"  {'devices':>7} {'files everywhere':>17} {'same main':>10} {'agents CPU':>11} {'CPU/device':>11}"
             f" {'commits in main':>16} {'hub growth':>11} {'idle CPU/device':>16}"]
    for r in results:
        lines.append(f"  {r['n']:>7} {r['files_s']:>16.2f}s {r['main_s']:>9.2f}s {r['cpu_s']:>10.1f}s"
                     f" {r['cpu_s'] / r['n']:>10.2f}s {r['commits']:>16} {r['hub_bytes'] / 1e3:>9.0f}kB"
                     f" {r['idle_cpu'] * 100:>14.1f}%")
    return "\n".join(lines)


def main():
    syncagent = os.path.abspath(os.environ["SYNCAGENT"])
    counts = [int(x) for x in sys.argv[1:]] or [6, 12]
    tmp = tempfile.mkdtemp(prefix="syncagent-many.")
    results, agents = [], []
    try:
        for n in counts:
            bench.log(f"{n} devices through one hub: 3 new files each, at once")
            results.append(run_one(syncagent, tmp, n, agents))
            print(table(results[-1:]), flush=True)
    finally:
        for a in agents:
            a.kill()
    print()
    print("targets: the same main within a few seconds; CPU under 1 s per device; commits a small constant per device")
    print(table(results))
    if os.environ.get("MANY_KEEP"):
        print(f"kept {tmp} (agent logs: many-N/dNN/agent.log)")
    else:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
