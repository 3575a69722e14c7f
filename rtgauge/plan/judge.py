"""What a run is judged by and the judging (`rtgauge run`, docs/verdict.md, docs/ci.md):
the gates decided before anything is measured (the job's budget from the command line,
the profile or the config file; the --fail-on rules; --until-verdict's ceiling; the
JUnit path), the further rounds --until-verdict measures while the verdict is undecided,
and, on the stored run, the verdict and the rules' outcomes with their exit status."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from rtgauge import safefile
from rtgauge.analysis.compare.gate import check_run, incomplete_runs, parse_run_rule
from rtgauge.analysis.run.verdict import UNDECIDED, judge, make_budget
from rtgauge.clock import SYSTEM
from rtgauge.config import budget_table
from rtgauge.errors import UserError, gate_status
from rtgauge.plan import Job, plan_seconds
from rtgauge.plan.execute import execute, parse_duration
from rtgauge.report.junit import Case, Suite, check_path, fail_closed, verdict_cases, write_junit
from rtgauge.report.safe import markup as esc


@dataclass
class Gates:
    """The run's gates, checked before anything is measured."""
    budget: object = None           # analysis.run.verdict.Budget, None: no verdict
    rules: list = field(default_factory=list)    # the --fail-on rules, parsed
    junit: str | None = None
    max_time: str = "1h"            # --until-verdict's ceiling, as given and in seconds
    max_time_s: float | None = None

    @property
    def any(self) -> bool:
        """Whether the run is gated at all (a verdict, a rule or a JUnit file)."""
        return bool(self.budget or self.rules or self.junit)


@dataclass
class Judgement:
    """The verdict (against the budget, on the first run) and the rules' outcomes, with
    the exit status they give (0: no gate)."""
    verdict: object = None
    checks: list = field(default_factory=list)
    status: int = 0


def resolve_budget(request, profile):
    """The job's budget: each value from the command line, else the profile's [budget],
    else the config file's; None when no latency is given anywhere."""
    given = {"latency_us": request.budget_us, "period_us": request.period_us, "miss_rate": request.miss_rate}
    prof = profile.budget.to_json() if profile.budget is not None else {}
    conf = budget_table()
    values, sources = {}, []
    for key, value in given.items():
        for where, table in (("command line", given), (f"profile {profile.name}", prof), ("config file", conf)):
            if table.get(key) is not None:
                values[key] = table[key]
                if where not in sources:
                    sources.append(where)
                break
    source = " and ".join(sources) or "none"
    return make_budget(values.get("latency_us"), values.get("period_us"), values.get("miss_rate"), source)


def prepare_gates(request, profile) -> Gates:
    """Rules, budget, the JUnit path and every file the run writes (by the one writer's
    rule, rtgauge/safefile.py) checked before anything is measured."""
    rules = [parse_run_rule(r) for r in request.fail_on]
    gates = Gates(resolve_budget(request, profile), rules, request.junit, request.max_time)
    check_path(request.junit)
    safefile.check_option("--run-id-file", request.run_id_file, "give a regular file path, - or /dev/stdout")
    if request.until_verdict:
        if gates.budget is None:
            raise UserError("--until-verdict measures until the verdict against a budget is decided; give "
                            "--budget-us (or a [budget] in the profile or the config file).")
        if request.interleave:
            raise UserError("--until-verdict measures one profile; leave out --interleave.")
        gates.max_time_s = parse_duration(request.max_time)
    return gates


def until_verdict(console, store, run_id: int, jobs: list[Job], warmup_s: float, view, settings, gates,
                  started: float, clock=None) -> str:
    """Repeat the latency jobs as further rounds until the verdict is decided or the
    ceiling (gates.max_time_s, --max-time) would be passed by one more round. Returns the
    status. The time taken is clock.monotonic() - started (clock: rtgauge/clock.py, the
    system's if None)."""
    latency = [j for j in jobs if j.cross_check or j.test == "latency"]
    if not latency:
        return "complete"
    one_round = plan_seconds(latency, warmup_s)
    r = max((j.round or 1) for j in jobs)
    while True:
        v = judge(store.get_run(run_id, documents=False), gates.budget)
        if v.answer != UNDECIDED:
            return "complete"
        if (clock or SYSTEM).monotonic() - started + one_round > gates.max_time_s:
            console.print(f"--until-verdict: still undecided; another round ({one_round:.0f} s) would pass "
                          f"--max-time {gates.max_time}.", markup=False)
            return "complete"
        r += 1
        console.print(f"--until-verdict: undecided, measuring round {r} of the latency jobs.", markup=False)
        extra = [replace(j, round=r, rounds=r, notes=list(j.notes)) for j in latency]
        view.grow(one_round)
        status, _ = execute(store, run_id, extra, warmup_s, view, settings)
        if status != "complete":
            return status


def judge_run(run, gates: Gates) -> Judgement:
    """The verdict against the budget and the --fail-on rules on the run."""
    verdict = judge(run, gates.budget) if gates.budget is not None else None
    if not gates.any:
        return Judgement(verdict)
    checks = check_run(run, gates.rules)
    statuses = ([verdict.exit_status] if verdict is not None else []) + [c.exit_status for c in checks]
    return Judgement(verdict, checks, gate_status(statuses))


def report_gates(console, judgement: Judgement, gates: Gates, run) -> None:
    """The rules' outcomes printed, and the verdict's and theirs written as JUnit."""
    cases = verdict_cases(judgement.verdict, run.id) if judgement.verdict is not None else []
    for c in judgement.checks:
        cases.append(Case(f"run {run.id}.{c.job}", c.rule, c.outcome, c.message))
        colour = {"pass": "green", "fail": "red"}.get(c.outcome, "yellow")
        console.print(f"--fail-on {esc(c.rule)}: {esc(c.job)}: [{colour}]{c.outcome}[/] — {esc(c.message)}")
    if gates.junit:
        # the JUnit file says what the exit status says: an interrupted run (130) or one with
        # a measurement stopped early passes nothing
        suite = fail_closed(Suite(f"rtgauge run {run.id}", cases, run.started_at), incomplete_runs([run]),
                            f"run {run.id}")
        write_junit(gates.junit, [suite])
        console.print(f"JUnit: {gates.junit}", markup=False)
