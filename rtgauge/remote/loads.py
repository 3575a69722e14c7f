"""Loads on a target: the load conditions started over the run's connection, in
a session of their own under keep.sh, so that they end when the job ends, on
Ctrl-C, and by themselves when the connection is lost (no heartbeat for
SILENCE_S seconds): no load process is left on the target.

What a load delivered is recorded as for a local load: CPU seconds of its session
from the target's /proc/PID/stat (read over the connection), the wall time,
stress-ng's bogo-ops from its --yaml file there, hackbench's times from its output.

Which conditions run there (refusal_reason() says why one does not, in a sentence,
before anything is stored): cpu, memory, io (in the load's directory under the
target's /tmp), net, irq-heavy and mixed (socket stressors in a network namespace
of their own, as here: they need unshare and ip there) with stress-ng; sched with
hackbench; command:... with sh. Every one needs setsid there (util-linux, or
BusyBox). Not there: ping-tcp and net with --allow-netns, whose namespace pair is
set up by a script of this machine's rtgauge."""

from __future__ import annotations

import time

from rtgauge.errors import UserError
from rtgauge.loads import CONDITIONS, Hackbench, Load, LoadContext, PACKAGES, StressNg, make_load
from rtgauge.loads.stress import parse_stress_ng_metrics

NOT_ON_TARGET = {
    "ping-tcp": "it joins two network namespaces with a script of this machine's rtgauge",
    "ipi": "its sender is a Python script of this machine's rtgauge that opens perf events there",
}


def tools_for(condition: str, ctx: LoadContext | None = None) -> list[str]:
    """The programs the condition needs on the target (raises for one that cannot run there)."""
    if condition.startswith("command:"):
        return ["setsid", "sh"]
    if condition == "idle":
        return []
    cls = CONDITIONS.get(condition)
    if cls is None:
        make_load(condition)         # the unknown-condition sentence
    if condition in NOT_ON_TARGET:
        raise UserError(f"condition {condition} cannot run on a target: {NOT_ON_TARGET[condition]}; measure it "
                        "with rtgauge on the board itself.")
    if condition == "net" and ctx is not None and ctx.allow_netns:
        raise UserError("--allow-netns cannot run on a target: the veth pair is set up by a script of this "
                        "machine's rtgauge; drop --allow-netns (net is then loopback traffic there).")
    if issubclass(cls, StressNg):
        return ["setsid", "stress-ng"] + (["unshare", "ip"] if cls.sockets else [])
    if issubclass(cls, Hackbench):
        return ["setsid", "sh", "hackbench"]
    raise UserError(f"condition {condition} cannot run on a target.")


def check_on_target(conditions, session, ctx: LoadContext | None = None) -> None:
    """Refuse, in one sentence, a condition the target cannot run (before anything is stored)."""
    seen: dict[str, bool] = {}
    for condition in dict.fromkeys(conditions):
        for tool in tools_for(condition, ctx):
            if tool not in seen:
                seen[tool] = session.has(tool)
            if not seen[tool]:
                package = {"setsid": "util-linux"}.get(tool, PACKAGES.get(tool, tool))
                raise UserError(f"condition {condition} cannot run on {session.address}: it needs {tool}, which "
                                f"is not installed there; install {package} there, or drop the condition.")


def target_load(condition: str, session, ctx: LoadContext | None = None) -> Load:
    if condition == "idle":
        return Load(ctx)
    tools_for(condition, ctx)
    return TargetLoad(condition, session, ctx or LoadContext())


