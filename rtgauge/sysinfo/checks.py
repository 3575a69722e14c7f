"""run_doctor(facts): a status per thing that stands between this machine and
real-time, and what to change. A pure function of the facts, so a stored snapshot
can be judged again and tests can feed any machine they like.

Statuses: ok (nothing to do), info (worth knowing, nothing to fix here),
warn (adds latency or jitter; fix it for serious measurements),
bad (real-time results would be wrong or impossible)."""

from __future__ import annotations

from typing import Callable

from rtgauge.bounds import format_cpu_list

OK, INFO, WARN, BAD = "ok", "info", "warn", "bad"
# Idle states that take longer than this to leave show up in wake-up latency.
DEEP_IDLE_LATENCY_US = 10
# Clocksources clock_gettime() reads in user space (vDSO) in tens of ns.
FAST_CLOCKSOURCES = {
    "tsc", "kvm-clock", "arch_sys_counter", "hyperv_clocksource_tsc_page",
    "riscv_clocksource", "timebase", "xen", "vmware-tsc",
}
# Clocksources that need a slow hardware access (or are coarse) on every read.
SLOW_CLOCKSOURCES = {"hpet", "acpi_pm", "jiffies", "refined-jiffies", "pit"}
DEBIAN_ARCH = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "armhf", "ppc64le": "ppc64el"}
RTGAUGE_PRIORITY = 80


def check(name: str, status: str, value: str, advice: str = "") -> dict:
    return {"name": name, "status": status, "value": value, "advice": advice}


def run_doctor(facts: dict) -> list[dict]:
    checks = []
    for fn in CHECKS:
        result = fn(facts)
        if result is not None:
            checks.append(result)
    return checks


def count_statuses(checks: list[dict]) -> dict[str, int]:
    counts = {OK: 0, INFO: 0, WARN: 0, BAD: 0}
    for c in checks:
        counts[c["status"]] = counts.get(c["status"], 0) + 1
    return counts


# -- privileges ---------------------------------------------------------------------

def rtprio_allows(limit, priority: int = 1) -> bool:
    return limit == "unlimited" or (isinstance(limit, int) and limit >= priority)


def check_privileges(f: dict) -> dict:
    euid, cap, rtprio = f.get("euid"), f.get("cap_sys_nice"), f.get("rtprio_limit")
    who = "root" if euid == 0 else f"uid {euid}" if euid is not None else "unknown user"
    grant = (
        "run as root, or grant it: `setcap cap_sys_nice,cap_ipc_lock+ep <rtgauge-engine>`, or add "
        "`@realtime - rtprio 99` and `@realtime - memlock unlimited` to /etc/security/limits.conf "
        "and log in again as a member of group realtime"
    )
    # CAP_SYS_NICE bypasses RLIMIT_RTPRIO; without it the limit is the highest priority allowed.
    if cap or (cap is None and euid == 0):
        return check("privileges", OK, f"{who}, CAP_SYS_NICE: SCHED_FIFO at any priority")
    if rtprio_allows(rtprio, RTGAUGE_PRIORITY):
        return check("privileges", OK, f"{who}, RLIMIT_RTPRIO {rtprio}: SCHED_FIFO allowed")
    if rtprio_allows(rtprio):
        return check(
            "privileges", WARN,
            f"{who}, RLIMIT_RTPRIO {rtprio}: SCHED_FIFO only up to priority {rtprio}",
            f"rtgauge measures at priority {RTGAUGE_PRIORITY}; raise the limit or {grant}",
        )
    return check(
        "privileges", BAD,
        f"{who}, no CAP_SYS_NICE, RLIMIT_RTPRIO {rtprio}: SCHED_FIFO refused",
        f"real-time runs need SCHED_FIFO: {grant}",
    )


def check_memlock(f: dict) -> dict | None:
    limit = f.get("memlock_limit")
    if f.get("cap_ipc_lock"):
        return check("memlock", OK, "CAP_IPC_LOCK: mlockall is not limited")
    if limit == "unlimited":
        return check("memlock", OK, "RLIMIT_MEMLOCK unlimited")
    if limit is None:
        return check("memlock", INFO, "RLIMIT_MEMLOCK unknown")
    return check(
        "memlock", WARN,
        f"RLIMIT_MEMLOCK {limit // 1024} KiB: mlockall fails once the process outgrows it",
        "an unlocked page can fault at run time (milliseconds); `ulimit -l unlimited` before the run, "
        "or `@realtime - memlock unlimited` in /etc/security/limits.conf",
    )


