"""The doctor's facts of a target: the files the facts readers (rtgauge/sysinfo)
read, fetched from the target in one framed read over the connection into a
private tree here, and read there by the same readers (collect_facts(root)) that
read this machine. So the stored system facts and `rtgauge doctor --target`
describe the target, not this machine.

What cannot come as a file comes from a command in the same read: the kernel
config (/proc/config.gz decompressed there, compressed again here), whether
/dev/cpu_dma_latency is writable for the login, the versions of cyclictest,
hackbench and stress-ng there, and `uname -m` where /proc/sys/kernel/arch is
missing (before Linux 6.x)."""

from __future__ import annotations

import gzip
import os
import shutil
import tempfile
from pathlib import Path

from rtgauge.sysinfo.facts import collect_facts
from rtgauge.sysinfo.tools import VERSION_PATTERN, VERSION_QUERIES

CPU = "/sys/devices/system/cpu"
# what collect_facts reads (rtgauge/sysinfo/facts.py), as paths and globs
FILES = " ".join([
    "/proc/cmdline", "/proc/sys/kernel/osrelease", "/proc/sys/kernel/hostname", "/proc/sys/kernel/version",
    "/proc/sys/kernel/arch", "/etc/machine-id", f"{CPU}/online", "/proc/cpuinfo",
    f"{CPU}/cpu[0-9]*/topology/core_id", f"{CPU}/cpu[0-9]*/topology/physical_package_id",
    f"{CPU}/cpu[0-9]*/topology/thread_siblings_list", "/sys/devices/system/node/online", "/proc/loadavg",
    "/etc/tuned/active_profile", f"{CPU}/smt/control", f"{CPU}/smt/active", "/sys/kernel/realtime",
    "/sys/kernel/debug/sched/preempt", "/sys/kernel/debug/sched_preempt", f"{CPU}/isolated", f"{CPU}/nohz_full",
    f"{CPU}/cpu[0-9]*/cpufreq/scaling_governor", f"{CPU}/cpu[0-9]*/cpufreq/scaling_driver",
    f"{CPU}/cpu0/cpuidle/state[0-9]*/name", f"{CPU}/cpu0/cpuidle/state[0-9]*/desc",
    f"{CPU}/cpu0/cpuidle/state[0-9]*/latency", f"{CPU}/cpu0/cpuidle/state[0-9]*/disable",
    f"{CPU}/cpuidle/current_driver", f"{CPU}/cpuidle/current_governor", f"{CPU}/cpuidle/current_governor_ro",
    "/sys/devices/system/clocksource/clocksource0/available_clocksource",
    "/sys/devices/system/clocksource/clocksource0/current_clocksource",
    "/proc/sys/kernel/sched_rt_runtime_us", "/proc/sys/kernel/sched_rt_period_us", "/proc/meminfo",
    "/proc/sys/vm/swappiness", "/sys/kernel/mm/transparent_hugepage/enabled",
    "/sys/kernel/mm/transparent_hugepage/defrag", "/proc/[0-9]*/comm", "/proc/sys/kernel/nmi_watchdog",
    "/proc/sys/kernel/timer_migration", "/proc/self/mounts", "/proc/mounts",
    "/sys/kernel/tracing/available_tracers", "/sys/kernel/debug/tracing/available_tracers",
    "/proc/self/status", "/proc/self/limits", "/proc/self/cgroup",
    "/sys/fs/cgroup/cpu/cpu.rt_runtime_us", "/sys/fs/cgroup/cpu/*/cpu.rt_runtime_us",
    "/sys/fs/cgroup/cpu/*/*/cpu.rt_runtime_us", "/sys/fs/cgroup/cpu,cpuacct/*/cpu.rt_runtime_us",
    "/sys/class/dmi/id/sys_vendor", "/sys/class/dmi/id/product_name", "/sys/hypervisor/type",
    "/proc/device-tree/compatible", "/proc/device-tree/model",
    '"/boot/config-$(uname -r)"',
    # for the tuning of a target (rtgauge/remote/tune.py)
    "/proc/irq/default_smp_affinity", "/proc/irq/[0-9]*/smp_affinity_list",
])
# commands whose output is framed like a file: (NAME, shell command); '' frames NAME empty
EXTRA = [
    # (a test before a command: no process where there is nothing to run it on)
    ("@config", "[ -r /proc/config.gz ] && { gzip -dc /proc/config.gz || zcat /proc/config.gz; }"),
    ("@machine", "[ -r /proc/sys/kernel/arch ] || uname -m"),
    ("/dev/cpu_dma_latency", ""),      # kept below only when the board says it is writable
    ("@dma-writable", "[ -w /dev/cpu_dma_latency ] && echo yes"),
    *((f"@tool/{tool}", f"p=$(command -v {tool} 2>/dev/null) && [ -f \"$p\" ] && [ -x \"$p\" ] && "
       f"{{ echo installed; {tool} {' '.join(args)} 2>&1 </dev/null | head -n 5; }}")
      for tool, args in VERSION_QUERIES.items()),
]


