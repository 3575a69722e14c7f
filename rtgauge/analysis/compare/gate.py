"""CI gates on one run: `run --fail-on RULE` with absolute rules (compare's rule
language, rtgauge/analysis/compare/regress.py: 'max_latency>100us', 'misses>0',
'p99_latency>50us', 'micro_max>20us', 'pwcet>200us'), each checked per job. A change
rule ('+20%') needs a baseline and belongs to `rtgauge compare`.

Each (rule, job) gives a Check: pass, fail (the rule is broken: exit 3), undecided (the
pWCET is not credible for that job: exit 4) or incomplete (the job failed or was
interrupted: the gate fails closed, exit 5); rtgauge/errors.py gate_status combines them."""

from __future__ import annotations

from dataclasses import dataclass

from rtgauge.analysis.compare.regress import Change, INVALID, Rule, SAME, UNITS, figures, parse_rule
from rtgauge.analysis.run.rows import latency_measurements
from rtgauge.analysis.run.verdict import worst_case
from rtgauge.records import Run
from rtgauge.errors import EXIT_GATE_TRIPPED, EXIT_INCOMPLETE, EXIT_OK, EXIT_UNDECIDED, UserError

PASS, FAIL, UNDECIDED, INCOMPLETE = "pass", "fail", "undecided", "incomplete"
STATUS = {PASS: EXIT_OK, FAIL: EXIT_GATE_TRIPPED, UNDECIDED: EXIT_UNDECIDED, INCOMPLETE: EXIT_INCOMPLETE}


@dataclass
class Check:
    rule: str
    job: str
    outcome: str          # pass | fail | undecided | incomplete
    message: str

    @property
    def exit_status(self) -> int:
        return STATUS[self.outcome]

    def to_json(self) -> dict:
        return {"rule": self.rule, "job": self.job, "outcome": self.outcome, "message": self.message}


def parse_run_rule(text: str) -> Rule:
    """An absolute rule for one run; a change rule is refused with what to do instead."""
    rule = parse_rule(text)
    if rule.signed:
        raise UserError(f"--fail-on '{text}' is a change from a baseline, which one run does not have; on "
                        f"`run` give an absolute limit such as '{rule.family}>100us', or compare two runs with "
                        "`rtgauge compare BASE RUN --fail-on ...`.")
    return rule


def _job_of(label: str) -> str:
    return label.split(" ")[0]


def check_rule(run: Run, rule: Rule) -> list[Check]:
    if rule.family == "pwcet":
        return check_pwcet(run, rule)
    figs = [f for f in figures(run).values() if f.family == rule.family]
    if not figs:
        return [Check(rule.text, "(run)", INCOMPLETE,
                      f"run {run.id} has no {rule.family} figure (no such job, or it failed); a gate fails "
                      "when it has nothing to check")]
    out = []
    for f in figs:
        job = _job_of(f.label) if f.key.startswith("lat:") else f.label
        if f.invalid or f.failed:
            out.append(Check(rule.text, job, INCOMPLETE,
                             f"{f.label} cannot be checked ({f.invalid or '; '.join(f.failed)}); a gate fails "
                             "closed on a failed or partial measurement"))
            continue
        hit = rule.trips(Change(f, None, f.value, SAME, "one run"))
        shown = rule.shown(f.value, f.unit) if f.unit == "ns" else (
            f"{f.value:g}" if f.unit == "count" else f"{f.value:g} {f.unit}")
        out.append(Check(rule.text, job, FAIL if hit else PASS,
                         f"{f.label} = {shown}" + (" breaks the rule" if hit else " keeps the rule")))
    return out


def check_pwcet(run: Run, rule: Rule) -> list[Check]:
    """'pwcet>X': the credible worst case of each engine latency job against X; a job
    without a credible one is undecided (the reason is said)."""
    limit_us = rule.amount * UNITS.get(rule.unit or "us", 1e3) / 1000
    out = []
    for m in (m for m in latency_measurements(run) if m.tool == "engine"):
        if not m.ok or m.stopped_early:
            out.append(Check(rule.text, m.label, INCOMPLETE, f"{m.label} " + (m.stopped_early or "failed")))
            continue
        wc = worst_case(m)
        if not wc["credible"]:
            out.append(Check(rule.text, m.label, UNDECIDED, f"no credible worst case: {wc['why']}"))
            continue
        level = wc["level_us"]
        hit = level > limit_us if rule.op == ">" else level < limit_us
        out.append(Check(rule.text, m.label, FAIL if hit else PASS,
                         f"credible worst case {level:,.1f} µs" + (" breaks the rule" if hit else " keeps the rule")))
    if not out:
        out.append(Check(rule.text, "(run)", INCOMPLETE, f"run {run.id} has no engine latency job for a pWCET"))
    return out


def check_run(run: Run, rules: list[Rule]) -> list[Check]:
    return [c for rule in rules for c in check_rule(run, rule)]


__all__ = ["Check", "check_run", "parse_run_rule", "INVALID"]


def incomplete_runs(runs) -> list[str]:
    """What a gate must not read: a run interrupted, abandoned or still running, and each
    measurement that was interrupted, as phrases naming them."""
    out = []
    for run in runs:
        if run.status in ("interrupted", "abandoned", "running"):
            out.append(f"run {run.id}, which is {run.status}")
        else:
            out += [f"run {run.id}'s measurement {m.label}, which was {m.stopped_early.split(':')[0]}"
                    for m in run.measurements if m.stopped_early]
    return out
