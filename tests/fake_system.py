"""Build fake /proc, /sys and /etc trees for rtgauge.sysinfo tests.

FakeSystem describes a machine in a few fields; build(root) writes the files the
kernel would show. Fields set to None leave their files out, so tests can also
check how missing pieces are reported. Presets at the bottom: an RT box, a
mainline desktop kernel, a PREEMPT_DYNAMIC kernel."""

from __future__ import annotations

import gzip
import os
from dataclasses import dataclass, field


@dataclass
class IdleState:
    name: str
    latency_us: int
    disabled: bool = False


@dataclass
class FakeSystem:
    hostname: str = "fakehost"
    machine_id: str = "0123456789abcdef0123456789abcdef"
    release: str = "6.1.0-18-amd64"
    version: str = "#1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)"
    arch: str | None = "x86_64"
    cpu_model: str = "Intel(R) Core(TM) i7-3930K CPU @ 3.20GHz"
    cpu_flags: str = "fpu tsc constant_tsc nonstop_tsc sse2"
    cpus: int = 4
    # core id of each CPU; CPUs with the same id are SMT siblings.
    core_of: list[int] | None = None
    smt_control: str | None = "off"
    realtime: bool | None = None  # None: no /sys/kernel/realtime file
    preempt_debugfs: str | None = None  # contents of /sys/kernel/debug/sched/preempt
    config: dict[str, str] | None = None  # /proc/config.gz options
    cmdline: str = "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro quiet"
    isolated_sysfs: str | None = ""
    nohz_full_sysfs: str | None = "(null)"
    governor: str | None = "performance"  # None: no cpufreq directories at all
    idle_driver: str | None = "intel_idle"
    idle_states: list[IdleState] = field(default_factory=list)
    clocksource: str = "tsc"
    clocksources: str = "tsc hpet acpi_pm"
    rt_runtime_us: int = 950000
    rt_period_us: int = 1000000
    swap_kb: int = 0
    thp_enabled: str = "always [madvise] never"
    thp_defrag: str = "always defer defer+madvise [madvise] never"
    processes: list[str] = field(default_factory=lambda: ["systemd", "sshd"])
    tracers: str | None = "timerlat osnoise function nop"  # None: tracefs not mounted
    uid: int = 0
    cap_eff: str = "000001ffffffffff"
    rtprio_limit: str = "0"
    memlock_limit: str = "8388608"
    dma_latency: bool = True
    dmi_vendor: str | None = None
    dmi_product: str | None = None
    nmi_watchdog: int | None = 0
    loadavg: str = "0.05 0.10 0.08 1/200 1234"
    mounts: list[tuple[str, str]] = field(
        default_factory=lambda: [("/sys/fs/cgroup", "cgroup2"), ("/proc", "proc")]
    )

    def build(self, root: str) -> str:
        self.write_kernel(root)
        self.write_cpus(root)
        self.write_memory(root)
        self.write_processes(root)
        self.write_privileges(root)
        self.write_tracing(root)
        return root

    # -- pieces -----------------------------------------------------------------

    def write_kernel(self, root: str) -> None:
        w = Writer(root)
        w("/proc/sys/kernel/hostname", self.hostname)
        w("/etc/machine-id", self.machine_id)
        w("/proc/sys/kernel/osrelease", self.release)
        w("/proc/sys/kernel/version", self.version)
        if self.arch:
            w("/proc/sys/kernel/arch", self.arch)
        w("/proc/cmdline", self.cmdline)
        w("/proc/sys/kernel/sched_rt_runtime_us", str(self.rt_runtime_us))
        w("/proc/sys/kernel/sched_rt_period_us", str(self.rt_period_us))
        w("/proc/loadavg", self.loadavg)
        if self.nmi_watchdog is not None:
            w("/proc/sys/kernel/nmi_watchdog", str(self.nmi_watchdog))
        if self.realtime is not None:
            w("/sys/kernel/realtime", "1" if self.realtime else "0")
        if self.preempt_debugfs is not None:
            w("/sys/kernel/debug/sched/preempt", self.preempt_debugfs)
        if self.config is not None:
            path = os.path.join(root, "proc/config.gz")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with gzip.open(path, "wt") as f:
                for name, value in self.config.items():
                    f.write(f"# {name} is not set\n" if value == "n" else f"{name}={value}\n")
        if self.dmi_vendor:
            w("/sys/class/dmi/id/sys_vendor", self.dmi_vendor)
        if self.dmi_product:
            w("/sys/class/dmi/id/product_name", self.dmi_product)
        w("/proc/self/mounts", "".join(f"none {m} {t} rw 0 0\n" for m, t in self.mounts))

    def write_cpus(self, root: str) -> None:
        w = Writer(root)
        base = "/sys/devices/system/cpu"
        last = self.cpus - 1
        w(f"{base}/online", f"0-{last}" if last else "0")
        if self.isolated_sysfs is not None:
            w(f"{base}/isolated", self.isolated_sysfs)
        if self.nohz_full_sysfs is not None:
            w(f"{base}/nohz_full", self.nohz_full_sysfs)
        if self.smt_control is not None:
            w(f"{base}/smt/control", self.smt_control)
            w(f"{base}/smt/active", "1" if self.smt_control == "on" else "0")
        core_of = self.core_of or list(range(self.cpus))
        w(f"{base}/cpuidle/current_driver", self.idle_driver or "none")
        w(f"{base}/cpuidle/current_governor_ro", "menu")
        cpuinfo = []
        for cpu in range(self.cpus):
            siblings = [c for c in range(self.cpus) if core_of[c] == core_of[cpu]]
            w(f"{base}/cpu{cpu}/topology/core_id", str(core_of[cpu]))
            w(f"{base}/cpu{cpu}/topology/physical_package_id", "0")
            w(f"{base}/cpu{cpu}/topology/thread_siblings_list", ",".join(map(str, siblings)))
            if self.governor is not None:
                w(f"{base}/cpu{cpu}/cpufreq/scaling_governor", self.governor)
                w(f"{base}/cpu{cpu}/cpufreq/scaling_driver", "acpi-cpufreq")
            for i, state in enumerate(self.idle_states):
                d = f"{base}/cpu{cpu}/cpuidle/state{i}"
                w(f"{d}/name", state.name)
                w(f"{d}/desc", f"{state.name} idle state")
                w(f"{d}/latency", str(state.latency_us))
                w(f"{d}/disable", "1" if state.disabled else "0")
            cpuinfo.append(
                f"processor\t: {cpu}\nmodel name\t: {self.cpu_model}\nflags\t\t: {self.cpu_flags}\n"
            )
        w("/proc/cpuinfo", "\n".join(cpuinfo))
        cs = "/sys/devices/system/clocksource/clocksource0"
        w(f"{cs}/current_clocksource", self.clocksource)
        w(f"{cs}/available_clocksource", self.clocksources + " ")

    def write_memory(self, root: str) -> None:
        w = Writer(root)
        w("/proc/meminfo", f"MemTotal:       16000000 kB\nSwapTotal:      {self.swap_kb} kB\n")
        w("/proc/sys/vm/swappiness", "60")
        w("/sys/kernel/mm/transparent_hugepage/enabled", self.thp_enabled)
        w("/sys/kernel/mm/transparent_hugepage/defrag", self.thp_defrag)

    def write_processes(self, root: str) -> None:
        w = Writer(root)
        for pid, comm in enumerate(self.processes, start=1):
            w(f"/proc/{pid}/comm", comm)

    def write_privileges(self, root: str) -> None:
        w = Writer(root)
        uid = self.uid
        w(
            "/proc/self/status",
            f"Name:\tpython3\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\nCapInh:\t0000000000000000\n"
            f"CapEff:\t{self.cap_eff}\n",
        )
        w(
            "/proc/self/limits",
            "Limit                     Soft Limit           Hard Limit           Units     \n"
            f"Max locked memory         {self.memlock_limit:<20} {self.memlock_limit:<20} bytes     \n"
            f"Max realtime priority     {self.rtprio_limit:<20} {self.rtprio_limit:<20}           \n",
        )
        if self.dma_latency:
            w("/dev/cpu_dma_latency", "")

    def write_tracing(self, root: str) -> None:
        if self.tracers is not None:
            Writer(root)("/sys/kernel/tracing/available_tracers", self.tracers)