def check_rt_cgroup(f: dict) -> dict | None:
    budget = f.get("cgroup_rt_runtime_us")
    if budget is None:
        return None  # no RT group scheduling: nothing can take the budget away
    if budget == 0:
        return check(
            "rt_cgroup", BAD,
            "this process's cpu cgroup has cpu.rt_runtime_us = 0: SCHED_FIFO fails even for root",
            "run from the root cpu cgroup (`echo $$ > /sys/fs/cgroup/cpu/tasks` in the shell that "
            "starts rtgauge) or give the group a budget: "
            "`echo 950000 > /sys/fs/cgroup/cpu/<group>/cpu.rt_runtime_us`",
        )
    return check("rt_cgroup", OK, f"cpu cgroup RT budget {budget} µs")


# -- scheduler ----------------------------------------------------------------------

def check_rt_throttling(f: dict) -> dict:
    runtime, period = f.get("rt_runtime_us"), f.get("rt_period_us")
    if runtime is None or period is None:
        return check("rt_throttling", INFO, "unknown (no /proc/sys/kernel/sched_rt_runtime_us)")
    if runtime == -1:
        return check(
            "rt_throttling", WARN,
            f"off (-1/{period} µs): a runaway SCHED_FIFO thread now owns its CPU for good",
            "turn it back on after the run: `sysctl kernel.sched_rt_runtime_us=950000`",
        )
    share = 100.0 * runtime / period if period else 0
    if runtime < period:
        return check(
            "rt_throttling", WARN,
            f"{runtime}/{period} µs: RT threads capped at {share:.0f}% of each period",
            f"keep it on: it is the safety net against a runaway RT thread. It bites only when RT "
            f"work fills {share:.0f}% of a CPU, then stops the thread for "
            f"{(period - runtime) / 1000:.0f} ms, a spike from the throttle, not the OS. Only for "
            f"such a run lift it, with a watchdog that restores it: `sysctl "
            f"kernel.sched_rt_runtime_us=-1; (sleep 600; sysctl kernel.sched_rt_runtime_us={runtime}) &`",
        )
    return check("rt_throttling", OK, f"{runtime}/{period} µs: no cap")


def rt_kernel_advice(f: dict) -> str:
    deb = DEBIAN_ARCH.get(f.get("arch") or "", "<arch>")
    return f"a PREEMPT_RT kernel (Debian: `apt install linux-image-rt-{deb}`, then reboot into it)"


def preempt_status(mode: str) -> str:
    if mode in ("full", "lazy"):
        return WARN
    if mode in ("none", "voluntary", "voluntary or none"):
        return BAD
    return WARN


def check_preemption(f: dict) -> dict:
    model = f.get("preempt_model")
    rt_advice = rt_kernel_advice(f)
    if model is None:
        return check("preemption", INFO, "unknown", f"for real-time work use {rt_advice}")
    if model == "PREEMPT_RT":
        detail = "/sys/kernel/realtime = 1" if f.get("realtime") else "kernel version string"
        return check("preemption", OK, f"PREEMPT_RT ({detail})")
    full_text = (
        "RT tasks preempt everywhere except in spinlocked and IRQ-off regions, which last up to "
        f"hundreds of µs under load; {rt_advice} makes those preemptible too"
    )
    if model.startswith("dynamic"):
        mode = model[len("dynamic ("):-1]
        boot = f.get("preempt_dynamic_boot_mode")
        switch = (
            "boot with `preempt=full` (or now: `echo full > /sys/kernel/debug/sched/preempt`), "
            f"better {rt_advice}"
        )
        if mode == "mode unknown":
            see = (
                "to see the active mode: `mount -t debugfs none /sys/kernel/debug; "
                "cat /sys/kernel/debug/sched/preempt`"
            )
            if boot is None:
                return check("preemption", WARN, "PREEMPT_DYNAMIC, active mode unknown", f"{see}; {switch}")
            status = preempt_status(boot)
            advice = full_text if status == WARN else switch
            return check(
                "preemption", status,
                f"PREEMPT_DYNAMIC, active mode unknown (booted as {boot})",
                f"{advice}; {see}",
            )
        status = preempt_status(mode)
        return check(
            "preemption", status, f"PREEMPT_DYNAMIC, active mode {mode}",
            full_text if status == WARN else switch,
        )
    status = preempt_status(model)
    if status == BAD:
        return check(
            "preemption", BAD,
            f"{model}: the kernel only switches to an RT task at its own preemption points",
            f"worst-case latency runs into milliseconds; use {rt_advice}, or at least a kernel "
            "built with CONFIG_PREEMPT",
        )
    return check("preemption", WARN, model, full_text)


