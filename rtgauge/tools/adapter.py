"""What a tool adapter is: the one shape through which `run` (a cross-check) and
`import` (a file measured elsewhere) use a tool. The table of adapters is
rtgauge/tools/__init__.py; adding a tool is one file here with an `ADAPTER` and one line
there (docs/design.md, "Tool adapters").

An adapter has:

- `name`: the tool as a job names it (`cross_check = ["NAME"]`, `job.tool`);
- `sniff(found)`: whether an import's file (or directory) is this tool's output; the
  table is asked in order and the first that recognises the file reads it;
- `read(found, condition)`: the file as engine-contract documents, with the system facts
  and origin the file carries (an `Imported`); ValueError or UserError for a file the
  tool's reader refuses;
- `command(job, out_path, extra)`: the command line of a cross-check run of the job's
  settings, its result to out_path (None: rtgauge does not run the tool);
- `readable(data)`: the result file's bytes as JSON the strict reader takes (a board
  applies it there, so its result comes back as JSON);
- `to_document(raw, job, where, status, interrupted)`: the result, parsed, as an
  engine-contract document of that job;
- `local_unavailable()`: why a cross-check cannot run here (not installed, the kernel
  lacks its tracer), None when it can; by default whether `name` is on the PATH;
- `target_unavailable(session)`: the same for a board (a sentence following its address,
  "has no ..."); by default whether the board has `name` (session.has);
- `label`: the cross-check's name in messages ("rtla timerlat"; `name` when empty);
- `realtime_priority(job)`: the real-time priority a run of the job asks for, None when
  it asks for none (plan/privilege.py tries the highest once); None for a tool whose run
  rtgauge does not hold to the privilege check (rtla: it runs its own threads);
- `fallback_option`: the option with which the tool measures as SCHED_OTHER where real
  time is refused (`run --allow-fallback`); a tool that asks for real time without one
  is dropped from such a plan with a note;
- `takes_cpus(job)`: whether the job measures on a CPU list, so that `--rt-cpus`
  becomes its CPUs (plan/execute.py apply_overrides);
- `run_on_target(session, job, stop, limit, on_tick)`: the job run on a board over the
  run's connection, (its outcome, the command stored for it) (plan/execute.py
  measure_on_target); None: the tool is not run on a board (`unavailable_on` says so);
- `records_command_line`: the stored command of a run here is its command line (the
  result's path as RESULT); else the tool's name alone.

A cross-check is an adapter with a `command`, the engine excepted (`cross_checks()` in
rtgauge/tools/__init__.py); `unavailable_here()` and `unavailable_on(session)` apply the
availability checks with their defaults.

Every adapter's histograms go through one builder (rtgauge/tools/histogram.py)."""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from rtgauge.store import validate

JSON_START = (b"{", b"[")
# a load condition's name, as a job and an imported file's measurement name it
CONDITION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}", re.ASCII)


def as_is(data: bytes) -> bytes:
    return data


def never(job) -> bool:
    return False


def always(job) -> bool:
    return True


def program_on_target(command: Callable[[Any, str], list[str]], readable: Callable[[bytes], bytes],
                      stored: list[str]) -> Callable[..., tuple[Any, list[str]]]:
    """run_on_target for a program the board has: command(job, out_path) run there, its
    result made readable there; `stored` is the command the measurement keeps."""
    def run(session, job, stop, limit, on_tick):
        outcome = session.run_tool(lambda out: command(job, out), stop, limit, on_tick, readable=readable)
        return outcome, list(stored)
    return run


@dataclass
class Found:
    """A file (or directory) given to `rtgauge import`, as far as it was read to be
    recognised: its first bytes and, when it is JSON, its content (strictly parsed)."""
    path: Path
    head: bytes = b""
    data: Any = None
    is_dir: bool = False
    _read: dict = field(default_factory=dict, repr=False)

    @property
    def is_json(self) -> bool:
        return not self.is_dir and self.head.lstrip()[:1] in JSON_START

    @property
    def is_text(self) -> bool:
        return not self.is_dir and not self.is_json

    def json_in(self, name: str):
        """A JSON file of a directory (a regular file, not a symbolic link), read once;
        None when it is not there."""
        if name not in self._read:
            path = self.path / name
            self._read[name] = (validate.read_json_file(path) if path.is_file() and not path.is_symlink()
                                else None)
        return self._read[name]


@dataclass
class Imported:
    """An import's file as documents: a run measured elsewhere, before it is dry-read
    and stored (cli/importing.py). `fmt` is the origin's format; `paths` the files whose
    content is the run's identity (the source itself unless given); `source` the file the
    run is said to come from (the one given unless set); `what`, `profile_source` and
    `note` replace a foreign file's wording where given. `started` is an ISO 8601 time as
    the file gave it (the import checks it)."""
    fmt: str
    facts: dict
    docs: list[tuple[dict, dict]]
    detail: str = ""
    started: str | None = None
    finished: str | None = None
    paths: list[Path] | None = None
    source: Path | None = None
    what: str | None = None
    profile_source: str | None = None
    note: str | None = None


@dataclass(frozen=True)
class Adapter:
    name: str
    sniff: Callable[[Found], bool]
    read: Callable[[Found, str], Imported]
    command: Callable[..., list[str]] | None = None
    to_document: Callable[..., dict] | None = None
    readable: Callable[[bytes], bytes] = as_is
    local_unavailable: Callable[[], str | None] | None = None
    target_unavailable: Callable[[Any], str | None] | None = None
    label: str = ""
    realtime_priority: Callable[[Any], int | None] | None = None
    fallback_option: str | None = None
    takes_cpus: Callable[[Any], bool] = never
    run_on_target: Callable[..., tuple[Any, list[str]]] | None = None
    records_command_line: bool = False

    @property
    def title(self) -> str:
        """The cross-check's name in messages."""
        return self.label or self.name

    def unavailable_here(self) -> str | None:
        """Why this tool cannot run on this machine (None: it can)."""
        if self.local_unavailable is not None:
            return self.local_unavailable()
        return None if shutil.which(self.name) else f"{self.name} is not installed"

    def unavailable_on(self, session) -> str | None:
        """Why it cannot run on a board (a sentence following the board's address; None: it can)."""
        if self.run_on_target is None:
            return f"cannot run {self.title} from rtgauge yet"
        if self.target_unavailable is not None:
            return self.target_unavailable(session)
        return None if session.has(self.name) else f"has no {self.name}"


NO_FACTS = {"hostname": None, "machine_id": None, "kernel_release": None, "kernel_version": None, "arch": None,
            "cpu_model": None, "cpus": None, "preempt_model": None}


def no_facts(why: str) -> dict:
    """The system facts of a file that records none (why: the facts_source sentence)."""
    return {**NO_FACTS, "facts_source": why}


def foreign_job(name: str, condition: str, tool: str, command: list[str]) -> dict:
    """How an imported tool's measurement ran: a reference (cross-check) measurement of
    the latency kind under the given load condition."""
    return {"name": f"{name}@{condition}", "tool": tool, "test": "latency", "condition": condition,
            "reference": True, "load": {"condition": condition, "imported": True}, "started_at": None,
            "duration_s": None, "exit_status": None, "command": command, "error": None}