class Writer:
    def __init__(self, root: str):
        self.root = root

    def __call__(self, path: str, text: str) -> None:
        full = os.path.join(self.root, path.lstrip("/"))
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text + ("\n" if text and not text.endswith("\n") else ""))


# -- presets --------------------------------------------------------------------------

def rt_box() -> FakeSystem:
    """A tuned PREEMPT_RT machine: isolated CPUs 2-3, performance governor, SMT off."""
    return FakeSystem(
        release="6.1.0-18-rt-amd64",
        version="#1 SMP PREEMPT_RT Debian 6.1.76-1 (2024-02-01)",
        realtime=True,
        cmdline="BOOT_IMAGE=/vmlinuz-6.1.0-18-rt-amd64 root=/dev/sda1 ro "
        "isolcpus=managed_irq,domain,2-3 nohz_full=2-3 rcu_nocbs=2-3 irqaffinity=0-1 "
        "processor.max_cstate=1",
        isolated_sysfs="2-3",
        nohz_full_sysfs="2-3",
        governor="performance",
        idle_states=[IdleState("POLL", 0), IdleState("C1", 2), IdleState("C6", 133, disabled=True)],
    )


def mainline_desktop() -> FakeSystem:
    """A voluntary-preemption distribution kernel, left as installed: ondemand, SMT on,
    hpet clocksource, deep C-states, THP always, swap, irqbalance, no tracefs."""
    return FakeSystem(
        release="5.15.0-91-generic",
        version="#101-Ubuntu SMP Tue Nov 14 13:30:08 UTC 2023",
        config={"CONFIG_PREEMPT_VOLUNTARY": "y", "CONFIG_HZ": "250", "CONFIG_TIMERLAT_TRACER": "n"},
        cpus=4,
        core_of=[0, 1, 0, 1],
        smt_control="on",
        governor="ondemand",
        idle_states=[IdleState("POLL", 0), IdleState("C1", 2), IdleState("C3", 33), IdleState("C6", 133)],
        clocksource="hpet",
        clocksources="tsc hpet acpi_pm",
        swap_kb=2097152,
        thp_enabled="[always] madvise never",
        processes=["systemd", "irqbalance", "Xorg"],
        tracers=None,
        nmi_watchdog=1,
        uid=1000,
        cap_eff="0000000000000000",
        rtprio_limit="0",
    )


def dynamic_kernel(preempt_debugfs: str | None = "none voluntary (full) lazy") -> FakeSystem:
    return FakeSystem(
        version="#1 SMP PREEMPT_DYNAMIC Debian 6.12.9-1 (2025-01-10)",
        preempt_debugfs=preempt_debugfs,
        config={"CONFIG_PREEMPT_DYNAMIC": "y", "CONFIG_PREEMPT_VOLUNTARY": "y", "CONFIG_HZ": "250"},
    )
