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
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from rtgauge.errors import require_extra, RunFailed
from rtgauge.remote import engines, target
from rtgauge.remote.facts import target_facts
from rtgauge.remote.ssh import HEARTBEAT, ConnectionLost, RemoteRun

asyncssh = require_extra("asyncssh", "ssh", "ssh:// targets")

# a program the login finds on its PATH, a regular file it may execute (bash's
# `command -v` also names a file it may not execute); said by its name, one a line
HAS = 'for x in {0}; do p=$(command -v "$x" 2>/dev/null) && [ -f "$p" ] && [ -x "$p" ] && echo "$x"; done; true'
# the programs a run may look for there (loads, the cross-checks, --tuned): looked
# for together the first time one is (a command there takes seconds under emulation)
PROGRAMS = ("setsid", "sh", "stress-ng", "hackbench", "cyclictest", "rtla", "unshare", "ip", "cmp")


@dataclass
class TargetOutcome:
    run: RemoteRun | None   # None: nothing came back (the connection was lost)
    interrupted: bool       # stopped by Ctrl-C / SIGTERM, or the connection was lost
    error: str | None       # what went wrong: the connection lost, the time limit passed...


async def _let_the_rest_finish(grace_s: float) -> None:
    """Let the loop's other tasks but the heartbeats (which run until cancelled) end
    by themselves, for up to grace_s: a stop whose caller stopped waiting for it on a
    loaded machine may still be reading its files back or removing its directory there."""
    rest = [t for t in asyncio.all_tasks() if t is not asyncio.current_task() and t.get_name() != HEARTBEAT]
    if rest:
        await asyncio.wait(rest, timeout=grace_s)


async def _cancel_the_rest() -> None:
    """Cancel every other task of the loop and wait for them to end."""
    rest = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for t in rest:
        t.cancel()
    await asyncio.gather(*rest, return_exceptions=True)


