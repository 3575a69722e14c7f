"""Load conditions: what runs beside a measurement.

A condition is started before a job and stopped after it, also when the job fails or
rtgauge is interrupted. Every load runs under its own supervisor (supervise.py) in a
session of its own: the supervisor adopts whatever the load forks and kills the whole
session when rtgauge exits, however it exits (SIGKILL included). stop() returns what
the load delivered (CPU seconds of its processes from /proc, stress-ng's bogo-ops,
hackbench's times, packets through the veth pair), so a "loaded" measurement is
checkable.

Each concern has its module: base.py (LoadContext, Load, ProcessLoad and the process
accounting), stress.py (stress-ng), hackbench.py, netns.py (the veth-pair loads and
their script), ipi.py (the IPI flood onto the measured CPUs, worker ipiflood.py),
command.py (a user command). This module names the conditions, makes a
load from a condition's name and judges what a load delivered."""

from __future__ import annotations

from rtgauge.errors import UserError
from rtgauge.loads.base import (CLK_TCK, PACKAGES, SUPERVISOR, Load, LoadContext, ProcessLoad,
                                kill_session, need_tool, proc_stat, session_cpu_seconds,
                                session_pids)
from rtgauge.loads.command import Command
from rtgauge.loads.hackbench import Hackbench
from rtgauge.loads.ipi import IpiFlood
from rtgauge.loads.netns import (NETNS_PAIR_SCRIPT, PING_TCP_TRAFFIC, TCPCOPY, UDPFLOOD,
                                 VETH_TRAFFIC, NetnsPair, PingTcp, VethNet)
from rtgauge.loads.stress import (StressCpu, StressIo, StressIrqHeavy, StressMemory, StressMixed,
                                  StressNetLoopback, StressNg, own_network_namespace,
                                  read_stress_ng_metrics)

__all__ = [
    "CLK_TCK", "CONDITIONS", "CPU_BOUND", "MIN_DELIVERED", "NETNS_PAIR_SCRIPT", "PACKAGES",
    "PING_TCP_TRAFFIC", "SUPERVISOR", "TCPCOPY", "UDPFLOOD", "VETH_TRAFFIC",
    "Command", "Hackbench", "IpiFlood", "Load", "LoadContext", "NetnsPair", "PingTcp", "ProcessLoad",
    "StressCpu", "StressIo", "StressIrqHeavy", "StressMemory", "StressMixed", "StressNetLoopback",
    "StressNg", "VethNet", "judge_delivery", "kill_session", "make_load", "need_tool",
    "own_network_namespace", "proc_stat", "read_stress_ng_metrics", "session_cpu_seconds",
    "session_pids",
]


class _Conditions(dict):
    """The named conditions; `command:<shell command>` is a condition too."""

    def __contains__(self, name) -> bool:
        return dict.__contains__(self, name) or (isinstance(name, str) and name.startswith("command:")
                                                and bool(name[8:].strip()))


CONDITIONS: dict[str, type[Load]] = _Conditions({
    "idle": Load, "cpu": StressCpu, "memory": StressMemory, "io": StressIo,
    "net": StressNetLoopback, "sched": Hackbench, "irq-heavy": StressIrqHeavy, "mixed": StressMixed,
    "ping-tcp": PingTcp, "ipi": IpiFlood,
})


def judge_delivery(condition: str, delivered: dict) -> dict:
    """Mark what a load delivered during a measurement: "ok" false and a "problem"
    sentence when its processes were gone before the measurement ended (killed, crashed,
    or a command that exited), so the measurement is not taken for a loaded one. The
    store marks such a measurement failed (load_ok false)."""
    if condition != "idle" and delivered.get("alive_until_stop") is False:
        delivered["ok"] = False
        delivered["problem"] = (f"the {condition} load was no longer running when the measurement ended; "
                                "the measurement is not one under that load")
        return delivered
    cpu_s, wall_s, workers = delivered.get("cpu_s"), delivered.get("wall_s"), delivered.get("workers")
    if condition in CPU_BOUND and all(isinstance(x, (int, float)) for x in (cpu_s, wall_s, workers)) \
            and wall_s >= 1 and cpu_s < MIN_DELIVERED * workers * wall_s:
        delivered["ok"] = False
        delivered["problem"] = (f"the {condition} load delivered {cpu_s:.2f} CPU-seconds of the "
                                f"{workers * wall_s:.1f} intended (stopped or starved); the measurement is not "
                                "one under that load")
    elif condition != "idle":
        delivered.setdefault("ok", True)
    return delivered


# Conditions whose workers are CPU-bound: they must deliver at least MIN_DELIVERED of
# workers x wall time (a fraction low enough for a machine shared with other work; a
# stopped or frozen load delivers nothing).
CPU_BOUND = ("cpu", "memory")
MIN_DELIVERED = 0.02


def make_load(condition: str, ctx: LoadContext | None = None) -> Load:
    if condition.startswith("command:"):
        command = condition[len("command:"):].strip()
        if not command:
            raise UserError("condition `command:` needs a shell command after the colon, "
                            "e.g. `command:stress-ng --cpu 1`.")
        return Command(command, ctx)
    if condition == "net" and ctx is not None and ctx.allow_netns:
        return VethNet(ctx)
    try:
        return CONDITIONS[condition](ctx)
    except KeyError:
        raise UserError(f"unknown load condition {condition!r}; known conditions are "
                        f"{', '.join(sorted(CONDITIONS))} and command:<shell command>.") from None
