"""Waiting for a thing to be ready instead of sleeping a fixed time: the engine's own
status lines, a process's threads at a real-time policy, how often a measuring thread
has left its CPU (its cycles so far), a UDP or TCP port bound, a datagram received in a
network namespace. Every wait
is bounded (a watchdog, not a speed: it only decides how long a broken run takes to
fail) and fails saying what it waited for; one given a process fails at once when that
process ends first."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from rtgauge.hil.veth import socket_inodes

WATCHDOG_S = 60.0
POLL_S = 0.01


def wait_for(condition, what: str, timeout: float = WATCHDOG_S, proc: subprocess.Popen | None = None,
             poll: float = POLL_S):
    """condition() until it returns something true (returned); AssertionError saying WHAT
    after TIMEOUT seconds, or as soon as PROC has exited, with the last lines PROC said (at
    a timeout it is killed first, to read them). POLL: seconds between looks (a finer one
    for a thing that lasts only milliseconds once ready)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the process ended (status {proc.returncode}) before {what}{_said(proc)}")
        if time.monotonic() > deadline:
            if proc is not None:
                proc.kill()
                raise AssertionError(f"no {what} within {timeout:.0f} s; the process, killed then, had said{_said(proc)}")
            raise AssertionError(f"no {what} within {timeout:.0f} s")
        time.sleep(poll)


def _said(proc: subprocess.Popen) -> str:
    """A colon and the last three lines PROC (ended) wrote, or the word nothing."""
    try:
        out, err = proc.communicate(timeout=10)
    except (ValueError, OSError, subprocess.TimeoutExpired):     # its pipes were read already, or none
        return ""
    lines = str(err or out or "").strip().splitlines()[-3:]
    return ": " + " | ".join(lines) if lines else " nothing"


def status_cycles(path: Path | str, thread: int = 0) -> int:
    """The cycles thread THREAD measured in the complete lines of an engine's --status
    file so far (0 before the first window has ended)."""
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        return 0
    total = 0
    for line in text.split("\n")[:-1]:          # a line without its newline is still being written
        for t in json.loads(line)["threads"]:
            if t["thread"] == thread:
                total += t["cycles"]
    return total


def threads_at(pid: int, policies=(os.SCHED_FIFO, os.SCHED_RR)) -> int:
    """How many of PID's threads run at one of POLICIES (the engine's measuring threads
    raise themselves to SCHED_FIFO once they are set up)."""
    n = 0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return 0
    for tid in tids:
        try:
            if os.sched_getscheduler(int(tid)) in policies:
                n += 1
        except (ProcessLookupError, PermissionError):
            pass
    return n


def threads_of(pid: int) -> int:
    """How many threads PID has (the engine's measuring threads, once started, beside its main one)."""
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except FileNotFoundError:
        return 0


def thread_stats(pid: int, rt_above: int | None = None, cpu: int | None = None) -> list[dict]:
    """PID's threads but its main one, each as {tid, switches, cpu_ns}: the times it left
    its CPU (voluntary and involuntary context switches, /proc/PID/task/TID/status: an
    engine's measuring thread leaves it once a cycle, sleeping or yielding) and the CPU
    time it used (schedstat). Only those at a real-time policy above priority RT_ABOVE
    (rt_above=1: the measuring threads, not the host-stall observer at FIFO 1, docs/
    engine.md), or allowed on CPU alone (an engine under --policy other, pinned), when
    given. A thread that ends while it is read is left out."""
    out = []
    try:
        tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except FileNotFoundError:
        return out
    for tid in tids:
        if tid == pid:
            continue
        try:
            if rt_above is not None and (os.sched_getscheduler(tid) not in (os.SCHED_FIFO, os.SCHED_RR)
                                         or os.sched_getparam(tid).sched_priority <= rt_above):
                continue
            if cpu is not None and os.sched_getaffinity(tid) != {cpu}:
                continue
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                switches = sum(int(line.split()[1]) for line in f
                               if line.startswith(("voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:")))
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                cpu_ns = int(f.read().split()[0])
        except (OSError, ValueError):
            continue
        out.append({"tid": tid, "switches": switches, "cpu_ns": cpu_ns})
    return out


def most(pid: int, key: str, **which) -> int:
    """The largest KEY ('switches' or 'cpu_ns') of PID's threads that thread_stats(pid,
    **which) lists; 0 when none is."""
    return max((t[key] for t in thread_stats(pid, **which)), default=0)


def measured(pid: int, cycles: int) -> bool:
    """Whether engine PID has measured CYCLES cycles: one of its measuring threads (real-time,
    above the host-stall observer's FIFO 1) has left its CPU that often, once a cycle slept.
    Read from /proc, so it also sees an engine a test's SSH board runs (its processes are
    this machine's, in namespaces of their own)."""
    return most(pid, "switches", rt_above=1) >= cycles


def udp_ports(pid: int) -> set[int]:
    """The UDP ports PID's own sockets are bound to (/proc/PID/net/udp and udp6: its
    network namespace's tables, its sockets picked by inode)."""
    mine, ports = socket_inodes(pid), set()
    for table in ("udp", "udp6"):
        try:
            with open(f"/proc/{pid}/net/{table}") as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if int(fields[9]) in mine:
                        ports.add(int(fields[1].rsplit(":", 1)[1], 16))
        except (FileNotFoundError, StopIteration):
            continue
    return ports


