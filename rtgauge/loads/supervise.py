"""The leader of one load: `python3 supervise.py -- COMMAND...`.

rtgauge starts it in a new session. It adopts every orphan of its load (child
subreaper), so nothing the load forks can escape, and it dies with rtgauge: when
rtgauge exits in any way, even by SIGKILL, the kernel sends this process SIGTERM
(PR_SET_PDEATHSIG) and it kills every process of its session. On SIGINT (rtgauge's
orderly stop) it gives the load a grace period to write its metrics first.

Self-contained (standard library only) and run by path, so it needs no import path.
rtgauge also imports it for the measurement's own child (the engine, cyclictest):
die_with_parent() arms the same death signal for it, and remove_stale_workdirs()
clears the work directories of an rtgauge that was killed before it could."""

import ctypes
import os
import re
import shutil
import signal
import sys
import tempfile
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


def grace_s() -> float:
    """Seconds between the stop's SIGTERM and the SIGKILL (RTGAUGE_LOAD_GRACE_S), read
    when used: an environment set after rtgauge was imported still counts."""
    return float(os.environ.get("RTGAUGE_LOAD_GRACE_S", "5"))


def prctl(option: int, value: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(option, value, 0, 0, 0)


def die_with_parent(then=None, sig: int = signal.SIGKILL):
    """A preexec_fn: the child gets `sig` when the process that started it ends, however
    it ends; if that process is already gone, the child exits at once. `then` (another
    preexec_fn, e.g. CPU placement) runs after."""
    parent = os.getpid()

    def preexec():
        prctl(PR_SET_PDEATHSIG, sig)
        if os.getppid() != parent:
            os._exit(1)
        if then is not None:
            then()
    return preexec


def workdir_prefix(kind: str) -> str:
    """'rtgauge-job-PID-': the owner's pid in the name, for remove_stale_workdirs."""
    return f"rtgauge-{kind}-{os.getpid()}-"


def remove_stale_workdirs() -> list[str]:
    """Work directories (rtgauge-job-PID-*, rtgauge-load-PID-*) whose rtgauge is gone."""
    removed = []
    root = tempfile.gettempdir()
    try:
        names = os.listdir(root)
    except OSError:
        return removed
    for name in names:
        m = re.fullmatch(r"rtgauge-(?:job|load)-(\d+)-\w+", name)
        if not m or os.path.exists(f"/proc/{m.group(1)}"):
            continue
        path = os.path.join(root, name)
        try:
            if os.path.isdir(path) and not os.path.islink(path) and os.stat(path).st_uid == os.geteuid():
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path)
        except OSError:
            pass
    return removed


def session_members(sid: int, living: bool = False) -> list[int]:
    """Every other process of the session (stress-ng makes its own process group, so
    the session, which no process here can leave without setsid, is the boundary);
    `living`: not the zombies."""
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and not (living and fields[0] == "Z"):
            pids.append(int(name))
    return pids


def kill_session(sig: int, living: bool = False) -> None:
    for pid in session_members(os.getsid(0), living):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def reap_all() -> bool:
    """Reap whatever has exited; True when no child is left."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return True
        if pid == 0:
            return False


stopping = {"since": None}


def on_sigint(signum, frame):
    if stopping["since"] is None:
        stopping["since"] = time.monotonic()
        kill_session(signal.SIGINT)


def on_sigterm(signum, frame):
    # rtgauge is gone (or wants it gone now): no metrics wanted, nothing may survive.
    # Killed until none is left: a load that forks all the time (hackbench) makes a
    # process between one look at /proc and the kill, which one pass would leave behind
    # (it outlived a SIGKILLed rtgauge by more than 10 s in a test)
    end = time.monotonic() + 5
    while session_members(os.getsid(0), living=True) and time.monotonic() < end:
        kill_session(signal.SIGKILL, living=True)
        reap_all()
        time.sleep(0.01)
    reap_all()
    os._exit(0)


def main() -> int:
    argv = sys.argv[1:]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    parent = int(os.environ.get("RTGAUGE_PARENT_PID", os.getppid()))
    prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    signal.signal(signal.SIGTERM, on_sigterm)
    signal.signal(signal.SIGINT, on_sigint)
    if os.getppid() != parent:          # rtgauge died before the death signal was armed
        return 0
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    # the command must not inherit our handlers' dispositions for SIGINT
    child = os.fork()
    if child == 0:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        try:
            os.execvp(argv[0], argv)
        except OSError as e:
            print(f"cannot start {argv[0]}: {e.strerror}", file=sys.stderr)
            os._exit(127)
    status = 0
    grace = grace_s()
    while True:
        done = reap_all()
        if done:
            break
        if stopping["since"] is not None and time.monotonic() - stopping["since"] > grace:
            kill_session(signal.SIGKILL)
        time.sleep(0.05)
    return status


if __name__ == "__main__":
    sys.exit(main())
