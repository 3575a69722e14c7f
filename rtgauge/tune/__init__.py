"""`rtgauge tune`: set at run time what `doctor` flags, and put it back exactly.

apply() writes each setting and records, in a JSON state file in a directory only
root can write (/run/rtgauge, mode 0700: gone at reboot, as the tuning is), the file's
bytes before, the value written and the value that restores it; revert() writes the restoring values back in reverse order and checks that every
file reads back byte for byte as before. Settings:

- governor: `performance` on every CPU with cpufreq;
- THP: `never` for transparent_hugepage/enabled and /defrag;
- IRQ affinity: every IRQ (and the default for new ones) onto the housekeeping CPUs,
  away from the measured ones; IRQs the kernel refuses to move (managed) are listed;
- RT throttling off: only when asked (allow_rt_unthrottled), and then a detached
  watchdog process restores it at a deadline even if rtgauge dies;
- cpu_dma_latency: nothing to set, the engine holds it at 0 during its runs.

Every path is taken relative to `root` so tests can use a fake tree.

The state file is trusted for nothing: it is opened without following a symlink
(O_NOFOLLOW), must belong to this user in a directory no one else can write, and is
checked against a schema before use — every path must be one this tuner changes
(cpufreq governors, THP, IRQ affinity, sched_rt_runtime_us) and every value one such a
file holds. It is written to a new file (O_EXCL|O_NOFOLLOW) then renamed over, under a
lock file opened the same way. It names its owner: a tuning applied by `run --tuned`
whose process is gone is stale; the next `--tuned` run reverts it and `doctor` names it."""

from __future__ import annotations

import fcntl
import json
import os
import re
import signal
import stat
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import jsonschema

from rtgauge import owner
from rtgauge.errors import UserError
from rtgauge.bounds import format_cpu_list, parse_cpu_list
from rtgauge.store.validate import loads_strict
from rtgauge.sysinfo.readers import bracketed_choice

RT_RUNTIME = "/proc/sys/kernel/sched_rt_runtime_us"
THP_FILES = ("/sys/kernel/mm/transparent_hugepage/enabled", "/sys/kernel/mm/transparent_hugepage/defrag")
STATE_NAME = "tune-state.json"


STATE_DIR = "/run/rtgauge"
STATE_DIR_VAR = "RTGAUGE_STATE_DIR"      # another directory (tests); it must pass the same checks
STATE_MAX_BYTES = 16 * 1024 * 1024


def state_dir() -> Path:
    return Path(os.environ.get(STATE_DIR_VAR) or STATE_DIR)


def default_state_path(db: str | None = None) -> Path:
    """The state file: in rtgauge's own root-owned directory, never beside the database
    (`db` is accepted for old callers and ignored)."""
    return state_dir() / STATE_NAME


def check_private_dir(directory: Path, create: bool = False) -> None:
    """The directory holding a state file: ours (this user's), not a symlink, writable by
    nobody else — so no one can plant a file or a symlink in it."""
    if create and directory == state_dir():
        try:
            os.makedirs(directory, mode=0o700, exist_ok=True)
        except OSError as e:
            raise UserError(f"cannot create the tuning state directory {directory} ({e.strerror}); "
                            "run rtgauge tune as root.") from None
    try:
        st = os.lstat(directory)
    except OSError as e:
        if e.errno == 2 and not create:
            return
        raise UserError(f"cannot use {directory} for the tuning state ({e.strerror}); run as root.") from None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
        raise UserError(f"{directory} is not a private directory of this user (a symlink, someone else's, "
                        "or writable by others), so a tuning state there could be planted; use the default "
                        f"{STATE_DIR} or a directory only you can write.")


# -- the state file: validated before use ----------------------------------------------