def tcp_listening(port: int, pid: int) -> bool:
    """Whether one of PID's own sockets listens on TCP PORT (/proc/PID/net/tcp, tcp6)."""
    mine = socket_inodes(pid)
    for table in ("tcp", "tcp6"):
        try:
            with open(f"/proc/{pid}/net/{table}") as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if (fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port
                            and int(fields[9]) in mine):
                        return True
        except (FileNotFoundError, StopIteration):
            continue
    return False


def udp_datagrams_in(pid: int) -> int:
    """UDP datagrams delivered to sockets in PID's network namespace so far (InDatagrams
    of /proc/PID/net/snmp): in a namespace of a test's own, the frames that reached it."""
    try:
        with open(f"/proc/{pid}/net/snmp") as f:
            rows = [line.split() for line in f if line.startswith("Udp:")]
    except FileNotFoundError:
        return 0
    return int(rows[1][rows[0].index("InDatagrams")]) if len(rows) >= 2 else 0


def snmp(pid: int, proto: str, field: str) -> int:
    """A counter of PID's network namespace (/proc/PID/net/snmp, e.g. "Tcp", "InSegs";
    "Icmp", "InEchos"): 0 when PID or the counter is not there."""
    try:
        with open(f"/proc/{pid}/net/snmp") as f:
            rows = [line.split() for line in f if line.startswith(proto + ":")]
    except OSError:
        return 0
    return int(rows[1][rows[0].index(field)]) if len(rows) >= 2 and field in rows[0] else 0


def udp_bound(port: int, pid: int | None = None) -> bool:
    """Whether a socket of this network namespace (of process PID, if given) is bound to
    UDP PORT (/proc/net/udp and udp6): read, never bound here, so the look cannot take
    the port from the process that is about to bind it."""
    mine = socket_inodes(pid) if pid is not None else None
    for table in ("/proc/net/udp", "/proc/net/udp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if int(fields[1].rsplit(":", 1)[1], 16) == port and (mine is None or int(fields[9]) in mine):
                        return True
        except FileNotFoundError:
            continue
    return False


def cpu_ticks(pid: int) -> int:
    """The CPU time PID has used so far, in clock ticks (user + system, /proc/PID/stat)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return 0
    return int(fields[11]) + int(fields[12])


def start_udp_server(argv_for, tries: int = 3, **popen) -> tuple[subprocess.Popen, int]:
    """Start argv_for(port) on a free UDP port and return (process, port) once that process
    itself holds the port. The port is found free by binding it and letting it go, so
    another program may take it before the process binds it: then the process ends (the
    address in use) and a new port is tried, TRIES times in all."""
    import socket
    for _ in range(tries):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        proc = subprocess.Popen(argv_for(port), **popen)
        try:
            wait_for(lambda: udp_bound(port, proc.pid), f"UDP port {port} bound by the process", proc=proc)
            return proc, port
        except AssertionError:
            if proc.poll() is None or proc.returncode == -9:    # the wait timed out: wait_for killed it
                proc.kill()
                proc.communicate()
                raise
            proc.communicate()                                  # it ended (the port taken meanwhile)
    raise AssertionError(f"the process ended before binding its port, {tries} times")


def child_named(ppid: int, comm: str) -> int | None:
    """The pid of a child of PPID whose command name is COMM (/proc/PID/stat), or None."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        if name == comm[:15] and int(stat.rsplit(")", 1)[1].split()[1]) == ppid:
            return int(entry)
    return None


def engine_measuring(ppid: int, test: str = "latency", cycles: int = 100) -> int | None:
    """The pid of PPID's rtgauge-engine child once it measures TEST (its first argument;
    a run's privilege check runs a short `overhead` at SCHED_FIFO first, which is not
    the job) and has measured CYCLES cycles (measured()), else None: a run's job is
    under way and has something to keep."""
    pid = child_named(ppid, "rtgauge-engine")
    if not pid:
        return None
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
    except OSError:
        return None
    if len(argv) < 2 or argv[1].decode(errors="replace") != test:
        return None
    return pid if measured(pid, cycles) else None


def stopped_once(p: subprocess.Popen, ready, what: str, stop_s: float) -> tuple[str, str]:
    """A host stall as seen from inside: once READY() holds (WHAT, waited for as wait_for
    does), the whole process P is stopped for STOP_S (SIGSTOP: every thread at once) and
    continued; then P's (stdout, stderr) when it has ended. A P that ended meanwhile is
    no error here (its exit status is the caller's to judge)."""
    import signal
    try:
        wait_for(ready, what, proc=p)
        os.kill(p.pid, signal.SIGSTOP)
        time.sleep(stop_s)            # the stall's length: the test's subject, not a wait
    finally:
        try:
            os.kill(p.pid, signal.SIGCONT)
        except ProcessLookupError:
            pass
    return p.communicate(timeout=60)
