"""10k new 4 KB files, phone -> watch, timed as `bench/peers.py` times its row, with each agent's CPU
and one `rsync -a` of the same files after each round: for looking at that row alone.

    TMPDIR=<a fresh ext4> SYNCAGENT=.build/release/syncagent ROUNDS=3 python3 bench/new_files.py

KIND=text|random (text), N (10000). PERF=watch|phone records `perf` on that agent in the first
round (into /tmp/perf-<agent>.data); with STRACE=1 it counts its syscalls (`strace -c`), with
STRACE=full it keeps every one (/tmp/strace-<agent>.txt)."""
import os, sys, subprocess, time, tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench, peers
peers.bench = bench
syncagent = os.environ["SYNCAGENT"]
tmp = os.environ.get("TMPDIR", "/tmp")
kind = os.environ.get("KIND", "text")
n = int(os.environ.get("N", "10000"))
rounds = int(os.environ.get("ROUNDS", "3"))
new = peers.contents(n, kind)
for k in range(rounds):
    base = tempfile.mkdtemp(dir=tmp, prefix="nf")
    agents = []
    phone, watch = bench.make_pair(syncagent, base, f"nf{k}", agents)
    bench.checkpoint_journal(base)
    phone.start(); watch.start()
    peers.wait_running(phone); peers.wait_running(watch)
    perf = None
    who = os.environ.get("PERF")
    if who and k == 0:
        pid = (watch if who == "watch" else phone).proc.pid
        cmd = ["strace", "-f", "-tt", "-o"] if os.environ.get("STRACE") == "full" else ["strace", "-c", "-f", "-o"] if os.environ.get("STRACE") else None
        perf = subprocess.Popen(cmd + [f"/tmp/strace-{who}.txt", "-p", str(pid)] if cmd else ["perf", "record", "-F", "2000", "-g", "-o", f"/tmp/perf-{who}.data", "-p", str(pid)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
    c0w, c0p = peers.cpu_of(watch), peers.cpu_of(phone)
    t0 = time.perf_counter()
    peers.write_files(phone.data, new)
    t_last = time.perf_counter()
    t_done = peers.wait_all(watch.data, new, (phone, watch))
    cw, cp = peers.cpu_of(watch) - c0w, peers.cpu_of(phone) - c0p
    if perf:
        perf.send_signal(2); perf.wait()
    bench.wait_converged(phone, watch, timeout=120)
    peers.stop_and_compare(phone, watch)
    r_new, _ = peers.rsync_take(base, new)
    print(f"round {k}: after last write {1000*(t_done-t_last):.0f} ms (writes {1000*(t_last-t0):.0f} ms); phone cpu {cp:.2f} s watch cpu {cw:.2f} s; rsync {1000*r_new:.0f} ms; ratio {(t_done-t_last)/r_new:.2f}", flush=True)
    bench.cleanup(base)
