"""Who the threads in a whole-run trace are (docs/attribution.md, "Threads named"): a
trace names a thread by its comm (15 characters: `python3`, `sh`, `kworker/1:2`) and
pid; /proc has its command line and its parent. The tasks are read when the job starts
and when it ends (a thread seen in either is named), and rtgauge's own are marked: its
engine, its trace reader, and every other descendant of rtgauge (its load helpers), so
a spike caused by the tool itself reads as such. A thread that came and went between
the two looks is named by its comm only."""

from __future__ import annotations

import os
from pathlib import Path

PROC = Path("/proc")
# the engine's threads are the measuring ones: the analysis knows them by this role
from rtgauge.analysis.run.spikes import ENGINE_ROLE as ENGINE  # noqa: E402

READER, ITSELF, HELPER = "rtgauge's trace reader", "rtgauge itself", "rtgauge's load helper"


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _ppid(pid: int) -> int | None:
    stat = _read(PROC / str(pid) / "stat")
    if not stat:
        return None
    # pid (comm) state ppid ...: comm may hold spaces and parentheses, so from the last ')'
    rest = stat[stat.rfind(b")") + 2:].split()
    try:
        return int(rest[1])
    except (IndexError, ValueError):
        return None


def look(own: dict[int, str] | None = None, root_pid: int | None = None) -> dict[int, dict]:
    """{tid: {"cmdline": text or None (a kernel thread), "own": role or None}} for every
    thread now in /proc. own: {pid: role} known beforehand (the engine, the reader);
    every other descendant of root_pid (default: this process) is a load helper."""
    root = os.getpid() if root_pid is None else root_pid
    roles = {root: ITSELF, **(own or {})}
    procs: dict[int, tuple[int | None, str | None]] = {}
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        raw = _read(entry / "cmdline")
        if raw is None:
            continue
        cmd = raw.rstrip(b"\0").replace(b"\0", b" ").decode(errors="replace") or None
        procs[pid] = (_ppid(pid), cmd)

    def role(pid: int) -> str | None:
        seen = set()
        p: int | None = pid
        while p and p not in seen:
            if p in roles:
                return roles[p] if p == pid or roles[p] != ITSELF else HELPER
            seen.add(p)
            p = procs.get(p, (None, None))[0]
        return None

    out: dict[int, dict] = {}
    for pid, (_, cmd) in procs.items():
        info = {"cmdline": cmd, "own": role(pid)}
        try:
            tids = [int(t.name) for t in (PROC / str(pid) / "task").iterdir() if t.name.isdigit()]
        except OSError:
            tids = [pid]
        for tid in tids or [pid]:
            out[tid] = info
    return out


def merged(first: dict[int, dict], last: dict[int, dict]) -> dict[int, dict]:
    """Both looks, the later one where a pid is in both (a pid reused is its later task)."""
    return {**first, **last}
