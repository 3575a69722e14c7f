"""JUnit XML for CI (docs/ci.md): one <testsuite> per run (or comparison), one
<testcase> per job and rule, a <failure> when the rule is broken, an <error> when it
could not be decided or read an incomplete measurement. The layout is the common JUnit
schema's (the Ant/Jenkins one that CI servers read): testsuites > testsuite
(name, tests, failures, errors, skipped, time, timestamp, hostname) > testcase
(name, classname, time) with at most one failure / error child carrying message and type."""

from __future__ import annotations

import socket
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from datetime import datetime, timezone

from rtgauge import safefile
from rtgauge.analysis.run.verdict import NO, YES
from rtgauge.errors import UserError
from rtgauge.printable import printable

PASS, FAIL, UNDECIDED, INCOMPLETE = "pass", "fail", "undecided", "incomplete"


@dataclass
class Case:
    classname: str        # the job (e.g. "run 12.latency/idle")
    name: str             # the rule or "verdict"
    outcome: str          # pass | fail | undecided | incomplete
    message: str
    time_s: float = 0.0


@dataclass
class Suite:
    name: str
    cases: list[Case]
    timestamp: str | None = None      # ISO 8601, when the measured run started
    time_s: float = 0.0


def _clean(text: str) -> str:
    """Text XML 1.0 can carry (no control characters), printable."""
    return printable(str(text))


def to_xml(suites: list[Suite]) -> bytes:
    root = ET.Element("testsuites", name="rtgauge")
    totals = {"tests": 0, "failures": 0, "errors": 0}
    host = _clean(socket.gethostname() or "localhost")
    for i, s in enumerate(suites):
        failures = sum(c.outcome == FAIL for c in s.cases)
        errors = sum(c.outcome in (UNDECIDED, INCOMPLETE) for c in s.cases)
        stamp = (s.timestamp or datetime.now(timezone.utc).isoformat())[:19]
        el = ET.SubElement(root, "testsuite", name=_clean(s.name), tests=str(len(s.cases)),
                           failures=str(failures), errors=str(errors), skipped="0",
                           time=f"{s.time_s:.3f}", timestamp=stamp, hostname=host, id=str(i),
                           package="rtgauge")
        for c in s.cases:
            tc = ET.SubElement(el, "testcase", name=_clean(c.name), classname=_clean(c.classname),
                               time=f"{c.time_s:.3f}")
            if c.outcome == FAIL:
                f = ET.SubElement(tc, "failure", message=_clean(c.message), type="rule broken")
                f.text = _clean(c.message)
            elif c.outcome in (UNDECIDED, INCOMPLETE):
                kind = "undecided" if c.outcome == UNDECIDED else "incomplete measurement"
                f = ET.SubElement(tc, "error", message=_clean(c.message), type=kind)
                f.text = _clean(c.message)
        totals["tests"] += len(s.cases)
        totals["failures"] += failures
        totals["errors"] += errors
    for k, v in totals.items():
        root.set(k, str(v))
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


def fail_closed(suite: Suite, incomplete: list[str], classname: str) -> Suite:
    """The suite as the exit status reads it when a run it judged is incomplete
    (interrupted, abandoned, a measurement stopped early: exit 5 or 130): no case of it
    passes, and one case says why (docs/ci.md)."""
    if not incomplete:
        return suite
    why = incomplete[0] + (f" (and {len(incomplete) - 1} more)" if len(incomplete) > 1 else "")
    cases = [Case(c.classname, c.name, INCOMPLETE, f"not judged: {why}; {c.message}", c.time_s)
             if c.outcome == PASS else c for c in suite.cases]
    cases.append(Case(classname, "complete measurement", INCOMPLETE, f"a gate does not read {why}; measure it "
                      "again to a complete run"))
    return Suite(suite.name, cases, suite.timestamp, suite.time_s)


def check_path(path: str | None) -> None:
    """Refuse a JUnit path that cannot be written before anything is measured."""
    safefile.check_option("--junit", path, "give a regular file path, - or /dev/stdout")


def write_junit(path: str, suites: list[Suite]) -> None:
    """Through the one writer (rtgauge/safefile.py): a link, a device, a FIFO or a
    directory at path is refused; the file appears whole or not at all."""
    try:
        safefile.write_bytes(path, to_xml(suites))
    except OSError as e:
        raise UserError(f"cannot write the JUnit file {printable(path, 120)} ({safefile.reason(e)}); choose "
                        "another with --junit.") from None


def verdict_cases(v, run_id) -> list:
    """The verdict as JUnit test cases: one per latency job, named after the budget."""
    name = f"verdict: {v.budget.text()}"
    out = []
    for j in v.jobs:
        outcome = {YES: "pass", NO: "fail"}.get(j.answer, "undecided")
        out.append(Case(f"run {run_id}.{j.name}", name, "incomplete" if v.incomplete else outcome, j.why))
    if not v.jobs:
        out.append(Case(f"run {run_id}.(run)", name, "incomplete" if v.incomplete else "undecided",
                        "; ".join(v.reasons)))
    return out
