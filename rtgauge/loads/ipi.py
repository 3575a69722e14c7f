"""The `ipi` load: a flood of function-call IPIs onto the measured CPUs, the closest a
virtual machine allows to the interrupt study's device-interrupt flood (an interrupt
handled on the measured CPU, with interrupts off, as often as the CPU takes them).

The worker (ipiflood.py) toggles a perf "dummy" event bound to each measured CPU from
another CPU; each toggle is an IPI (call_function_single) handled on the measured CPU.
What it delivered is counted twice: the toggles the senders made (`ipis_sent`) and the
function-call interrupts /proc/interrupts counted on the targets between the start
and the stop (`ipis_received`, per CPU). Refused, with one sentence, where this user
may not open perf events bound to a CPU (perf_event_paranoid above 0 without
CAP_PERFMON or CAP_SYS_ADMIN), and where there is no other CPU to send from."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from rtgauge.errors import UserError
from rtgauge.loads.base import HERE, ProcessLoad
from rtgauge.loads.ipiflood import open_dummy

IPIFLOOD = HERE / "ipiflood.py"
# the worker stops itself after this long even if nothing stops it (the supervisor
# ends it with the job, and when rtgauge dies)
MAX_S = 7 * 24 * 3600
PARANOID = Path("/proc/sys/kernel/perf_event_paranoid")


def function_call_interrupts() -> list[int] | None:
    """Per CPU, the function-call interrupts counted so far (x86 'CAL' row of
    /proc/interrupts); None where the kernel shows no such row."""
    try:
        lines = Path("/proc/interrupts").read_text().splitlines()
    except OSError:
        return None
    ncpu = len(lines[0].split()) if lines else 0
    for line in lines[1:]:
        parts = line.split()
        if parts and parts[0] == "CAL:":
            return [int(x) for x in parts[1:1 + ncpu]]
    return None


class IpiFlood(ProcessLoad):
    name = "ipi"
    description = ("function-call IPIs flooding each measured CPU, sent from another CPU "
                   "(perf dummy events toggled across CPUs: each toggle an interrupt handled there)")
    tools: tuple[str, ...] = ()

    def pairs(self) -> list[tuple[int, int]]:
        allowed = sorted(os.sched_getaffinity(0))
        targets = sorted(self.ctx.measured_cpus or allowed)
        out = []
        for t in targets:
            loads = [c for c in (self.ctx.cpus or []) if c != t]
            others = [c for c in allowed if c != t]
            sender = loads[0] if loads else ([c for c in others if c > t] or others or [None])[0]
            if sender is None:
                raise UserError(f"the ipi load sends its interrupts to CPU {t} from another CPU, and this machine "
                                "lets rtgauge run on no other one; choose another condition.")
            out.append((t, sender))
        return out

    def check(self) -> None:
        pairs = self.pairs()
        try:
            os.close(open_dummy(pairs[0][0]))
        except OSError as e:
            level = PARANOID.read_text().strip() if PARANOID.exists() else "unknown"
            raise UserError(f"the ipi load needs perf events bound to a CPU, which this system refuses this user "
                            f"({e.strerror}; perf_event_paranoid is {level}: run as root, grant CAP_PERFMON or "
                            f"set it to 0 or lower), so it cannot run here.") from None

    def argv(self) -> list[str]:
        spec = ",".join(f"{t}:{s}" for t, s in self.pairs())
        return [sys.executable, str(IPIFLOOD), spec, str(MAX_S)]

    def tool_name(self) -> str:
        return "ipi-flood"

    def start(self) -> None:
        self._cal_before = function_call_interrupts()
        super().start()

    def stop(self) -> dict:
        self._cal_after = function_call_interrupts()
        return super().stop()

    def details(self) -> dict:
        pairs = self.pairs()
        sent = {}
        for t, _ in pairs:
            try:
                sent[t] = int((self.workdir / f"ipis.{t}").read_text())
            except (OSError, ValueError):
                sent[t] = 0
        out = {"targets": [t for t, _ in pairs], "senders": [s for _, s in pairs],
               "ipis_sent": sum(sent.values()), "ipis_sent_per_cpu": {str(t): n for t, n in sent.items()}}
        before, after = getattr(self, "_cal_before", None), getattr(self, "_cal_after", None)
        if before and after:
            out["ipis_received"] = {str(t): after[t] - before[t] for t, _ in pairs if t < len(after)}
        return out