CHANGE_RULES = {
    # setting: (path pattern, value pattern)
    "governor": (r"/sys/devices/system/cpu/cpu\d{1,5}/cpufreq/scaling_governor", r"[a-z0-9_]{1,32}"),
    "thp": ("|".join(map(re.escape, THP_FILES)), r"[a-z_+]{1,32}"),
    "irq_affinity": (r"/proc/irq/(\d{1,6}/smp_affinity_list|default_smp_affinity)", r"[0-9a-f,\-]{1,2048}"),
    "rt_throttling": (re.escape(RT_RUNTIME), r"-?\d{1,12}"),
}
STATE_SCHEMA = {
    "type": "object",
    "required": ["version", "changes"],
    "properties": {
        "version": {"const": 1},
        "root": {"type": "string", "maxLength": 4096},
        "applied_by": {"enum": ["tune --apply", "run --tuned"]},
        "owner": {"type": ["object", "null"]},
        "changes": {"type": "array", "maxItems": 100_000, "items": {
            "type": "object", "required": ["setting", "path", "before", "new", "restore"],
            "additionalProperties": False,
            "properties": {"setting": {"enum": list(CHANGE_RULES)},
                           **{k: {"type": "string", "maxLength": 4096} for k in ("path", "before", "new", "restore")}},
        }},
        "skipped": {"type": "array", "items": {"type": "object"}},
        "notes": {"type": "array", "items": {"type": "string", "maxLength": 4096}},
        "watchdog": {"type": ["object", "null"], "required": ["pid", "restores", "value", "script"],
                     "properties": {"pid": {"type": "integer", "minimum": 2, "maximum": 2**22},
                                    "restores": {"type": "string", "maxLength": 4096},
                                    "value": {"type": "string", "pattern": r"^-?\d{1,12}$"},
                                    "script": {"type": "string", "maxLength": 8192}}},
    },
}


def check_change(c: dict, root: str) -> None:
    path_re, value_re = CHANGE_RULES[c["setting"]]
    if not re.fullmatch(path_re, c["path"]):
        raise ValueError(f"{c['path'][:80]!r} is not a file the {c['setting']} tuning changes")
    for key in ("new", "restore"):
        if not re.fullmatch(value_re, c[key]):
            raise ValueError(f"{key} value {c[key][:40]!r} of {c['path']} is not one that file holds")
    real = os.path.realpath(Path(root, c["path"].lstrip("/")))
    if not any(real.startswith(os.path.join(os.path.realpath(root), top) + "/") for top in ("sys", "proc")):
        raise ValueError(f"{c['path']} leads outside /sys and /proc")


def read_state(state_path: Path, root: str = "/") -> dict:
    """The state file, checked: opened without following a symlink, ours, bounded,
    valid JSON matching STATE_SCHEMA, every change a known file with a plausible value."""
    check_private_dir(state_path.parent)
    try:
        fd = os.open(state_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as e:
        if e.errno == 2:
            raise FileNotFoundError(str(state_path)) from None
        raise UserError(f"cannot open the tune state {state_path} ({e.strerror}; a symlink is refused); "
                        "remove it and revert the settings by hand.") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_size > STATE_MAX_BYTES:
            raise UserError(f"the tune state {state_path} is not a regular file of this user below "
                            f"{STATE_MAX_BYTES // 2**20} MiB; it was not written by rtgauge: remove it.")
        with os.fdopen(fd, "rb", closefd=False) as f:
            raw = f.read(STATE_MAX_BYTES + 1)
    finally:
        os.close(fd)
    try:
        state = loads_strict(raw.decode("utf-8"))
        jsonschema.validate(state, STATE_SCHEMA)
        if state.get("root", "/") != root:
            raise ValueError(f"it names the tree {state.get('root')!r}, not {root!r}")
        for c in state["changes"]:
            check_change(c, root)
        w = state.get("watchdog")
        if w and w["restores"] != str(Path(root, RT_RUNTIME.lstrip("/"))):
            raise ValueError("its watchdog restores another file than sched_rt_runtime_us")
    except (ValueError, RecursionError, UnicodeDecodeError, jsonschema.ValidationError) as e:
        why = e.message if isinstance(e, jsonschema.ValidationError) else str(e)
        raise UserError(f"the tune state {state_path} is not one rtgauge wrote ({why[:160]}); nothing was "
                        "changed: remove it and check the settings with `rtgauge doctor`.") from None
    return state


def write_state(state_path: Path, state: dict) -> None:
    """Atomically: a new file (O_EXCL|O_NOFOLLOW, mode 0600) renamed over the state."""
    check_private_dir(state_path.parent, create=True)
    tmp = state_path.with_name(f".{state_path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "w", closefd=False) as f:
            f.write(json.dumps(state, indent=1))
            f.flush()
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise
    os.close(fd)
    os.replace(tmp, state_path)


class state_lock:
    """An exclusive lock beside the state (O_NOFOLLOW: a planted symlink is refused)."""

    def __init__(self, state_path: Path):
        self.path = state_path.with_name(state_path.name + ".lock")

    def __enter__(self):
        check_private_dir(self.path.parent, create=True)
        try:
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as e:
            raise UserError(f"cannot open the lock {self.path} ({e.strerror}; a symlink is refused); "
                            "remove it.") from None
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        os.close(self.fd)


def stale_owner(state: dict) -> dict | None:
    """The owner of a tuning applied by `run --tuned` whose process is gone (it was
    killed before it could revert); None when its owner runs or it was applied by hand."""
    if state.get("applied_by") != "run --tuned":
        return None
    who = state.get("owner")
    return who if owner.alive(who) is False else None


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
    # one write() call: sysfs/procfs take a value per write; never through a symlink
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW)
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
          rt_unthrottled_for_s: float | None = None, applied_by: str = "tune --apply") -> dict:
    """Apply every setting; write the state file; return the state. A state file that
    is already there means an earlier apply was not reverted: refuse."""
    with state_lock(state_path):
        if os.path.lexists(state_path):
            raise UserError(f"settings are already tuned (state in {state_path}); run `rtgauge tune --revert` "
                            "first.")
        return _apply(state_path, measured, housekeeping, root, rt_unthrottled_for_s, applied_by)


