"""The stress-ng loads: cpu, memory, io, net (loopback), irq-heavy and mixed; socket
stressors run in a network namespace of their own, so they reach no network."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from rtgauge.errors import UserError
from rtgauge.loads.base import ProcessLoad, need_tool


class StressNg(ProcessLoad):
    """stress-ng with a set of stressors; subclasses say which."""

    tools = ("stress-ng",)

    def stressors(self, n: int) -> list[str]:
        raise NotImplementedError

    def temp_path(self) -> str:
        return str(self.workdir)

    sockets = False          # runs socket stressors: kept off the network (own_network_namespace)

    def argv(self) -> list[str]:
        exe = shutil.which("stress-ng") or "stress-ng"
        # not --quiet: it also drops the metrics from the YAML file
        cmd = [exe, *self.stressors(self.ctx.worker_count()), "--timeout", "0", "--metrics",
               "--yaml", str((self.workdir or Path("/tmp")) / "metrics.yaml"),
               "--temp-path", self.temp_path()]
        return own_network_namespace(cmd) if self.sockets else cmd

    def check(self) -> None:
        super().check()
        if self.sockets:
            need_tool(self.name, "unshare")
            need_tool(self.name, "ip")

    def details(self) -> dict:
        out = read_stress_ng_metrics(self.workdir / "metrics.yaml")
        out["workers"] = self.ctx.worker_count()
        return out


def own_network_namespace(cmd: list[str]) -> list[str]:
    """cmd in a new network namespace holding only its loopback interface. stress-ng's
    socket stressors bind to every interface (0.0.0.0, TCP 5000 and UDP 7000 and up),
    also with --sock-if lo; in a namespace of their own they reach no network, while the
    traffic still runs through this kernel's network stack and softirqs on the load's
    CPUs. Without root a user namespace provides the right to create it."""
    ip = shutil.which("ip") or "ip"
    userns = [] if os.geteuid() == 0 else ["--map-root-user"]
    return ["unshare", *userns, "--net", "--", "sh", "-c", f'{ip} link set lo up && exec "$@"', "sh", *cmd]


class StressCpu(StressNg):
    name = "cpu"
    description = "stress-ng --cpu: one CPU-bound worker per load CPU"

    def stressors(self, n):
        return ["--cpu", str(n)]


class StressMemory(StressNg):
    name = "memory"
    description = "stress-ng --cache (cache thrashing) and --memrate (memory bandwidth)"

    def stressors(self, n):
        return ["--cache", str(n), "--memrate", "1", "--memrate-bytes", "64M"]


class StressIo(StressNg):
    name = "io"
    description = "stress-ng --hdd and --iomix on the data directory's file system"

    def temp_path(self) -> str:
        return self.ctx.data_dir or str(self.workdir)

    def check(self) -> None:
        super().check()
        d = self.ctx.data_dir
        if d and not (os.path.isdir(d) and os.access(d, os.W_OK)):
            raise UserError(f"the io load writes to {d}, which is not a writable directory; "
                            "give --load-dir a directory on the disk to load.")

    def stressors(self, n):
        k = str(max(1, n // 2))
        return ["--hdd", k, "--hdd-bytes", "64M", "--iomix", k, "--iomix-bytes", "64M"]

    def details(self) -> dict:
        out = super().details()
        out["directory"] = self.temp_path()
        return out


class StressNetLoopback(StressNg):
    name = "net"
    description = ("loopback traffic (stress-ng --sock, --udp); with --allow-netns, UDP "
                   "through a veth pair between two network namespaces")

    sockets = True

    def stressors(self, n):
        k = str(max(1, n // 2))
        return ["--sock", k, "--udp", k]

    def details(self) -> dict:
        out = super().details()
        out["path"] = "loopback of its own network namespace"
        return out


class StressIrqHeavy(StressNg):
    name = "irq-heavy"
    description = "stress-ng --timer at 50 kHz and --udp: timer and network interrupts"

    sockets = True

    def stressors(self, n):
        k = str(max(1, n // 2))
        return ["--timer", k, "--timer-freq", "50000", "--udp", k]


class StressMixed(StressNg):
    name = "mixed"
    description = "OSADL-style blend: moderate UDP traffic, file I/O and memory allocation"

    sockets = True

    def stressors(self, n):
        return ["--udp", "1", "--iomix", "1", "--iomix-bytes", "32M", "--vm", "1", "--vm-bytes", "64M"]

    def temp_path(self) -> str:
        return self.ctx.data_dir or str(self.workdir)


def read_stress_ng_metrics(path: Path) -> dict:
    """bogo-ops and CPU seconds per stressor from stress-ng's --yaml file, and totals."""
    try:
        text = path.read_text()
    except OSError:
        return {"metrics": "stress-ng wrote no metrics"}
    return parse_stress_ng_metrics(text)


def parse_stress_ng_metrics(text: str) -> dict:
    """read_stress_ng_metrics of the file's text (a file read from a target)."""
    per: dict[str, dict] = {}
    current: dict | None = None
    in_metrics = False
    for line in text.splitlines():
        if line.startswith("metrics:"):
            in_metrics = True
            continue
        if in_metrics and line and not line.startswith(" "):
            break
        if not in_metrics or ":" not in line:
            continue
        key, _, value = line.strip().lstrip("- ").partition(":")
        key, value = key.strip(), value.strip()
        if key == "stressor":
            current = per.setdefault(value, {})
        elif current is not None and key in ("bogo-ops", "bogo-ops-per-second-real-time",
                                             "user-time", "system-time", "wall-clock-time"):
            try:
                current[key.replace("-", "_")] = float(value)
            except ValueError:
                pass
    out: dict = {"stressors": per}
    out["bogo_ops"] = sum(s.get("bogo_ops", 0.0) for s in per.values())
    out["stress_ng_cpu_s"] = round(sum(s.get("user_time", 0.0) + s.get("system_time", 0.0)
                                       for s in per.values()), 3)
    return out
