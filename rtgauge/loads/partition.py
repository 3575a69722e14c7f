"""CPU partitioning: which CPUs measure (rt), which carry the load, which keep
housekeeping (rtgauge itself, the engine's collector, the live view).

Applied by affinity always, and by a cpuset per role where the kernel lets rtgauge
create one: cgroup v2 with the cpuset controller enabled (or enabled by rtgauge), else
a cgroup v1 cpuset hierarchy (hybrid systems). The groups live under one
rtgauge-owned group `rtgauge-<pid>` and are removed after the run; groups left by a
rtgauge that died (SIGKILL) are removed by the next rtgauge command of any kind
(remove_abandoned_cpusets), and again before a partitioned run creates its own."""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from rtgauge.errors import UserError
from rtgauge.bounds import check_cpu_list, format_cpu_list, parse_cpu_list

GROUP_PREFIX = "rtgauge-"


@dataclass
class Partition:
    rt_cpus: list[int]
    load_cpus: list[int]
    housekeeping_cpus: list[int]
    cpusets: "Cpusets | None" = None
    cpuset_note: str = ""

    def engine_cpuset_cpus(self) -> list[int]:
        """The engine's cpuset holds the measured CPUs and the housekeeping ones, so its
        collector thread can run off the measured CPUs."""
        return sorted(set(self.rt_cpus) | set(self.housekeeping_cpus))

    def procs_file(self, role: str) -> str | None:
        return self.cpusets.procs_file(role) if self.cpusets else None

    def record(self) -> dict:
        return {"rt_cpus": format_cpu_list(self.rt_cpus), "load_cpus": format_cpu_list(self.load_cpus),
                "housekeeping_cpus": format_cpu_list(self.housekeeping_cpus),
                "cpuset": self.cpusets.record() if self.cpusets else None,
                "cpuset_note": self.cpuset_note}


def parse_cpus_option(option: str, text: str | None, allowed: list[int]) -> list[int] | None:
    if text is None:
        return None
    cpus = parse_cpu_list(check_cpu_list(option, text, allowed))
    outside = sorted(set(cpus) - set(allowed))
    if outside:
        raise UserError(f"{option} {text}: CPU {format_cpu_list(outside)} is not one rtgauge may use "
                        f"(allowed: {format_cpu_list(allowed)}); choose among those.")
    return cpus


def plan_partition(rt: str | None, load: str | None, housekeeping: str | None,
                   allowed: list[int] | None = None) -> Partition | None:
    """The partition the options ask for, or None when none of them is given. Roles left
    out are filled in: housekeeping gets the CPUs neither measured nor loaded (else the
    load's, else none), the load gets every CPU not measured (else all)."""
    if rt is None and load is None and housekeeping is None:
        return None
    allowed = allowed or sorted(os.sched_getaffinity(0))
    rt_cpus = parse_cpus_option("--rt-cpus", rt, allowed)
    load_cpus = parse_cpus_option("--load-cpus", load, allowed)
    hk_cpus = parse_cpus_option("--housekeeping-cpus", housekeeping, allowed)
    if rt_cpus is None:
        rt_cpus = [c for c in allowed if c not in (hk_cpus or [])] or allowed
    if hk_cpus and set(hk_cpus) & set(rt_cpus):
        raise UserError(f"--housekeeping-cpus {format_cpu_list(hk_cpus)} overlaps the measured CPUs "
                        f"{format_cpu_list(rt_cpus)}; housekeeping must stay off the measured CPUs.")
    if load_cpus is None:
        load_cpus = [c for c in allowed if c not in rt_cpus] or allowed
    if hk_cpus is None:
        hk_cpus = [c for c in allowed if c not in rt_cpus and c not in load_cpus] \
            or [c for c in load_cpus if c not in rt_cpus]
    return Partition(rt_cpus, load_cpus, hk_cpus)


# -- cgroup cpusets ----------------------------------------------------------------------

def mounts(root: str = "/") -> list[tuple[str, str, str]]:
    """(mount point, type, options) of /proc/self/mounts."""
    out = []
    try:
        text = Path(root, "proc/self/mounts").read_text()
    except OSError:
        return out
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 4:
            out.append((parts[1].replace("\\040", " "), parts[2], parts[3]))
    return out


@dataclass
class CpusetRoot:
    path: Path
    version: int     # 2: cgroup v2 with cpuset; 1: a v1 cpuset hierarchy


def find_cpuset_root(root: str = "/") -> tuple[CpusetRoot | None, str]:
    """Where rtgauge can create cpusets, or None and why not."""
    m = mounts(root)
    v2 = [Path(root, p.lstrip("/")) for p, t, _ in m if t == "cgroup2"]
    v1 = [Path(root, p.lstrip("/")) for p, t, o in m if t == "cgroup" and "cpuset" in o.split(",")]
    reasons = []
    for path in v2:
        controllers = read(path / "cgroup.controllers").split()
        if "cpuset" in controllers:
            return CpusetRoot(path, 2), f"cgroup v2 at {path}"
        reasons.append(f"cgroup v2 at {path} has no cpuset controller (it is bound to a v1 hierarchy)"
                       if v1 else f"cgroup v2 at {path} has no cpuset controller")
    for path in v1:
        return CpusetRoot(path, 1), f"cgroup v1 cpuset at {path}" + (f" ({reasons[0]})" if reasons else "")
    return None, "; ".join(reasons) or "no cgroup file system with a cpuset controller is mounted"