# -- CPUs ---------------------------------------------------------------------------

def group_by_value(per_cpu: dict[str, str]) -> str:
    """{'0': 'performance', '1': 'powersave'} -> 'performance (cpu 0), powersave (cpu 1)'."""
    groups: dict[str, list[int]] = {}
    for cpu, value in per_cpu.items():
        groups.setdefault(value, []).append(int(cpu))
    return ", ".join(f"{v} (cpu {format_cpu_list(c)})" for v, c in sorted(groups.items()))


def check_governor(f: dict) -> dict:
    governors = f.get("governors") or {}
    if not governors:
        where = "the host sets it" if (f.get("virtualization") or {}).get("vm") else "firmware sets it"
        return check(
            "governor", INFO, f"no cpufreq: the frequency is fixed or {where}",
            "on bare metal, choose the BIOS/UEFI performance power profile",
        )
    if set(governors.values()) == {"performance"}:
        return check("governor", OK, group_by_value(governors))
    return check(
        "governor", WARN, group_by_value(governors),
        "frequency changes stretch the work after each wake-up and add jitter: "
        "`cpupower frequency-set -g performance` (or write performance to "
        "/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor)",
    )


def check_smt(f: dict) -> dict:
    smt = f.get("smt")
    if smt == "on" or (smt is None and f.get("smt_active")):
        return check(
            "smt", WARN, "on: sibling threads share one core",
            "a sibling's work slows the measured thread (shared pipeline and caches): "
            "`echo off > /sys/devices/system/cpu/smt/control` (or boot with `nosmt`), "
            "or isolate both siblings of a core and leave one idle",
        )
    if smt in ("off", "forceoff", "notsupported"):
        return check("smt", OK, smt)
    return check("smt", INFO, smt or "unknown")


def measured_cpus(f: dict) -> list[int]:
    """The CPUs worth isolating: all but the first, which keeps housekeeping."""
    cpus = f.get("cpus_list") or []
    return cpus[1:]


def check_isolation(f: dict) -> dict:
    cpus = f.get("cpus_list") or []
    isolated, nohz, nocbs = f.get("isolcpus") or [], f.get("nohz_full") or [], f.get("rcu_nocbs") or []
    if len(cpus) < 2 and not isolated:
        return check("isolation", INFO, "one CPU: nothing can be isolated")
    target = format_cpu_list(isolated or measured_cpus(f))
    full_params = (
        f"isolcpus=managed_irq,domain,{target} nohz_full={target} rcu_nocbs={target} "
        f"irqaffinity={format_cpu_list([c for c in cpus if c not in (isolated or measured_cpus(f))]) or 0}"
    )
    how = (
        f"add `{full_params}` to the kernel command line (GRUB_CMDLINE_LINUX in /etc/default/grub, "
        f"`update-grub`, reboot) and measure there with `--cpus {target}`"
    )
    if f.get("kernel_nohz_full_supported") is False:
        how += " (this kernel lacks CONFIG_NO_HZ_FULL: nohz_full= is ignored)"
    if not isolated:
        return check(
            "isolation", WARN, "no isolated CPUs: the scheduler, timers, RCU and IRQs share every CPU",
            f"keep the measured CPUs for the real-time job: {how}",
        )
    value = f"isolcpus {format_cpu_list(isolated)}"
    missing = []
    for name, cpus_set in (("nohz_full", nohz), ("rcu_nocbs", nocbs)):
        if cpus_set:
            value += f", {name} {format_cpu_list(cpus_set)}"
        if not set(isolated) <= set(cpus_set):
            missing.append(f"{name}={format_cpu_list(isolated)}")
    advice = ""
    if missing:
        advice = (
            f"also add `{' '.join(missing)}` so the tick and RCU callbacks leave the isolated CPUs; "
            f"measure with `--cpus {format_cpu_list(isolated)}`"
        )
    else:
        advice = f"measure with `--cpus {format_cpu_list(isolated)}`"
    return check("isolation", OK, value, advice)


