"""What every load shares: where and how it runs (LoadContext), the idle load (Load),
a load made of one supervised command (ProcessLoad), and the process accounting that
makes what a load delivered checkable (CPU seconds of its session, from /proc)."""

from __future__ import annotations

import os
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
from rtgauge.loads.supervise import workdir_prefix

HERE = Path(__file__).resolve().parent
SUPERVISOR = HERE / "supervise.py"
START_DEADLINE_S = 60.0    # the supervisor starts its command (or ends) within this
AT_ONCE_S = 0.3            # a command that ends this soon after it starts "exited at once"


def _children(pid: int) -> bool:
    """Whether PID has a child now (/proc/PID/task/PID/children; True where the kernel
    does not say, so the wait never hangs on a missing file)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return bool(f.read().split())
    except OSError:
        return True
CLK_TCK = os.sysconf("SC_CLK_TCK")
PACKAGES = {"stress-ng": "stress-ng", "hackbench": "rt-tests", "ip": "iproute2",
            "unshare": "util-linux", "nsenter": "util-linux", "sh": "dash",
            "ping": "iputils-ping"}


@dataclass
class LoadContext:
    """Where and how a load runs: its CPUs (affinity), its cpuset (a cgroup.procs file
    to join), the directory the io load writes to, whether the net load may create
    network namespaces, and the CPUs the job measures on."""
    cpus: list[int] | None = None
    cgroup_procs: str | None = None
    data_dir: str | None = None
    allow_netns: bool = False
    workers: int | None = None
    measured_cpus: list[int] | None = None   # the job's CPUs (the ipi load floods them)

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
        self._tmp = tempfile.TemporaryDirectory(prefix=workdir_prefix("load"))
        self.workdir = Path(self._tmp.name)
        cmd = [sys.executable, str(SUPERVISOR), "--", *self.argv()]
        log = self.workdir / "log.txt"
        env = dict(os.environ, RTGAUGE_PARENT_PID=str(os.getpid()))
        with open(log, "w") as out:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                         start_new_session=True, env=env, cwd=self.workdir,
                                         preexec_fn=join_placement(self.ctx.cpus, self.ctx.cgroup_procs))
        keep_group_weight(self.proc.pid)
        self.started = time.monotonic()
        # "at once" counts from the command's own start, not from the supervisor's launch,
        # which a loaded machine delays by more than the window: first the supervisor's
        # child (the command) exists or the supervisor ended, a bounded wait on that signal
        deadline = self.started + START_DEADLINE_S
        while self.proc.poll() is None and not _children(self.proc.pid) and time.monotonic() < deadline:
            time.sleep(0.01)      # a poll inside the bounded wait
        time.sleep(AT_ONCE_S)     # the window itself: a command that ends within it exited at once
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


def keep_group_weight(pid: int, own: str = "/proc/self/autogroup") -> bool:
    """A load runs in a session of its own (so it can be ended whole). Where the kernel
    groups the fair scheduler by session (autogroup), that puts it in a group of its own
    at nice 0, whatever rtgauge's own group weighs: a load of a rtgauge whose group was
    niced (`echo -10 > /proc/self/autogroup`, as scripts/test.sh does for its passes)
    got a tenth of its share beside it and missed its CPU floor. The load's group is given
    rtgauge's group's nice, as a load without autogroup inherits rtgauge's nice. Whether
    it was changed; nothing where there is no autogroup, or where the nice is already the
    same, or where it may not be set (lowering it needs CAP_SYS_NICE)."""
    try:
        with open(own) as f:
            nice = int(f.read().split()[-1])          # "/autogroup-123 nice -10"
        with open(f"/proc/{pid}/autogroup") as f:
            if int(f.read().split()[-1]) == nice:
                return False
        with open(f"/proc/{pid}/autogroup", "w") as f:
            f.write(str(nice))
        return True
    except (OSError, ValueError, IndexError):
        return False
