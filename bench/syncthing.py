"""Syncthing (Debian's package) driven the way a user runs it at its fastest sensible setting, for
`make bench PEERS=1`: two instances on loopback, each with a fresh home, one shared folder
(send-receive), file watcher on with its shortest delay (1 s), discovery, relays, NAT, usage and
crash reporting and upgrades off. Readiness and completion are conditions polled on its REST API
and on the files; never fixed sleeps.
"""

import json
import os
import random
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
import xml.etree.ElementTree as ET

SYNCTHING = "syncthing"
FOLDER = "bench"


class SyncthingError(Exception):
    pass


def ensure_syncthing():
    """Installs Debian's syncthing when it is missing (as root); returns its version line."""
    if shutil.which(SYNCTHING) is None:
        if os.geteuid() != 0:
            raise SyncthingError("PEERS=1 needs syncthing: run `sudo apt-get install -y syncthing` first")
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", "syncthing"], check=True, env=env,
                       stdout=subprocess.DEVNULL)
    p = subprocess.run([SYNCTHING, "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return p.stdout.strip().split(" (")[0]


def free_ports(n):
    """n distinct free ports: all bound at once (one at a time, the kernel may hand one out twice)."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


class Instance:
    def __init__(self, base, name, ports):
        self.name = name
        self.home = os.path.join(base, f"st-{name}-home")
        self.data = os.path.join(base, f"st-{name}")
        os.makedirs(self.data)
        self.port, self.gui = ports
        self.key = "bench-" + "".join(random.choice("abcdefghijkmnpqrstuvwxyz23456789") for _ in range(24))
        p = subprocess.run([SYNCTHING, "generate", f"--home={self.home}", "--no-default-folder", "--skip-port-probing"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if p.returncode != 0:
            raise SyncthingError(f"syncthing generate ({name}) failed: {p.stdout[-500:]}")
        p = subprocess.run([SYNCTHING, "serve", f"--home={self.home}", "--device-id"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        self.id = p.stdout.strip().splitlines()[-1] if p.returncode == 0 else ""
        if len(self.id) < 50:
            raise SyncthingError(f"no device id from syncthing ({name}): {p.stdout[-300:]}")
        self.proc = None

    def configure(self, other):
        path = os.path.join(self.home, "config.xml")
        tree = ET.parse(path)
        root = tree.getroot()
        for dev in list(root.findall("device")):
            if dev.get("id") != self.id:
                root.remove(dev)
        peer = ET.SubElement(root, "device", {"id": other.id, "name": other.name, "compression": "metadata",
                                             "introducer": "false"})
        ET.SubElement(peer, "address").text = f"tcp://127.0.0.1:{other.port}"
        folder = ET.Element("folder", {"id": FOLDER, "label": FOLDER, "path": self.data, "type": "sendreceive",
                                       "rescanIntervalS": "3600", "fsWatcherEnabled": "true", "fsWatcherDelayS": "1",
                                       "ignorePerms": "false", "autoNormalize": "true"})
        for d in (self.id, other.id):
            ET.SubElement(folder, "device", {"id": d})
        root.insert(0, folder)
        gui = root.find("gui")
        gui.set("enabled", "true")
        gui.set("tls", "false")
        gui.find("address").text = f"127.0.0.1:{self.gui}"
        key = gui.find("apikey")
        if key is None:
            key = ET.SubElement(gui, "apikey")
        key.text = self.key
        opts = root.find("options")
        for tag, value in [("listenAddress", f"tcp://127.0.0.1:{self.port}"), ("globalAnnounceEnabled", "false"),
                           ("localAnnounceEnabled", "false"), ("relaysEnabled", "false"), ("natEnabled", "false"),
                           ("urAccepted", "-1"), ("autoUpgradeIntervalH", "0"), ("crashReportingEnabled", "false"),
                           ("startBrowser", "false")]:
            for old in opts.findall(tag):
                opts.remove(old)
            ET.SubElement(opts, tag).text = value
        tree.write(path)

    def start(self, log):
        env = dict(os.environ, STNORESTART="1", STNOUPGRADE="1", STMONITORED="1")
        self.log = open(log, "ab")
        self.proc = subprocess.Popen([SYNCTHING, "serve", f"--home={self.home}", "--no-browser", "--no-restart",
                                      "--no-upgrade", "--logflags=3"], stdout=self.log, stderr=self.log, env=env,
                                     start_new_session=True)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()

    def rest(self, path):
        req = urllib.request.Request(f"http://127.0.0.1:{self.gui}{path}", headers={"X-API-Key": self.key})
        with urllib.request.urlopen(req, timeout=5) as r:
            return json.loads(r.read())

    def usage(self):
        """CPU seconds and peak RSS (MB) of the process, children included."""
        pids = [self.proc.pid]
        try:
            pids += [int(p) for p in open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read().split()]
        except OSError:
            pass
        cpu, hwm = 0.0, 0.0
        tick = os.sysconf("SC_CLK_TCK")
        for pid in pids:
            try:
                fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
                cpu += (int(fields[11]) + int(fields[12])) / tick
                for line in open(f"/proc/{pid}/status"):
                    if line.startswith("VmHWM:"):
                        hwm = max(hwm, int(line.split()[1]) / 1024)
            except OSError:
                pass
        return cpu, hwm


class SyncthingPair:
    """Two connected instances sharing one folder, idle; `a.data` and `b.data` are the directories."""

    def __init__(self, base):
        ports = free_ports(4)
        self.a, self.b = Instance(base, "a", ports[:2]), Instance(base, "b", ports[2:])
        self.a.configure(self.b)
        self.b.configure(self.a)
        self.a.start(os.path.join(base, "st-a.log"))
        self.b.start(os.path.join(base, "st-b.log"))
        try:
            self.wait(lambda: self.connected(self.a, self.b) and self.connected(self.b, self.a), 60,
                      "the two syncthing instances did not connect on 127.0.0.1")
            self.wait(lambda: self.idle(self.a) and self.idle(self.b), 60, "the shared folder did not become idle")
        except SyncthingError:
            self.stop()  # never left running
            raise

    @staticmethod
    def connected(x, y):
        try:
            return x.rest("/rest/system/connections")["connections"].get(y.id, {}).get("connected", False)
        except (OSError, ValueError, KeyError):
            return False

    @staticmethod
    def idle(x):
        try:
            return x.rest(f"/rest/db/status?folder={FOLDER}").get("state") == "idle"
        except (OSError, ValueError):
            return False

    def wait(self, cond, timeout, what):
        deadline = time.monotonic() + timeout
        while not cond():
            for x in (self.a, self.b):
                if x.proc.poll() is not None:
                    x.log.flush()
                    with open(x.log.name, errors="replace") as f:
                        tail = f.read()[-800:]
                    raise SyncthingError(f"syncthing {x.name} exited ({x.proc.returncode}); the end of {x.log.name}:\n{tail}")
            if time.monotonic() > deadline:
                raise SyncthingError(f"{what} within {timeout} s")
            time.sleep(0.05)

    def stop(self):
        self.a.stop()
        self.b.stop()


def same_tree(a, b):
    """diff -r without syncthing's own marker and temporaries."""
    p = subprocess.run(["diff", "-r", "-q", "-x", ".stfolder", "-x", ".stversions", "-x", ".syncthing.*", a, b],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if p.returncode != 0:
        raise SyncthingError(f"{a} and {b} differ: {p.stdout.decode(errors='replace')[:500]}")
