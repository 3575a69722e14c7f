"""`rtgauge tune`: set at run time what `doctor` flags, and put it back exactly.

apply() writes each setting and records, in a JSON state file under the data
directory, the file's bytes before, the value written and the value that restores
it; revert() writes the restoring values back in reverse order and checks that every
file reads back byte for byte as before. Settings:

- governor: `performance` on every CPU with cpufreq;
- THP: `never` for transparent_hugepage/enabled and /defrag;
- IRQ affinity: every IRQ (and the default for new ones) onto the housekeeping CPUs,
  away from the measured ones; IRQs the kernel refuses to move (managed) are listed;
- RT throttling off: only when asked (allow_rt_unthrottled), and then a detached
  watchdog process restores it at a deadline even if rtgauge dies;
- cpu_dma_latency: nothing to set, the engine holds it at 0 during its runs.

Every path is taken relative to `root` so tests can use a fake tree."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from rtgauge.errors import UserError
from rtgauge.sysinfo.readers import bracketed_choice, format_cpu_list, parse_cpu_list

RT_RUNTIME = "/proc/sys/kernel/sched_rt_runtime_us"
THP_FILES = ("/sys/kernel/mm/transparent_hugepage/enabled", "/sys/kernel/mm/transparent_hugepage/defrag")
STATE_NAME = "tune-state.json"


def default_state_path(db: str | None = None) -> Path:
    """Beside the SQLite database when one is given as a file, else in the data dir."""
    from rtgauge.store.urls import default_db_path
    if db and "://" not in db:
        return Path(db).expanduser().resolve().parent / STATE_NAME
    if db and db.startswith("sqlite:///"):
        return Path(db[len("sqlite:///"):]).resolve().parent / STATE_NAME
    return default_db_path().parent / STATE_NAME


@dataclass
class Change:
    setting: str
    path: str            # as on the live system
    before: str          # the file's bytes before (latin-1, exact)
    new: str             # what was written
    restore: str         # what writes `before` back

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class Tuner:
    root: str = "/"
    changes: list[Change] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    watchdog: dict | None = None

    def p(self, path: str) -> Path:
        return Path(self.root, path.lstrip("/"))

    def read_bytes(self, path: str) -> str | None:
        try:
            return self.p(path).read_bytes().decode("latin-1")
        except OSError:
            return None

    def set(self, setting: str, path: str, value: str, restore_of=lambda before: before.strip()) -> bool:
        """Write value to path, recording how to undo it; a refused write is listed, not fatal."""
        before = self.read_bytes(path)
        if before is None:
            return False
        restore = restore_of(before)
        if restore == value:
            return False               # already as wanted: nothing to change or revert
        try:
            write_value(self.p(path), value)
        except OSError as e:
            self.skipped.append({"setting": setting, "path": path, "why": e.strerror or str(e)})
            return False
        self.changes.append(Change(setting, path, before, value, restore))
        return True

    # -- the settings -----------------------------------------------------------------

    def governors(self) -> None:
        cpus = sorted(self.p("/sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_governor"))
        if not cpus:
            self.notes.append("governor: no cpufreq here (the frequency is fixed or set by the host)")
        for g in cpus:
            rel = "/" + str(g.relative_to(self.root)).lstrip("/")
            self.set("governor", rel, "performance")

    def thp(self) -> None:
        for path in THP_FILES:
            if self.read_bytes(path) is None:
                self.notes.append(f"thp: {path} missing")
                continue
            self.set("thp", path, "never", restore_of=lambda b: bracketed_choice(b.strip()) or b.strip())

    def irq_affinity(self, housekeeping: list[int]) -> None:
        if not housekeeping:
            self.notes.append("irq affinity: no housekeeping CPU to move interrupts to; left alone")
            return
        target = format_cpu_list(housekeeping)
        irq_dir = self.p("/proc/irq")
        mask = sum(1 << c for c in housekeeping)
        if self.read_bytes("/proc/irq/default_smp_affinity") is not None:
            width = len(self.read_bytes("/proc/irq/default_smp_affinity").strip())
            self.set("irq_affinity", "/proc/irq/default_smp_affinity", f"{mask:0{width}x}",
                     restore_of=lambda b: b.strip())
        for d in sorted((x for x in irq_dir.glob("*") if x.name.isdigit()), key=lambda x: int(x.name)):
            path = f"/proc/irq/{d.name}/smp_affinity_list"
            self.set("irq_affinity", path, target)

    def rt_throttling_off(self, watchdog_after_s: float) -> None:
        before = self.read_bytes(RT_RUNTIME)
        if before is None:
            self.notes.append("rt throttling: no sched_rt_runtime_us here")
            return
        if before.strip() == "-1":
            self.notes.append("rt throttling: already off")
            return
        # the watchdog first: if rtgauge dies after the write, the limit still comes back
        self.watchdog = start_watchdog(self.p(RT_RUNTIME), before.strip(), watchdog_after_s)
        if not self.set("rt_throttling", RT_RUNTIME, "-1"):
            stop_watchdog(self.watchdog)
            self.watchdog = None

    def state(self) -> dict:
        return {"version": 1, "root": self.root, "applied_at": time.time(),
                "changes": [c.to_dict() for c in self.changes], "skipped": self.skipped,
                "notes": self.notes, "watchdog": self.watchdog}


def write_value(path: Path, value: str) -> None:
    # one write() call: sysfs/procfs take a value per write
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    try:
        os.write(fd, value.encode("latin-1"))
    finally:
        os.close(fd)


def start_watchdog(path: Path, value: str, after_s: float) -> dict:
    """A detached process (own session, not killed with rtgauge) that writes `value` back
    after `after_s` seconds: the safety net for RT throttling switched off."""
    script = f"sleep {int(after_s) + 1}; printf %s {int(value)} > '{path}'"
    p = subprocess.Popen(["sh", "-c", script], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    return {"pid": p.pid, "restores": str(path), "value": value, "deadline": time.time() + after_s + 1,
            "script": script}


def stop_watchdog(w: dict | None) -> None:
    if not w:
        return
    try:
        with open(f"/proc/{w['pid']}/cmdline", "rb") as f:
            cmd = f.read().split(b"\0")
        if w["script"].encode() in cmd:
            os.killpg(w["pid"], signal.SIGKILL)
    except (OSError, ProcessLookupError):
        pass


def apply(state_path: Path, measured: list[int], housekeeping: list[int], root: str = "/",
          rt_unthrottled_for_s: float | None = None) -> dict:
    """Apply every setting; write the state file; return the state. A state file that
    is already there means an earlier apply was not reverted: refuse."""
    if state_path.exists():
        raise UserError(f"settings are already tuned (state in {state_path}); run `rtgauge tune --revert` "
                        "first.")
    tuner = Tuner(root)
    try:
        tuner.governors()
        tuner.thp()
        tuner.irq_affinity(housekeeping)
        if rt_unthrottled_for_s is not None:
            tuner.rt_throttling_off(rt_unthrottled_for_s)
        tuner.notes.append("cpu_dma_latency: held at 0 by the engine during every run; nothing to set")
        state = tuner.state()
        state["measured_cpus"] = format_cpu_list(measured)
        state["housekeeping_cpus"] = format_cpu_list(housekeeping)
        state_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = state_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=1))
        os.replace(tmp, state_path)
    except BaseException:
        restore_changes(tuner.root, tuner.changes)
        stop_watchdog(tuner.watchdog)
        raise
    return state


def restore_changes(root: str, changes: list[Change]) -> list[str]:
    """Write each change back, last first; returns the paths that do not read back as before."""
    wrong = []
    for c in reversed(changes):
        path = Path(root, c.path.lstrip("/"))
        try:
            write_value(path, c.restore)
            if path.read_bytes().decode("latin-1") != c.before:
                wrong.append(c.path)
        except OSError as e:
            wrong.append(f"{c.path} ({e.strerror})")
    return wrong


def revert(state_path: Path) -> dict:
    if not state_path.exists():
        raise UserError(f"nothing to revert: no tune state at {state_path} (was `rtgauge tune --apply` run "
                        "with another --state?).")
    try:
        state = json.loads(state_path.read_text())
        changes = [Change(**c) for c in state["changes"]]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise UserError(f"the tune state {state_path} is unreadable ({e}); restore the settings by hand "
                        "from its contents.")
    wrong = restore_changes(state.get("root", "/"), changes)
    stop_watchdog(state.get("watchdog"))
    if wrong:
        raise UserError(f"reverted, but {len(wrong)} setting(s) do not read back as before: {', '.join(wrong)}; "
                        f"the state stays in {state_path}.")
    state_path.unlink()
    return state


def housekeeping_for(measured: list[int], online: list[int]) -> list[int]:
    return [c for c in online if c not in measured]


def online_cpus(root: str = "/") -> list[int]:
    try:
        return parse_cpu_list(Path(root, "sys/devices/system/cpu/online").read_text().strip())
    except OSError:
        return sorted(os.sched_getaffinity(0))
