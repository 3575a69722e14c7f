"""A target held open for a whole `rtgauge run`, driven from the synchronous
orchestrator (rtgauge/plan/execute.py): the asyncio target runs on an event loop
of its own in a thread, one connection for every job.

    with TargetSession("ssh://root@board") as t:     # refuses an unreachable,
        facts = t.facts()                             # unauthenticated or unprivileged target
        outcome = t.run_engine(["latency", ...], stop, time_limit_s, on_tick)
"""

from __future__ import annotations

import asyncio
import shlex
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from rtgauge.errors import RunFailed
from rtgauge.owner import hash_machine_id
from rtgauge.sysinfo.facts import parse_cmdline, read_preemption
from rtgauge.target import target
from rtgauge.target.remote import ConnectionLost, RemoteRun

# one line per fact: key=value, read with the plainest commands a board has
_FACTS = "; ".join(f'echo "{k}=$({cmd})"' for k, cmd in (
    ("hostname", "uname -n"),
    ("kernel_release", "uname -r"),
    ("kernel_version", "uname -v"),
    ("arch", "uname -m"),
    ("cpus", "getconf _NPROCESSORS_ONLN 2>/dev/null || grep -c ^processor /proc/cpuinfo"),
    ("cpu_model", "grep -m1 -i -e '^model name' -e '^cpu model' -e '^Hardware' /proc/cpuinfo 2>/dev/null "
                  "| cut -d: -f2-"),
    ("machine_id", "cat /etc/machine-id 2>/dev/null"),
    ("cmdline", "cat /proc/cmdline 2>/dev/null"),
    ("preempt", "cat /sys/kernel/debug/sched/preempt 2>/dev/null"),
    ("realtime", "cat /sys/kernel/realtime 2>/dev/null"),
))
# where read_preemption looks for the two files above
_PREEMPT_FILES = {"preempt": "sys/kernel/debug/sched/preempt", "realtime": "sys/kernel/realtime"}


@dataclass
class TargetOutcome:
    run: RemoteRun | None   # None: nothing came back (the connection was lost)
    interrupted: bool       # stopped by Ctrl-C / SIGTERM, or the connection was lost
    error: str | None       # what went wrong: the connection lost, the time limit passed...


class TargetSession:
    def __init__(self, address: str, engine: Path | None = None):
        self.address = address
        self.engine = engine
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="rtgauge-target", daemon=True)
        self.target = target(address)
        self._task: asyncio.Task | None = None

    def __enter__(self) -> TargetSession:
        self.thread.start()
        try:
            self._call(self.target.__aenter__())
            if self.engine is None and hasattr(self.target, "machine") and str(self.target) != "local":
                # built (or taken from the cache) before anything is stored
                from rtgauge.target import engines
                self.engine = engines.build(engines.arch_for_machine(self.target.machine)).binary
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _call(self, coro, timeout: float | None = None):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        """Disconnect and stop the loop's thread. The loop is left open: the child
        watcher may still report the exit of a ProxyCommand process to it."""
        if self.thread.is_alive():
            try:
                self._call(self.target.__aexit__(None, None, None), 15)
            except Exception:
                pass
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)

    def sh(self, command: str) -> str:
        """Run a shell command on the target; its output ('' when it failed)."""
        return self._call(self.target._sh(command, check=False), 60)

    def has(self, program: str) -> bool:
        return bool(self.sh(f"command -v {shlex.quote(program)} 2>/dev/null").strip())

    def facts(self) -> dict:
        """The target's identity and a few facts, read over the connection."""
        facts: dict = {}
        for line in self.sh(_FACTS).splitlines():
            key, _, value = line.partition("=")
            facts[key] = value.strip() or None
        cpus = facts.get("cpus")
        facts["cpus"] = int(cpus) if cpus and cpus.isdigit() else None
        facts["machine_id"] = hash_machine_id(facts.get("machine_id"))
        # the preemption model, by the doctor's own reader, from the target's files
        with tempfile.TemporaryDirectory(prefix="rtgauge-target-") as root:
            for key, rel in _PREEMPT_FILES.items():
                text = facts.pop(key, None)
                if text:
                    Path(root, rel).parent.mkdir(parents=True, exist_ok=True)
                    Path(root, rel).write_text(text + "\n")
            facts.update(read_preemption(root, facts.get("kernel_version"), {},
                                         parse_cmdline(facts.get("cmdline") or "")))
        facts["target"] = self.address
        facts["facts_from"] = f"{self.address} (identity only: the doctor's checks read this machine, not the target)"
        return facts

    async def _run(self, start) -> TargetOutcome:
        self._task = asyncio.current_task()
        self.target.last_run = None
        try:
            return TargetOutcome(await start(), False, None)
        except asyncio.CancelledError:
            return TargetOutcome(self.target.last_run, True, None)
        except ConnectionLost as e:
            return TargetOutcome(None, True, str(e))
        except RunFailed as e:     # past its time limit (stopped there), a command failing there
            return TargetOutcome(self.target.last_run, False, str(e))

    def run_engine(self, args: list[str], stop, time_limit_s: float | None = None,
                   on_tick=None) -> TargetOutcome:
        """Run one engine test there. When `stop` becomes true (Ctrl-C), the remote
        engine is stopped and what it measured comes back, marked interrupted."""
        return self._until_done(lambda: self.target.run_engine(args, engine=self.engine, time_limit_s=time_limit_s),
                                stop, on_tick)

    def run_tool(self, command, stop, time_limit_s: float | None = None, on_tick=None) -> TargetOutcome:
        """Run a program the target has (SshTarget.run_tool), stopped the same way."""
        return self._until_done(lambda: self.target.run_tool(command, time_limit_s=time_limit_s), stop, on_tick)

    def _until_done(self, start, stop, on_tick) -> TargetOutcome:
        future = asyncio.run_coroutine_threadsafe(self._run(start), self.loop)
        started, cancelled = time.monotonic(), False
        while True:
            try:
                return future.result(0.1)
            except TimeoutError:
                pass
            if stop and not cancelled and self._task is not None:
                self.loop.call_soon_threadsafe(self._task.cancel)
                cancelled = True
            if on_tick and not cancelled:
                on_tick(time.monotonic() - started)


