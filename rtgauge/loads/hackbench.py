"""The sched load: hackbench in a loop (groups of processes passing messages)."""

from __future__ import annotations

import shutil

from rtgauge.loads.base import ProcessLoad


class Hackbench(ProcessLoad):
    name = "sched"
    description = "hackbench in a loop: groups of processes passing messages (scheduler load)"
    tools = ("hackbench", "sh")
    GROUPS, LOOPS = 4, 200

    def argv(self) -> list[str]:
        exe = shutil.which("hackbench") or "hackbench"
        return ["sh", "-c", f"while :; do {exe} -g {self.GROUPS} -l {self.LOOPS} || exit 1; done"]

    def tool_name(self) -> str:
        return "hackbench"

    def details(self) -> dict:
        return self.parse_times((self.workdir / "log.txt").read_text(errors="replace"))

    @classmethod
    def parse_times(cls, log: str) -> dict:
        """What hackbench's output says: its runs and their times."""
        times = []
        for line in log.splitlines():
            if line.startswith("Time:"):
                try:
                    times.append(float(line.split()[1]))
                except (IndexError, ValueError):
                    pass
        out = {"groups": cls.GROUPS, "loops": cls.LOOPS, "hackbench_runs": len(times)}
        if times:
            out.update(hackbench_mean_s=round(sum(times) / len(times), 4),
                       hackbench_max_s=max(times), hackbench_total_s=round(sum(times), 3))
        return out
