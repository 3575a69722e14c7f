"""Run the engine's `hil` test across a veth pair: the simulation in one network
namespace, the device in another, so every frame crosses a real network stack
(veth transmit, softirq receive) instead of loopback.

The namespaces are anonymous: each is held by one `unshare --net sleep` process
and disappears with it (the veth pair with it), so there is nothing named to leak.
Every process started here gets PR_SET_PDEATHSIG, so if rtgauge dies, even by
SIGKILL, the holders and both engines die too; on any other exit the finally
block kills them. Nothing but the two private addresses below is contacted."""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field

from rtgauge.enginebin import engine_path
from rtgauge.errors import RunFailed, UserError

SIM_IP, DEVICE_IP, PREFIX = "10.254.7.1", "10.254.7.2", 30
PORT = 47000
BIND_DEADLINE_S = 30.0   # a watchdog on the simulation's bind, not a speed: a loaded machine may take long
SIM_IF, DEVICE_IF = "rtghil0", "rtghil1"
PR_SET_PDEATHSIG = 1
# Options that belong to one side only; the rest go to both.
SIM_ONLY = {"payload", "work-us", "masses", "threads", "solver", "sim-cpu", "sim-drop-every",
            "wait-s", "idle-ms"}
DEVICE_ONLY = {"device-cpu", "linger-ms", "frame-bytes", "start-delay-ms"}


def _die_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _tool(name: str, package: str) -> str:
    exe = shutil.which(name)
    if not exe:
        raise UserError(f"the veth transport needs {name}; install it with `apt-get install {package}`.")
    return exe