def _apply(state_path, measured, housekeeping, root, rt_unthrottled_for_s, applied_by) -> dict:
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
        state["applied_by"] = applied_by
        state["owner"] = owner.me() if applied_by == "run --tuned" else None
        write_state(state_path, state)
    except BaseException:
        restore_changes(tuner.root, tuner.changes)
        stop_watchdog(tuner.watchdog)
        raise
    return state


def restore_changes(root: str, changes: list[Change]) -> list[str]:
    """Write each change back, last first; returns the paths that do not read back as before."""
    wrong = []
    for c in reversed(changes):
        check_change(c.to_dict(), root)
        path = Path(root, c.path.lstrip("/"))
        try:
            write_value(path, c.restore)
            if path.read_bytes().decode("latin-1") != c.before:
                wrong.append(c.path)
        except OSError as e:
            wrong.append(f"{c.path} ({e.strerror})")
    return wrong


def revert(state_path: Path, root: str | None = None) -> dict:
    """Write back what the state records. root: the tree the state must name ("/" for
    the command line; None takes the state's own, for tests on a fake tree)."""
    with state_lock(state_path):
        return _revert(state_path, root)


def _revert(state_path: Path, root: str | None) -> dict:
    try:
        if root is None:
            root = _peek_root(state_path)
        state = read_state(state_path, root)
    except FileNotFoundError:
        raise UserError(f"nothing to revert: no tune state at {state_path} (was `rtgauge tune --apply` run "
                        "with another --state?).") from None
    changes = [Change(**c) for c in state["changes"]]
    wrong = restore_changes(root, changes)
    stop_watchdog(state.get("watchdog"))
    if wrong:
        raise UserError(f"reverted, but {len(wrong)} setting(s) do not read back as before: {', '.join(wrong)}; "
                        f"the state stays in {state_path}.")
    state_path.unlink()
    return state


def _peek_root(state_path: Path) -> str:
    """The tree a state names, read only to choose what read_state checks it against
    (tests pass fake trees); read_state then checks every path inside it."""
    try:
        fd = os.open(state_path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as e:
        if e.errno == 2:
            raise FileNotFoundError(str(state_path)) from None
        return "/"
    try:
        with os.fdopen(fd, "rb") as f:
            data = json.loads(f.read(STATE_MAX_BYTES).decode("utf-8", "replace"))
        root = data.get("root", "/") if isinstance(data, dict) else "/"
        return root if isinstance(root, str) and os.path.isdir(root) and not os.path.islink(root) else "/"
    except (ValueError, RecursionError):
        return "/"


def housekeeping_for(measured: list[int], online: list[int]) -> list[int]:
    return [c for c in online if c not in measured]


def online_cpus(root: str = "/") -> list[int]:
    try:
        return parse_cpu_list(Path(root, "sys/devices/system/cpu/online").read_text().strip())
    except OSError:
        return sorted(os.sched_getaffinity(0))