class TargetLoad(Load):
    """One load condition kept on a target for a job."""

    def __init__(self, condition: str, session, ctx: LoadContext):
        super().__init__(ctx)
        self.name = condition
        self.session = session
        self.kept = None
        self.started = 0.0
        self.last_cpu_s = 0.0
        self.lost: str | None = None
        self.workers = ctx.workers or session.cpus()
        self.local = None if condition.startswith("command:") else CONDITIONS[condition](ctx)

    # what runs there ------------------------------------------------------------------

    def argv(self, d: str) -> list[str]:
        if self.name.startswith("command:"):
            return ["sh", "-c", self.name[len("command:"):].strip()]
        if isinstance(self.local, Hackbench):
            return ["sh", "-c", f"while :; do hackbench -g {Hackbench.GROUPS} -l {Hackbench.LOOPS} || exit 1; done"]
        cmd = ["stress-ng", *self.local.stressors(self.workers), "--timeout", "0", "--metrics",
               "--yaml", f"{d}/metrics.yaml", "--temp-path", d]
        if self.local.sockets:   # as own_network_namespace() here: the login there is root
            cmd = ["unshare", "--net", "--", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", *cmd]
        return cmd

    def tool_name(self) -> str:
        if self.name.startswith("command:"):
            return "command"
        return "hackbench" if isinstance(self.local, Hackbench) else "stress-ng"

    # the Load interface -----------------------------------------------------------------

    def check(self) -> None:
        check_on_target([self.name], self.session, self.ctx)

    def start(self) -> None:
        self.kept = self.session.start_kept(self.argv)
        self.started = time.monotonic()
        time.sleep(0.3)
        if not self.running():
            got = self.session.stop_kept(self.kept)
            self.kept = None
            lines = got.get("log", b"").decode(errors="replace").strip().splitlines()
            raise UserError(f"the {self.name} load exited at once on {self.session.address} "
                            f"({lines[-1] if lines else 'no message'}); run its command there by hand to see "
                            f"why: {' '.join(self.argv('DIR'))}")

    def running(self) -> bool:
        return self.kept is not None and self.lost is None and self.session.kept_running(self.kept)

    def snapshot(self) -> dict:
        if self.kept is None:
            return {}
        if self.lost is None and self.kept.pid:
            try:
                ticks = session_ticks(self.session.stat_lines(), self.kept.pid)
                self.last_cpu_s = max(self.last_cpu_s, ticks / self.session.clock_ticks())
            except Exception as e:      # the connection is gone: keep what was read before
                self.lost = str(e) or type(e).__name__
        return {"cpu_s": round(self.last_cpu_s, 3), "wall_s": round(time.monotonic() - self.started, 3)}

    def stop(self) -> dict:
        delivered = {"condition": self.name, "tool": self.tool_name(), "command": self.argv("DIR"),
                     "target": self.session.address}
        if self.kept is None:
            return delivered
        delivered["alive_until_stop"] = self.running()
        delivered.update(self.snapshot())
        if self.lost is None:
            try:
                files = self.session.stop_kept(self.kept, ("log", "metrics.yaml"))
                delivered.update(self.details(files))
            except Exception as e:
                self.lost = str(e) or type(e).__name__
        if self.lost is not None:
            delivered["alive_until_stop"] = False
            delivered["connection"] = (f"lost during the load ({self.lost[:200]}); the load stops there by "
                                       "itself")
        self.kept = None
        return delivered

    def details(self, files: dict[str, bytes]) -> dict:
        log = files.get("log", b"").decode(errors="replace")
        if isinstance(self.local, StressNg):
            text = files.get("metrics.yaml")
            out = parse_stress_ng_metrics(text.decode(errors="replace")) if text is not None \
                else {"metrics": "stress-ng wrote no metrics"}
            out["workers"] = self.workers
            if self.name in ("io", "mixed"):
                out["directory"] = f"{self.kept.directory} on {self.session.address}"
            return out
        if isinstance(self.local, Hackbench):
            return Hackbench.parse_times(log)
        return {}


def session_ticks(stat_lines: bytes, sid: int) -> int:
    """utime + stime + cutime + cstime of the live processes of session `sid`, from
    the concatenated /proc/PID/stat of a machine."""
    total = 0
    for line in stat_lines.decode(errors="replace").splitlines():
        head, sep, tail = line.rpartition(")")
        fields = tail.split()
        if not sep or len(fields) < 15 or not fields[3].lstrip("-").isdigit():
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            total += sum(int(x) for x in fields[11:15])
    return total