def netns_of(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None


def netns_alive(ns: str) -> bool:
    """Whether any process still holds the network namespace `ns` ("net:[inode]")."""
    for name in os.listdir("/proc"):
        if name.isdigit() and netns_of(int(name)) == ns:
            return True
    return False


@dataclass
class VethResult:
    sim: dict | None
    device: dict | None
    sim_status: int | None
    device_status: int | None
    namespaces: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


class VethPair:
    """Two anonymous network namespaces joined by a veth pair, as a context manager."""

    def __init__(self) -> None:
        self.holders: list[subprocess.Popen] = []
        self.namespaces: list[str] = []
        self.procs: list[subprocess.Popen] = []

    def __enter__(self) -> "VethPair":
        if os.geteuid() != 0:
            raise UserError("the veth transport creates network namespaces and needs root; run as root.")
        unshare, ip = _tool("unshare", "util-linux"), _tool("ip", "iproute2")
        _tool("nsenter", "util-linux")
        try:
            self._create(unshare, ip)
        except BaseException:
            self.close()
            raise
        return self

    def _create(self, unshare: str, ip: str) -> None:
        own = netns_of(os.getpid())
        for _ in range(2):
            self.holders.append(subprocess.Popen([unshare, "--net", "sleep", "2147483647"],
                                                 preexec_fn=_die_with_parent,
                                                 stdin=subprocess.DEVNULL))
        deadline = time.monotonic() + 5
        for h in self.holders:
            while netns_of(h.pid) in (own, None):
                if h.poll() is not None or time.monotonic() > deadline:
                    raise RunFailed("could not create a network namespace (unshare --net failed); "
                                    "check that this kernel has network namespaces.")
                time.sleep(0.01)
            self.namespaces.append(netns_of(h.pid))
        a, b = (str(h.pid) for h in self.holders)
        self._run([ip, "link", "add", SIM_IF, "netns", a, "type", "veth", "peer", "name", DEVICE_IF,
                   "netns", b])
        for pid, dev, addr in ((a, SIM_IF, SIM_IP), (b, DEVICE_IF, DEVICE_IP)):
            self._run(["nsenter", "-t", pid, "-n", ip, "addr", "add", f"{addr}/{PREFIX}", "dev", dev])
            self._run(["nsenter", "-t", pid, "-n", ip, "link", "set", dev, "up"])
            self._run(["nsenter", "-t", pid, "-n", ip, "link", "set", "lo", "up"])

    @staticmethod
    def _run(cmd: list[str]) -> None:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
        if p.returncode != 0:
            raise RunFailed(f"`{' '.join(cmd)}` failed: {p.stderr.strip() or p.returncode}.")

    def spawn(self, side: int, argv: list[str]) -> subprocess.Popen:
        """Start argv inside namespace `side` (0: simulation, 1: device)."""
        pid = str(self.holders[side].pid)
        p = subprocess.Popen(["nsenter", "-t", pid, "-n", *argv], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
                             preexec_fn=_die_with_parent)
        self.procs.append(p)
        return p

    def close(self) -> None:
        for p in self.procs + self.holders:
            if p.poll() is None:
                p.kill()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        self.procs, self.holders = [], []

    def __exit__(self, *exc) -> None:
        self.close()


def split_options(options: list[str]) -> tuple[list[str], list[str]]:
    """Engine options "--name value" / "--flag" split into (simulation, device) argv."""
    sim: list[str] = []
    dev: list[str] = []
    i = 0
    while i < len(options):
        word = options[i]
        if not word.startswith("--"):
            raise UserError(f"unexpected word {word!r} among the hil options; give --name value pairs.")
        name = word[2:].split("=", 1)[0]
        if name in ("role", "address", "device-local"):
            raise UserError(f"--{name} is set by the veth transport itself; drop it.")
        takes_value = "=" not in word and i + 1 < len(options) and not options[i + 1].startswith("--")
        chunk = options[i:i + 2] if takes_value else options[i:i + 1]
        i += len(chunk)
        if name not in DEVICE_ONLY:
            sim += chunk
        if name not in SIM_ONLY:
            dev += chunk
    return sim, dev


def socket_inodes(pid: int) -> set[int]:
    """The inodes of PID's own sockets (its /proc/PID/fd links 'socket:[INODE]'); empty
    when PID is gone or its descriptors cannot be read."""
    out = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return out
    for fd in fds:
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            out.add(int(link[8:-1]))
    return out


def udp_bound_by(pid: int, port: int) -> bool:
    """Whether one of PID's own sockets is bound to UDP PORT: the sockets in /proc/PID/fd
    looked up by inode in /proc/PID/net/udp (PID's network namespace's table)."""
    inodes = socket_inodes(pid)
    if not inodes:
        return False
    try:
        with open(f"/proc/{pid}/net/udp") as f:
            rows = [line.split() for line in f][1:]
    except OSError:
        return False
    return any(int(r[1].rsplit(":", 1)[1], 16) == port and int(r[9]) in inodes for r in rows if len(r) > 9)


def _wait_bound(sim: subprocess.Popen, port: int, within_s: float) -> bool:
    """True once the simulation (SIM, the engine nsenter became) holds UDP PORT; False
    if it ends first (its document says why: a bad option, a port taken); RunFailed if
    it has not bound it within WITHIN_S seconds."""
    deadline = time.monotonic() + within_s
    while not udp_bound_by(sim.pid, port):
        if sim.poll() is not None:
            return False
        if time.monotonic() > deadline:
            raise RunFailed(f"the hil simulation had not bound UDP port {port} within {within_s:g} s.")
        time.sleep(0.005)      # a poll inside the bounded wait
    return True


def _finish(p: subprocess.Popen, deadline: float) -> tuple[int | None, dict | None, str]:
    try:
        out, err = p.communicate(timeout=max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
    try:
        doc = json.loads(out) if out.strip() else None
    except json.JSONDecodeError:
        doc = None
    return p.returncode, doc, err.strip()


def run_veth(options: list[str], time_limit_s: float = 600, engine: str | None = None,
             on_started=None) -> VethResult:
    """Run `hil` with --role sim in one namespace and --role device in the other and
    return both documents. on_started(pair, sim_proc, device_proc) is called once
    both run (tests use it to kill a side). The namespaces are gone when this returns."""
    exe = engine or engine_path()
    sim_opts, dev_opts = split_options(options)
    address = f"{SIM_IP}:{PORT}"
    with VethPair() as pair:
        sim = pair.spawn(0, [exe, "hil", "--role", "sim", "--address", address, "--device-local",
                             *sim_opts])
        # the simulation listens before the first frame leaves; one that ended first (a
        # bad option, a port taken) leaves no loop to run: the device is not started
        if _wait_bound(sim, PORT, BIND_DEADLINE_S):
            dev = pair.spawn(1, [exe, "hil", "--role", "device", "--address", address, *dev_opts])
            if on_started:
                on_started(pair, sim, dev)
            deadline = time.monotonic() + time_limit_s
            dstatus, ddoc, derr = _finish(dev, deadline)
            # A device that died leaves the simulation to its idle timeout; do not wait for it.
            sstatus, sdoc, serr = _finish(sim, deadline if ddoc else time.monotonic() + 2)
        else:
            sstatus, sdoc, serr = _finish(sim, time.monotonic() + 2)
            dstatus, ddoc, derr = None, None, "not started: the simulation ended before it listened"
        namespaces = list(pair.namespaces)
    result = VethResult(sdoc, ddoc, sstatus, dstatus, namespaces)
    for side, status, doc, err in (("simulation", sstatus, sdoc, serr), ("device", dstatus, ddoc, derr)):
        if doc is None and status is None:
            result.errors.append(f"the {side} side was {err}")
        elif doc is None:
            result.errors.append(f"the {side} side ended with status {status} and no document"
                                 + (f" ({err.splitlines()[-1]})" if err else ""))
        elif not doc.get("ok"):
            result.errors.append(f"the {side} side failed: {doc.get('error')}")
    return result


def merge(result: VethResult) -> dict:
    """One hil document from both sides: the device's metrics (round trip, lost, misses)
    and the simulation's (ti, ts, tw, sequence gaps); env says the transport was veth."""
    if not result.device or not result.sim:
        raise RunFailed("; ".join(result.errors) or "a side of the veth loop gave no document.")
    doc = dict(result.device)
    doc["metrics"] = {**result.device.get("metrics", {}), **result.sim.get("metrics", {})}
    env = dict(result.device.get("env", {}))
    env["transport"] = "veth"
    env["sim_env"] = {k: v for k, v in result.sim.get("env", {}).items()
                      if k in ("threads", "ti_arrival", "tw_reference", "sim_address", "tire_step_s")}
    doc["env"] = env
    doc["params"] = {**result.sim.get("params", {}), **result.device.get("params", {}),
                     "role": "both", "transport": "veth"}
    doc["ok"] = bool(result.device.get("ok") and result.sim.get("ok"))
    doc["interrupted"] = bool(result.device.get("interrupted") or result.sim.get("interrupted"))
    return doc