def read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def write(path: Path, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


@dataclass
class Cpusets:
    base: CpusetRoot
    group: Path
    roles: dict[str, list[int]] = field(default_factory=dict)
    self_original: Path | None = None

    def procs_file(self, role: str) -> str | None:
        return str(self.group / role / "cgroup.procs") if role in self.roles else None

    def record(self) -> dict:
        return {"version": self.base.version, "group": str(self.group),
                "roles": {r: format_cpu_list(c) for r, c in self.roles.items()}}

    def join_self(self, role: str) -> None:
        """Move rtgauge itself (all its threads) into a role's group; leave() moves it back."""
        self.self_original = own_cgroup(self.base)
        write(self.group / role / "cgroup.procs", str(os.getpid()))

    def remove(self) -> None:
        if self.self_original is not None:
            try:
                write(self.self_original / "cgroup.procs", str(os.getpid()))
            except OSError:
                write(self.base.path / "cgroup.procs", str(os.getpid()))
            self.self_original = None
        remove_group(self.group)


def own_cgroup(base: CpusetRoot) -> Path:
    """This process's group in the hierarchy `base` (from /proc/self/cgroup)."""
    for line in read(Path("/proc/self/cgroup")).splitlines():
        hid, controllers, path = line.split(":", 2)
        if (base.version == 2 and hid == "0") or (base.version == 1 and "cpuset" in controllers.split(",")):
            return base.path / path.lstrip("/")
    return base.path


def remove_group(group: Path, wait_s: float = 3.0) -> None:
    """rmdir the group's children, then the group; processes that just exited can keep a
    group busy for a moment, hence the retries."""
    end = time.monotonic() + wait_s
    while True:
        try:
            for child in sorted((p for p in group.iterdir() if p.is_dir()), reverse=True):
                remove_group(child, wait_s)
            group.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > end:
                raise
            time.sleep(0.05)


def remove_stale_groups(base: CpusetRoot, wait_s: float = 0.5) -> list[Path]:
    """Remove the rtgauge-<pid> groups whose owner process is gone (a rtgauge killed by
    SIGKILL cannot remove its own); returns those removed. A group of a live process is
    left alone, and so is one that still holds a process (the kernel refuses its rmdir)."""
    removed = []
    try:
        found = sorted(base.path.glob(GROUP_PREFIX + "*"))
    except OSError:
        return removed
    for p in found:
        pid = p.name[len(GROUP_PREFIX):]
        if pid.isdigit() and not os.path.exists(f"/proc/{pid}") and p.is_dir() and not p.is_symlink():
            try:
                remove_group(p, wait_s)
                removed.append(p)
            except OSError:
                pass
    return removed


def remove_abandoned_cpusets(root: str = "/") -> list[Path]:
    """Every command's first step (rtgauge/cli/__init__.py), as abandoned runs are marked
    by the next command: the cpuset groups left by a rtgauge that died are removed, not
    kept until the next partitioned run. Cheap where there is none (one look at the
    mounts and one directory listing); quiet where rtgauge may not look or remove."""
    base, _ = find_cpuset_root(root)
    if base is None:
        return []
    return remove_stale_groups(base, wait_s=0.2)


def create_cpusets(roles: dict[str, list[int]], root: str = "/") -> tuple[Cpusets | None, str]:
    """A group per role under rtgauge-<pid>, or None and the sentence why not."""
    base, where = find_cpuset_root(root)
    if base is None:
        return None, f"cpusets unavailable: {where}; partitioning by affinity only"
    remove_stale_groups(base)
    group = base.path / f"{GROUP_PREFIX}{os.getpid()}"
    all_cpus = sorted({c for cpus in roles.values() for c in cpus})
    try:
        if base.version == 2:
            enable_controller(base.path)
        group.mkdir(exist_ok=True)
        sets = Cpusets(base, group)
        if base.version == 1:
            write(group / "cpuset.mems", read(base.path / "cpuset.mems"))
            write(group / "cpuset.cpus", format_cpu_list(all_cpus))
        else:
            write(group / "cpuset.cpus", format_cpu_list(all_cpus))
            enable_controller(group)
        for role, cpus in roles.items():
            if not cpus:
                continue
            (group / role).mkdir(exist_ok=True)
            if base.version == 1:
                write(group / role / "cpuset.mems", read(group / "cpuset.mems"))
            write(group / role / "cpuset.cpus", format_cpu_list(cpus))
            sets.roles[role] = cpus
    except OSError as e:
        try:
            remove_group(group, 0.5)
        except OSError:
            pass
        return None, f"cpusets unavailable: {where} refused a group ({e.strerror}); affinity only"
    return sets, f"cpusets in {where}"


def enable_controller(path: Path) -> None:
    if "cpuset" not in read(path / "cgroup.subtree_control").split():
        write(path / "cgroup.subtree_control", "+cpuset")


def apply_cpusets(partition: Partition, root: str = "/") -> Partition:
    roles = {"rt": partition.engine_cpuset_cpus(), "load": partition.load_cpus,
             "housekeeping": partition.housekeeping_cpus}
    partition.cpusets, partition.cpuset_note = create_cpusets(roles, root)
    return partition


def join_placement(cpus: list[int] | None, cgroup_procs: str | None):
    """preexec_fn: the child joins the cgroup whose cgroup.procs is given and takes
    the CPUs; everything it starts inherits both. Used for loads, the engine and the
    trace marker writer."""
    def place() -> None:
        if cgroup_procs:
            fd = os.open(cgroup_procs, os.O_WRONLY)
            try:
                os.write(fd, b"0")
            finally:
                os.close(fd)
        if cpus:
            os.sched_setaffinity(0, cpus)
    return place
