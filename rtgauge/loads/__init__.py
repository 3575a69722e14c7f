"""Load conditions: what runs beside a measurement.

A condition is started before a job and stopped after it, also when the job fails or
rtgauge is interrupted. Every load runs under its own supervisor (supervise.py) in a
session of its own: the supervisor adopts whatever the load forks and kills the whole
session when rtgauge exits, however it exits (SIGKILL included). stop() returns what
the load delivered (CPU seconds of its processes from /proc, stress-ng's bogo-ops,
hackbench's times, packets through the veth pair), so a "loaded" measurement is
checkable."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from rtgauge.errors import UserError
from rtgauge.loads.partition import join_placement

HERE = Path(__file__).resolve().parent
SUPERVISOR = HERE / "supervise.py"
UDPFLOOD = HERE / "udpflood.py"
TCPCOPY = HERE / "tcpcopy.py"
CLK_TCK = os.sysconf("SC_CLK_TCK")
PACKAGES = {"stress-ng": "stress-ng", "hackbench": "rt-tests", "ip": "iproute2",
            "unshare": "util-linux", "nsenter": "util-linux", "sh": "dash",
            "ping": "iputils-ping"}


@dataclass
class LoadContext:
    """Where and how a load runs: its CPUs (affinity), its cpuset (a cgroup.procs file
    to join), the directory the io load writes to, and whether the net load may create
    network namespaces."""
    cpus: list[int] | None = None
    cgroup_procs: str | None = None
    data_dir: str | None = None
    allow_netns: bool = False
    workers: int | None = None

    def worker_count(self) -> int:
        return self.workers or len(self.cpus or []) or os.cpu_count() or 1


def need_tool(condition: str, tool: str) -> str:
    exe = shutil.which(tool)
    if not exe:
        raise UserError(f"the {condition} load needs {tool}, which is not installed; install it "
                        f"with `apt-get install {PACKAGES.get(tool, tool)}`.")
    return exe


class Load:
    """No load: the machine as it is."""

    name = "idle"
    description = "nothing started beside the measurement"

    def __init__(self, ctx: LoadContext | None = None):
        self.ctx = ctx or LoadContext()

    def check(self) -> None:
        """Raise the one-sentence UserError naming the package when a tool is missing."""

    def start(self) -> None:
        pass

    def snapshot(self) -> dict:
        """What the load has delivered so far (cumulative), for segment checkpoints."""
        return {}

    def stop(self) -> dict:
        return {"condition": self.name}

    def running(self) -> bool:
        return True


# -- process accounting ---------------------------------------------------------------

def proc_stat(pid: int) -> list[str] | None:
    """Fields of /proc/PID/stat after the command name (index 0 is the state)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def session_pids(sid: int) -> list[int]:
    pids = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            fields = proc_stat(int(name))
            if fields and int(fields[3]) == sid and fields[0] != "Z":
                pids.append(int(name))
    return pids


def session_cpu_seconds(sid: int) -> float:
    """CPU time used by a session so far: its live processes' own time plus what their
    reaped children used (the supervisor reaps every orphan, so nothing is lost)."""
    ticks = 0
    for pid in session_pids(sid):
        fields = proc_stat(pid)
        if fields:
            ticks += sum(int(x) for x in fields[11:15])
    return ticks / CLK_TCK