class TargetSession:
    def __init__(self, address: str, engine: Path | None = None, needs_engine: bool = True):
        self.address = address
        self.engine = engine
        self.needs_engine = needs_engine
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="rtgauge-target", daemon=True)
        self.target = target(address)
        self._patience = getattr(self.target, "patience", 1.0)   # a slow target: longer time limits
        self._task: asyncio.Task | None = None

    def __enter__(self) -> TargetSession:
        self.thread.start()
        try:
            self._call(self.target.__aenter__())
            if self.needs_engine and self.engine is None and hasattr(self.target, "machine") and str(self.target) != "local":
                # built (or taken from the cache) before anything is stored
                self.engine = engines.build(engines.arch_for_machine(self.target.machine)).binary
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _call(self, coro, timeout: float | None = None):
        try:
            return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)
        except (asyncssh.Error, OSError) as e:     # a channel refused, the connection gone
            why = getattr(e, "reason", None) or str(e) or type(e).__name__
            raise ConnectionLost(f"lost the connection to {self.address} ({why}); what rtgauge started there "
                                 "stops by itself within seconds.") from None

    def close(self) -> None:
        """Disconnect and stop the loop's thread. The loop is left open: the child
        watcher may still report the exit of a ProxyCommand process to it."""
        if self.thread.is_alive():
            try:      # before disconnecting: the stops still on their way there
                self._call(_let_the_rest_finish(20 * self._patience), 25 * self._patience)
            except Exception:
                pass
            try:
                self._call(self.target.__aexit__(None, None, None), 15 * self._patience)
            except Exception:
                pass
            try:      # what a lost connection left running (a keeper's heartbeat): cancelled, not destroyed
                self._call(_cancel_the_rest(), 5)
            except Exception:
                pass
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)

    def sh(self, command: str) -> str:
        """Run a shell command on the target; its output ('' when it failed)."""
        return self._call(self.target._sh(command, check=False), 60 * self._patience)

    def sh_input(self, command: str, text: str) -> str:
        """Run a shell command there with `text` on its stdin; its output."""
        return self._call(self.target._sh(command, input=text.encode(), check=False), 60 * self._patience)

    def has(self, program: str) -> bool:
        """Whether the target has `program` on the login's PATH (remembered for the session)."""
        if not hasattr(self, "_has"):
            self._has: dict[str, bool] = {}
        if program not in self._has:
            names = list(dict.fromkeys([program, *(p for p in PROGRAMS if p not in self._has)]))
            found = set(self.sh(HAS.format(" ".join(shlex.quote(n) for n in names))).split())
            self._has.update({n: n in found for n in names})
        return self._has[program]

    def facts(self) -> dict:
        """The doctor's facts of the target: its /proc, /sys and /etc read over the
        connection by the facts readers (rtgauge/remote/facts.py)."""
        return target_facts(self.read_files, self.address)

    def read_files(self, paths: str, extra=()) -> dict[str, bytes]:
        """Files (paths and globs) of the target in one read (SshTarget.read_files)."""
        return self._call(self.target.read_files(paths, extra), 60 * self._patience)

    def start_kept(self, argv, atexit: str | None = None):
        """A load (or a tuning) kept on the target while this session lives (SshTarget.start_kept)."""
        return self._call(self.target.start_kept(argv, atexit), 60 * self._patience)

    def kept_running(self, kept) -> bool:
        return self.target.kept_running(kept)

    def stop_kept(self, kept, files: tuple[str, ...] = ("log",)) -> dict[str, bytes]:
        return self._call(self.target.stop_kept(kept, files), 40 * self._patience)

    def stat_lines(self) -> bytes:
        return self._call(self.target.stat_lines(), 20 * self._patience)

    def _numbers(self) -> None:
        """The target's online CPUs and clock ticks a second, read once, in one command
        (the second is first needed while a load runs there, when a command is slow)."""
        if not hasattr(self, "_cpus"):
            out = self.sh('echo "cpus=$(getconf _NPROCESSORS_ONLN 2>/dev/null || grep -c ^processor /proc/cpuinfo)"; '
                          'echo "ticks=$(getconf CLK_TCK 2>/dev/null)"')
            said = dict(line.strip().partition("=")[::2] for line in out.splitlines() if "=" in line)
            cpus, ticks = said.get("cpus", ""), said.get("ticks", "")
            self._cpus = int(cpus) if cpus.isdigit() and int(cpus) > 0 else 1
            self._ticks = int(ticks) if ticks.isdigit() and int(ticks) > 0 else 100

    def cpus(self) -> int:
        """The target's online CPUs (the workers a load starts there)."""
        self._numbers()
        return self._cpus

    def clock_ticks(self) -> int:
        self._numbers()
        return self._ticks

    async def _run(self, start) -> TargetOutcome:
        self._task = asyncio.current_task()
        self.target.last_run = None
        try:
            return TargetOutcome(await start(), False, None)
        except asyncio.CancelledError:
            return TargetOutcome(self.target.last_run, True, None)
        except ConnectionLost as e:
            return TargetOutcome(None, True, str(e))
        except (asyncssh.Error, OSError) as e:    # a channel refused or closed before the guard ran
            why = getattr(e, "reason", None) or str(e) or type(e).__name__
            return TargetOutcome(None, True, f"lost the connection to {self.address} ({why}).")
        except RunFailed as e:     # past its time limit (stopped there), a command failing there
            return TargetOutcome(self.target.last_run, False, str(e))

    def run_engine(self, args: list[str], stop, time_limit_s: float | None = None,
                   on_tick=None) -> TargetOutcome:
        """Run one engine test there. When `stop` becomes true (Ctrl-C), the remote
        engine is stopped and what it measured comes back, marked interrupted."""
        return self._until_done(lambda: self.target.run_engine(args, engine=self.engine, time_limit_s=time_limit_s),
                                stop, on_tick)

    def run_tool(self, command, stop, time_limit_s: float | None = None, on_tick=None,
                 readable=None) -> TargetOutcome:
        """Run a program the target has (SshTarget.run_tool), stopped the same way."""
        return self._until_done(lambda: self.target.run_tool(command, time_limit_s=time_limit_s, readable=readable),
                                stop, on_tick)

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