def tree_path(root: str, path: str) -> Path | None:
    """Where a board's file `path` goes in the private tree, or None for a name that is
    not a plain absolute path below / (/, .., ., empty parts): nothing lands outside."""
    parts = path.split("/")
    if not path.startswith("/") or len(path) > 4096 or any(p in ("", ".", "..") for p in parts[1:]) \
            or len(parts) < 2 or "\0" in path:
        return None
    return Path(root, *parts[1:])


def fetch_tree(read_files, extra=EXTRA) -> tuple[str, dict[str, bytes]]:
    """The target's files in a new private directory here, and the framed command
    outputs (@config, @machine, @tool/NAME). read_files: SshTarget.read_files,
    called synchronously (TargetSession.read_files)."""
    got = read_files(FILES, extra)
    outputs: dict[str, bytes] = {k: v for k, v in got.items() if k.startswith("@")}
    if outputs.get("@dma-writable", b"").strip() != b"yes":
        got.pop("/dev/cpu_dma_latency", None)
    root = tempfile.mkdtemp(prefix="rtgauge-target-tree-")
    try:
        for path, content in got.items():
            local = None if path.startswith("@") else tree_path(root, path)
            if local is None:
                continue
            try:
                local.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(local, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            except OSError:
                continue            # a name that clashes with a directory of another: left out
            with os.fdopen(fd, "wb") as f:
                f.write(content)
    except BaseException:
        remove_tree(root)
        raise
    config = outputs.get("@config", b"")
    if config.strip():
        Path(root, "proc").mkdir(exist_ok=True)
        with gzip.open(Path(root, "proc", "config.gz"), "wb") as f:
            f.write(config)
    return root, outputs


def tool_versions(outputs: dict[str, bytes]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for tool in VERSION_QUERIES:
        text = outputs.get(f"@tool/{tool}")
        if text is None or not text.startswith(b"installed\n"):
            out[tool] = None
            continue
        m = VERSION_PATTERN.search(text[10:].decode(errors="replace"))
        out[tool] = m.group(1) if m else "installed (version unknown)"
    return out


def target_facts(read_files, address: str) -> dict:
    """collect_facts() of the target, read through the connection."""
    root, outputs = fetch_tree(read_files)
    try:
        facts = collect_facts(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if not facts.get("arch"):
        facts["arch"] = outputs.get("@machine", b"")[:64].decode(errors="replace").strip() or None
    facts["tools"] = tool_versions(outputs)
    # privileges: /proc/self is the reading process there, so they are the login's
    facts["target"] = address
    facts["facts_from"] = f"{address} (its /proc, /sys and /etc, read over the connection)"
    return facts


def tuning_tree(read_files) -> str:
    """The files a tuning of the target reads, in a private directory here (not the
    tools' versions nor the kernel's configuration: a tuning reads neither, and each is
    a process there)."""
    root, _ = fetch_tree(read_files, [(name, command) for name, command in EXTRA
                                      if not name.startswith(("@tool/", "@config"))])
    return root


def remove_tree(root: str) -> None:
    if root and os.path.basename(root).startswith("rtgauge-target-tree-"):
        shutil.rmtree(root, ignore_errors=True)