def kill_session(sid: int) -> None:
    for pid in session_pids(sid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


class ProcessLoad(Load):
    """A load made of one command run under the supervisor."""

    tools: tuple[str, ...] = ()

    def __init__(self, ctx: LoadContext | None = None):
        super().__init__(ctx)
        self.proc: subprocess.Popen | None = None
        self.workdir: Path | None = None
        self._tmp: tempfile.TemporaryDirectory | None = None
        self.started = 0.0
        self.last_cpu_s = 0.0

    def check(self) -> None:
        for tool in self.tools:
            need_tool(self.name, tool)

    def argv(self) -> list[str]:
        raise NotImplementedError

    def details(self) -> dict:
        """What this load reports beside CPU time, read from its work directory."""
        return {}

    def start(self) -> None:
        self.check()
        from rtgauge.loads.supervise import workdir_prefix
        self._tmp = tempfile.TemporaryDirectory(prefix=workdir_prefix("load"))
        self.workdir = Path(self._tmp.name)
        cmd = [sys.executable, str(SUPERVISOR), "--", *self.argv()]
        log = self.workdir / "log.txt"
        env = dict(os.environ, RTGAUGE_PARENT_PID=str(os.getpid()))
        with open(log, "w") as out:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                         start_new_session=True, env=env, cwd=self.workdir,
                                         preexec_fn=join_placement(self.ctx.cpus, self.ctx.cgroup_procs))
        self.started = time.monotonic()
        time.sleep(0.3)
        if self.proc.poll() is not None:
            lines = log.read_text(errors="replace").strip().splitlines()
            self._cleanup()
            raise UserError(f"the {self.name} load exited at once ({lines[-1] if lines else 'no message'}); "
                            f"run its command by hand to see why: {' '.join(self.argv())}")

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def snapshot(self) -> dict:
        if self.proc is None:
            return {}
        if self.proc.poll() is None:
            self.last_cpu_s = max(self.last_cpu_s, session_cpu_seconds(self.proc.pid))
        return {"cpu_s": round(self.last_cpu_s, 3), "wall_s": round(time.monotonic() - self.started, 3)}

    def stop(self) -> dict:
        delivered = {"condition": self.name, "tool": self.tool_name(), "command": self.argv()}
        if self.ctx.cpus:
            delivered["cpus"] = self.ctx.cpus
        if self.proc is None:
            return delivered
        delivered["alive_until_stop"] = self.proc.poll() is None
        delivered.update(self.snapshot())
        self._stop_session()
        delivered.update(self.details())
        self._cleanup()
        return delivered

    def tool_name(self) -> str:
        return self.tools[0] if self.tools else "sh"

    def _stop_session(self) -> None:
        """SIGINT to the supervisor (it passes it on, so stress-ng writes its metrics),
        then SIGKILL to whatever of the session is left."""
        sid = self.proc.pid
        try:
            self.proc.send_signal(signal.SIGINT)
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        except ProcessLookupError:
            pass
        for _ in range(50):
            if not session_pids(sid):
                break
            kill_session(sid)
            time.sleep(0.02)

    def _cleanup(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.proc is not None:
            kill_session(self.proc.pid)
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
        self.proc = None


# -- stress-ng loads --------------------------------------------------------------------

class StressNg(ProcessLoad):
    """stress-ng with a set of stressors; subclasses say which."""

    tools = ("stress-ng",)

    def stressors(self, n: int) -> list[str]:
        raise NotImplementedError

    def temp_path(self) -> str:
        return str(self.workdir)

    sockets = False          # runs socket stressors: kept off the network (own_network_namespace)

    def argv(self) -> list[str]:
        exe = shutil.which("stress-ng") or "stress-ng"
        # not --quiet: it also drops the metrics from the YAML file
        cmd = [exe, *self.stressors(self.ctx.worker_count()), "--timeout", "0", "--metrics",
               "--yaml", str((self.workdir or Path("/tmp")) / "metrics.yaml"),
               "--temp-path", self.temp_path()]
        return own_network_namespace(cmd) if self.sockets else cmd

    def check(self) -> None:
        super().check()
        if self.sockets:
            need_tool(self.name, "unshare")
            need_tool(self.name, "ip")

    def details(self) -> dict:
        out = read_stress_ng_metrics(self.workdir / "metrics.yaml")
        out["workers"] = self.ctx.worker_count()
        return out


def own_network_namespace(cmd: list[str]) -> list[str]:
    """cmd in a new network namespace holding only its loopback interface. stress-ng's
    socket stressors bind to every interface (0.0.0.0, TCP 5000 and UDP 7000 and up),
    also with --sock-if lo; in a namespace of their own they reach no network, while the
    traffic still runs through this kernel's network stack and softirqs on the load's
    CPUs. Without root a user namespace provides the right to create it."""
    ip = shutil.which("ip") or "ip"
    userns = [] if os.geteuid() == 0 else ["--map-root-user"]
    return ["unshare", *userns, "--net", "--", "sh", "-c", f'{ip} link set lo up && exec "$@"', "sh", *cmd]


class StressCpu(StressNg):
    name = "cpu"
    description = "stress-ng --cpu: one CPU-bound worker per load CPU"

    def stressors(self, n):
        return ["--cpu", str(n)]


class StressMemory(StressNg):
    name = "memory"
    description = "stress-ng --cache (cache thrashing) and --memrate (memory bandwidth)"

    def stressors(self, n):
        return ["--cache", str(n), "--memrate", "1", "--memrate-bytes", "64M"]


class StressIo(StressNg):
    name = "io"
    description = "stress-ng --hdd and --iomix on the data directory's file system"

    def temp_path(self) -> str:
        return self.ctx.data_dir or str(self.workdir)

    def check(self) -> None:
        super().check()
        d = self.ctx.data_dir
        if d and not (os.path.isdir(d) and os.access(d, os.W_OK)):
            raise UserError(f"the io load writes to {d}, which is not a writable directory; "
                            "give --load-dir a directory on the disk to load.")

    def stressors(self, n):
        k = str(max(1, n // 2))
        return ["--hdd", k, "--hdd-bytes", "64M", "--iomix", k, "--iomix-bytes", "64M"]

    def details(self) -> dict:
        out = super().details()
        out["directory"] = self.temp_path()
        return out


class StressNetLoopback(StressNg):
    name = "net"
    description = ("loopback traffic (stress-ng --sock, --udp); with --allow-netns, UDP "
                   "through a veth pair between two network namespaces")

    sockets = True

    def stressors(self, n):
        k = str(max(1, n // 2))
        return ["--sock", k, "--udp", k]

    def details(self) -> dict:
        out = super().details()
        out["path"] = "loopback of its own network namespace"
        return out


class StressIrqHeavy(StressNg):
    name = "irq-heavy"
    description = "stress-ng --timer at 50 kHz and --udp: timer and network interrupts"

    sockets = True

    def stressors(self, n):
        k = str(max(1, n // 2))
        return ["--timer", k, "--timer-freq", "50000", "--udp", k]


class StressMixed(StressNg):
    name = "mixed"
    description = "OSADL-style blend: moderate UDP traffic, file I/O and memory allocation"

    sockets = True

    def stressors(self, n):
        return ["--udp", "1", "--iomix", "1", "--iomix-bytes", "32M", "--vm", "1", "--vm-bytes", "64M"]

    def temp_path(self) -> str:
        return self.ctx.data_dir or str(self.workdir)


def read_stress_ng_metrics(path: Path) -> dict:
    """bogo-ops and CPU seconds per stressor from stress-ng's --yaml file, and totals."""
    try:
        text = path.read_text()
    except OSError:
        return {"metrics": "stress-ng wrote no metrics"}
    per: dict[str, dict] = {}
    current: dict | None = None
    in_metrics = False
    for line in text.splitlines():
        if line.startswith("metrics:"):
            in_metrics = True
            continue
        if in_metrics and line and not line.startswith(" "):
            break
        if not in_metrics or ":" not in line:
            continue
        key, _, value = line.strip().lstrip("- ").partition(":")
        key, value = key.strip(), value.strip()
        if key == "stressor":
            current = per.setdefault(value, {})
        elif current is not None and key in ("bogo-ops", "bogo-ops-per-second-real-time",
                                             "user-time", "system-time", "wall-clock-time"):
            try:
                current[key.replace("-", "_")] = float(value)
            except ValueError:
                pass
    out: dict = {"stressors": per}
    out["bogo_ops"] = sum(s.get("bogo_ops", 0.0) for s in per.values())
    out["stress_ng_cpu_s"] = round(sum(s.get("user_time", 0.0) + s.get("system_time", 0.0)
                                       for s in per.values()), 3)
    return out


# -- hackbench, net through namespaces, user commands ------------------------------------

class Hackbench(ProcessLoad):
    name = "sched"
    description = "hackbench in a loop: groups of processes passing messages (scheduler load)"
    tools = ("hackbench", "sh")
    GROUPS, LOOPS = 4, 200

    def argv(self) -> list[str]:
        exe = shutil.which("hackbench") or "hackbench"
        return ["sh", "-c", f"while :; do {exe} -g {self.GROUPS} -l {self.LOOPS} || exit 1; done"]

    def tool_name(self) -> str:
        return "hackbench"

    def details(self) -> dict:
        times = []
        for line in (self.workdir / "log.txt").read_text(errors="replace").splitlines():
            if line.startswith("Time:"):
                try:
                    times.append(float(line.split()[1]))
                except (IndexError, ValueError):
                    pass
        out = {"groups": self.GROUPS, "loops": self.LOOPS, "hackbench_runs": len(times)}
        if times:
            out.update(hackbench_mean_s=round(sum(times) / len(times), 4),
                       hackbench_max_s=max(times), hackbench_total_s=round(sum(times), 3))
        return out


NETNS_PAIR_SCRIPT = r"""
set -e
self=$(readlink /proc/self/ns/net)
unshare --net sleep 2147483647 & A=$!
unshare --net sleep 2147483647 & B=$!
for p in $A $B; do
    i=0
    while [ "$(readlink /proc/$p/ns/net)" = "$self" ]; do
        i=$((i+1)); [ $i -lt 500 ] || { echo "namespace did not appear"; exit 3; }; sleep 0.01
    done
done
echo "netns $(readlink /proc/$A/ns/net) $(readlink /proc/$B/ns/net)"
{ip} link add rtg0 netns $A type veth peer name rtg1 netns $B
nsenter -t $A -n {ip} addr add 10.254.0.1/30 dev rtg0
nsenter -t $A -n {ip} link set rtg0 up
nsenter -t $B -n {ip} addr add 10.254.0.2/30 dev rtg1
nsenter -t $B -n {ip} link set rtg1 up
# background jobs of a script ignore SIGINT: pass the stop on to the namespace holders
trap 'kill -TERM $A $B 2>/dev/null' INT TERM
"""

VETH_TRAFFIC = """
nsenter -t $B -n {py} {flood} recv 10.254.0.2 5201 recv.count &
nsenter -t $A -n {py} {flood} send 10.254.0.2 5201 send.count &
wait
"""

# The interrupt study's load: a flood ping and a TCP stream copied to a (pseudo)
# serial line, both across the veth pair, so the measured CPU takes network
# interrupts and softirqs as on the study's target.
PING_TCP_TRAFFIC = """
nsenter -t $B -n {py} {tcpcopy} recv 10.254.0.2 5202 recv.count &
nsenter -t $A -n {py} {tcpcopy} send 10.254.0.2 5202 send.count &
nsenter -t $A -n {ping} -f -q -s 56 10.254.0.2 > ping.txt 2>&1 &
wait
"""


class NetnsPair(ProcessLoad):
    """Traffic between two anonymous network namespaces joined by a veth pair
    (10.254.0.1 -> 10.254.0.2). The namespaces live as long as their holder
    processes, which the supervisor kills with the load: nothing is left behind."""

    traffic = ""
    tools: tuple[str, ...] = ("ip", "unshare", "nsenter", "sh")

    def script(self) -> str:
        return (NETNS_PAIR_SCRIPT + self.traffic).replace("{ip}", shutil.which("ip") or "ip") \
            .replace("{py}", sys.executable).replace("{flood}", str(UDPFLOOD)) \
            .replace("{tcpcopy}", str(TCPCOPY)).replace("{ping}", shutil.which("ping") or "ping")

    def argv(self) -> list[str]:
        return ["sh", "-c", self.script()]

    def check(self) -> None:
        super().check()
        if os.geteuid() != 0:
            raise UserError(f"the {self.name} load creates network namespaces, which needs root; "
                            "run rtgauge as root or choose another condition.")

    def read_counts(self, role: str) -> list[int]:
        try:
            return [int(x) for x in (self.workdir / f"{role}.count").read_text().split()]
        except (OSError, ValueError):
            return []

    def details(self) -> dict:
        out: dict = {"path": "veth 10.254.0.1 -> 10.254.0.2 between two namespaces"}
        for line in (self.workdir / "log.txt").read_text(errors="replace").splitlines():
            if line.startswith("netns "):
                out["namespaces"] = line.split()[1:]
        return out


class VethNet(NetnsPair):
    name = "net"
    description = "UDP through a veth pair between two network namespaces (--allow-netns)"
    traffic = VETH_TRAFFIC

    def tool_name(self) -> str:
        return "veth"

    def details(self) -> dict:
        out = super().details()
        for role in ("send", "recv"):
            counts = self.read_counts(role)
            out[f"{role}_packets"] = counts[0] if counts else 0
            if counts:
                out[f"{role}_bytes"] = counts[1]
        return out


class PingTcp(NetnsPair):
    """The interrupt study's load condition."""

    name = "ping-tcp"
    description = ("the interrupt study's load: a flood ping and a TCP stream copied into a "
                   "pseudo-terminal, across a veth pair between two network namespaces")
    tools = NetnsPair.tools + ("ping",)
    traffic = PING_TCP_TRAFFIC

    def tool_name(self) -> str:
        return "ping+tcp"

    def details(self) -> dict:
        out = super().details()
        sent, received = self.read_counts("send"), self.read_counts("recv")
        out["tcp_sent_bytes"] = sent[0] if sent else 0
        out["tcp_received_bytes"] = received[0] if received else 0
        out["tty_bytes"] = received[1] if len(received) > 1 else 0
        try:
            summary = (self.workdir / "ping.txt").read_text(errors="replace")
        except OSError:
            summary = ""
        m = re.search(r"(\d+) packets transmitted, (\d+) received", summary)
        out["ping_sent"], out["ping_received"] = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
        return out


class Command(ProcessLoad):
    """`command:<shell command>`: any user command as the load."""

    tools = ("sh",)

    def __init__(self, command: str, ctx: LoadContext | None = None):
        super().__init__(ctx)
        self.command = command
        self.name = f"command:{command}"

    def argv(self) -> list[str]:
        return ["sh", "-c", self.command]

    def tool_name(self) -> str:
        return "command"


class _Conditions(dict):
    """The named conditions; `command:<shell command>` is a condition too."""

    def __contains__(self, name) -> bool:
        return dict.__contains__(self, name) or (isinstance(name, str) and name.startswith("command:")
                                                and bool(name[8:].strip()))


CONDITIONS: dict[str, type[Load]] = _Conditions({
    "idle": Load, "cpu": StressCpu, "memory": StressMemory, "io": StressIo,
    "net": StressNetLoopback, "sched": Hackbench, "irq-heavy": StressIrqHeavy, "mixed": StressMixed,
    "ping-tcp": PingTcp,
})


def judge_delivery(condition: str, delivered: dict) -> dict:
    """Mark what a load delivered during a measurement: "ok" false and a "problem"
    sentence when its processes were gone before the measurement ended (killed, crashed,
    or a command that exited), so the measurement is not taken for a loaded one. The
    store marks such a measurement failed (load_ok false)."""
    if condition != "idle" and delivered.get("alive_until_stop") is False:
        delivered["ok"] = False
        delivered["problem"] = (f"the {condition} load was no longer running when the measurement ended; "
                                "the measurement is not one under that load")
        return delivered
    cpu_s, wall_s, workers = delivered.get("cpu_s"), delivered.get("wall_s"), delivered.get("workers")
    if condition in CPU_BOUND and all(isinstance(x, (int, float)) for x in (cpu_s, wall_s, workers)) \
            and wall_s >= 1 and cpu_s < MIN_DELIVERED * workers * wall_s:
        delivered["ok"] = False
        delivered["problem"] = (f"the {condition} load delivered {cpu_s:.2f} CPU-seconds of the "
                                f"{workers * wall_s:.1f} intended (stopped or starved); the measurement is not "
                                "one under that load")
    elif condition != "idle":
        delivered.setdefault("ok", True)
    return delivered


# Conditions whose workers are CPU-bound: they must deliver at least MIN_DELIVERED of
# workers x wall time (a fraction low enough for a machine shared with other work; a
# stopped or frozen load delivers nothing).
CPU_BOUND = ("cpu", "memory")
MIN_DELIVERED = 0.02


def make_load(condition: str, ctx: LoadContext | None = None) -> Load:
    if condition.startswith("command:"):
        command = condition[len("command:"):].strip()
        if not command:
            raise UserError("condition `command:` needs a shell command after the colon, "
                            "e.g. `command:stress-ng --cpu 1`.")
        return Command(command, ctx)
    if condition == "net" and ctx is not None and ctx.allow_netns:
        return VethNet(ctx)
    try:
        return CONDITIONS[condition](ctx)
    except KeyError:
        raise UserError(f"unknown load condition {condition!r}; known conditions are "
                        f"{', '.join(sorted(CONDITIONS))} and command:<shell command>.") from None