def check_idle_states(f: dict) -> dict:
    idle = f.get("idle_states") or {}
    params = idle.get("boot_params") or {}
    if params.get("idle") == "poll":
        return check("idle_states", OK, "idle=poll: CPUs never sleep")
    states = idle.get("states") or []
    deep = [
        s for s in states
        if not s.get("disabled") and (s.get("latency_us") or 0) > DEEP_IDLE_LATENCY_US
    ]
    driver = idle.get("driver") or "none"
    if not states:
        vm = (f.get("virtualization") or {}).get("vm")
        if vm:
            return check(
                "idle_states", INFO, f"cpuidle driver {driver}: an idle vCPU halts into the hypervisor",
                "waking a halted vCPU costs a VM entry; in a KVM guest `modprobe cpuidle-haltpoll` "
                "polls briefly before halting; on the host, disable deep C-states",
            )
        return check("idle_states", OK, f"cpuidle driver {driver}: default halt only")
    if not deep:
        shallow = ", ".join(f"{s['name']} {s['latency_us']} µs" for s in states if not s.get("disabled"))
        return check("idle_states", OK, f"{driver}: only shallow states enabled ({shallow})")
    listed = ", ".join(f"{s['name']} {s['latency_us']} µs" for s in deep)
    return check(
        "idle_states", WARN, f"{driver}: deep states enabled: {listed}",
        "waking from them adds their exit latency to every wake-up: rtgauge holds "
        "/dev/cpu_dma_latency at 0 during its runs, which keeps CPUs out of them; for other programs "
        "boot with `processor.max_cstate=1 intel_idle.max_cstate=1` (or `idle=poll`, which burns "
        "power), or disable them now: `echo 1 > /sys/devices/system/cpu/cpu*/cpuidle/stateN/disable`",
    )


def check_cpu_dma_latency(f: dict) -> dict:
    if f.get("cpu_dma_latency_writable"):
        return check("cpu_dma_latency", OK, "writable: rtgauge holds it at 0 during runs")
    return check(
        "cpu_dma_latency", WARN, "not writable: deep C-states stay allowed during runs",
        "run as root so rtgauge can hold /dev/cpu_dma_latency at 0, or disable deep C-states at boot",
    )


def check_clocksource(f: dict) -> dict:
    cs = f.get("clocksource") or {}
    current, available = cs.get("current"), cs.get("available") or []
    if current is None:
        return check("clocksource", INFO, "unknown")
    value = f"{current} (available: {' '.join(available)})" if available else current
    if current in SLOW_CLOCKSOURCES:
        better = next((c for c in ("tsc", "kvm-clock", "arch_sys_counter") if c in available), None)
        fix = (
            f"`echo {better} > /sys/devices/system/clocksource/clocksource0/current_clocksource`"
            if better
            else "the kernel rejected the TSC; check `dmesg | grep -i clocksource`, and boot with "
            "`tsc=reliable` only if the TSC is known to be invariant"
        )
        return check(
            "clocksource", BAD, value,
            f"every timestamp is a slow hardware read (about a µs, outside the vDSO), which distorts "
            f"short intervals and the timer path itself: {fix}",
        )
    if current == "tsc" and f.get("tsc_invariant") is False:
        return check("clocksource", WARN, value + "; TSC not marked invariant",
                     "a TSC that stops or changes rate in idle can be dropped by the kernel mid-run")
    if current in FAST_CLOCKSOURCES:
        return check("clocksource", OK, value)
    return check("clocksource", INFO, value)


# -- memory -------------------------------------------------------------------------

def check_swap(f: dict) -> dict:
    swap = f.get("swap_total_kb")
    if swap is None:
        return check("swap", INFO, "unknown")
    if swap == 0:
        return check("swap", OK, "no swap")
    return check(
        "swap", WARN, f"{swap // 1024} MiB swap, swappiness {f.get('swappiness')}",
        "a page swapped out faults back in after milliseconds: rtgauge's engine locks its memory "
        "(mlockall), so its runs are safe; other RT programs must do the same, or `swapoff -a`",
    )


def check_thp(f: dict) -> dict:
    thp = f.get("thp") or {}
    enabled, defrag = thp.get("enabled"), thp.get("defrag")
    if enabled is None:
        return check("thp", INFO, "transparent hugepages unavailable")
    value = f"enabled {enabled}, defrag {defrag}"
    if enabled == "always" or defrag == "always":
        return check(
            "thp", WARN, value,
            "khugepaged and direct compaction stall page faults and take locks behind RT threads: "
            "`echo madvise > /sys/kernel/mm/transparent_hugepage/enabled` and the same for "
            "`.../defrag` (or boot with `transparent_hugepage=madvise`; `never` is safest)",
        )
    return check("thp", OK, value)


# -- interference -------------------------------------------------------------------

def check_irqbalance(f: dict) -> dict:
    if not f.get("irqbalance_running"):
        return check("irqbalance", OK, "not running")
    cpus = format_cpu_list(f.get("isolcpus") or measured_cpus(f)) or "<cpus>"
    return check(
        "irqbalance", WARN, "running: it moves device IRQs, also onto measured CPUs",
        f"`systemctl stop irqbalance` for the run, or ban the measured CPUs: "
        f"IRQBALANCE_BANNED_CPULIST={cpus} in /etc/default/irqbalance",
    )


def check_nmi_watchdog(f: dict) -> dict | None:
    value = f.get("nmi_watchdog")
    if value is None:
        return None
    if value == 0:
        return check("nmi_watchdog", OK, "off")
    return check(
        "nmi_watchdog", WARN, "on: a periodic NMI on every CPU",
        "an NMI cannot be preempted or masked and lands inside the measurement: "
        "`sysctl kernel.nmi_watchdog=0` (or boot with `nmi_watchdog=0`)",
    )


def check_kernel_debug(f: dict) -> dict | None:
    options = f.get("kernel_debug_options")
    if not f.get("kernel_config_available"):
        return None
    if not options:
        return check("kernel_debug", OK, "no latency-costly debug options")
    return check(
        "kernel_debug", WARN, ", ".join(options),
        "these debug options add work to every lock, preemption or allocation: measure on a "
        "kernel built without them",
    )


def check_load(f: dict) -> dict | None:
    load, cpus = f.get("loadavg"), f.get("cpus") or 1
    if not load:
        return None
    value = f"load average {load[0]:.2f} on {cpus} CPUs"
    if load[0] > 0.5 * cpus:
        return check(
            "load", WARN, value,
            "something else is busy: an 'idle' measurement would not be idle; stop it or note it",
        )
    return check("load", OK, value)


# -- what can be measured -------------------------------------------------------------

def check_timerlat(f: dict) -> dict:
    available, source = f.get("timerlat_available"), f.get("tracers_source")
    mounted = f.get("tracefs_mounted")
    mount_hint = "`mount -t tracefs nodev /sys/kernel/tracing`"
    if available is None:
        return check(
            "timerlat", INFO, "unknown: tracefs not mounted and no kernel config",
            f"{mount_hint} so rtgauge can see and use the timerlat tracer",
        )
    if not available:
        return check(
            "timerlat", INFO, f"unavailable (per {source})",
            "the kernel's own split of latency into IRQ and thread parts cannot be shown; it needs a "
            "kernel built with CONFIG_TIMERLAT_TRACER=y and CONFIG_OSNOISE_TRACER=y "
            "(Debian's stock and RT kernels have them)",
        )
    if not mounted:
        return check("timerlat", INFO, "built in, but tracefs is not mounted", mount_hint)
    extra = ", osnoise too" if f.get("osnoise_available") else ""
    return check("timerlat", OK, f"available at {f.get('tracefs_path')}{extra}")


def check_virtualization(f: dict) -> dict:
    virt = f.get("virtualization") or {}
    if not virt.get("vm"):
        return check("virtualization", OK, "bare metal")
    evidence = "; ".join(virt.get("evidence") or [])
    if virt.get("emulated"):
        return check(
            "virtualization", WARN, f"full-system emulation: {virt.get('kind')} ({evidence})",
            "every instruction is translated in software: the kernel, its preemption model and the userland "
            "are real, but no timing measured here says anything about a hardware; measure the board itself",
        )
    return check(
        "virtualization", INFO, f"virtual machine: {virt.get('hypervisor')} ({evidence})",
        "a VM adds hypervisor latency (the host preempts vCPUs; timers and IPIs exit to it): "
        "results describe this VM, not the hardware; for the target itself measure bare metal, or "
        "pin vCPUs to isolated host CPUs on an RT host kernel",
    )


def check_tools(f: dict) -> dict | None:
    tools = f.get("tools") or {}
    if not tools:
        return None
    value = ", ".join(f"{name} {version or 'missing'}" for name, version in tools.items())
    missing = [name for name, version in tools.items() if version is None]
    if not missing:
        return check("tools", OK, value)
    packages = sorted({"rt-tests" if n in ("cyclictest", "hackbench") else n for n in missing})
    return check(
        "tools", INFO, value,
        f"cross-checks and loads need them: `apt install {' '.join(packages)}`",
    )


CHECKS: list[Callable[[dict], dict | None]] = [
    check_privileges,
    check_memlock,
    check_rt_cgroup,
    check_rt_throttling,
    check_preemption,
    check_governor,
    check_smt,
    check_isolation,
    check_idle_states,
    check_cpu_dma_latency,
    check_clocksource,
    check_swap,
    check_thp,
    check_irqbalance,
    check_nmi_watchdog,
    check_kernel_debug,
    check_load,
    check_timerlat,
    check_virtualization,
    check_tools,
]
