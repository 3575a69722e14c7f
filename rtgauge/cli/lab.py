"""`rtgauge lab run LAB.toml`: one profile on many boards at once, every run stored
in the lab's shared PostgreSQL database, then one HTML report with every target's
run side by side (docs/lab.md)."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from types import SimpleNamespace

from rtgauge import safefile
from rtgauge.analysis.compare.gate import check_run, incomplete_runs, parse_run_rule
from rtgauge.analysis.run.verdict import judge
from rtgauge.cli.common import check_report_path
from rtgauge.errors import UserError, gate_status
from rtgauge.lab.config import load_lab
from rtgauge.lab.places import Places
from rtgauge.lab.runner import LabRunner
from rtgauge.records import Run
from rtgauge.report.junit import Case, Suite, check_path, fail_closed, verdict_cases, write_junit
from rtgauge.report.output import write_html
from rtgauge.store import open_store


def cmd_lab(args) -> int:
    """The registry's handler: `lab run`, or `lab emulate ...`, whose parser (beside its
    handlers in rtgauge/lab/emulate/command.py) names the function for each action."""
    if args.lab_action == "run":
        return cmd_lab_run(args)
    if args.lab_action == "emulate":
        return args.func(args)
    return no_action(args)


def say(text: str) -> None:
    print(text, flush=True)


def cmd_lab_run(args) -> int:
    rules = [parse_run_rule(r) for r in getattr(args, "fail_on", [])]
    check_path(getattr(args, "junit", None))
    lab = load_lab(args.lab, args.db)
    report = None if args.no_report else (args.report or lab.report or f"rtgauge-lab-{lab.name}.html")
    check_report_path(SimpleNamespace(no_report=report is None, report=report))
    logs = prepare_logs(args.logs or f"rtgauge-lab-{lab.name}-logs")
    with open_store(lab.db) as store:        # reachable, and its schema ready, before any target starts
        url = store.url
    say(f"Lab {lab.name}: profile {lab.loaded.name} on {len(lab.targets)} targets, results go to {url}")
    with LabRunner(say) as runner:
        with contextlib.ExitStack() as held:
            addresses = {t: t.address for t in lab.targets}
            if lab.places:
                places = held.enter_context(Places(lab.coordinator, lab.places, say))
                for t in lab.targets:
                    if t.place:
                        addresses[t] = places.address(t.place)
                        say(f"[{t.name}] labgrid place {t.place} is {addresses[t]}")
            check_distinct(addresses)
            if runner.stopped:
                raise KeyboardInterrupt
            runs = runner.run(lab, addresses, logs)
        stopped = runner.stopped
    return finish(lab, runs, report, stopped, rules, getattr(args, "junit", None))


def prepare_logs(directory: str):
    path = Path(directory)
    try:
        path.mkdir(parents=True, exist_ok=True)
        os.close(safefile.create_new(path / f".rtgauge-write-test.{os.getpid()}"))
        os.unlink(path / f".rtgauge-write-test.{os.getpid()}")
    except OSError as e:
        raise UserError(f"cannot keep the targets' logs in {directory[:80]} ({e.strerror}); give a writable "
                        "directory with --logs.") from None
    return path


def check_distinct(addresses: dict) -> None:
    """Two targets that turn out to be one board (a place's address also listed as ssh://)."""
    seen: dict[str, object] = {}
    for t, address in addresses.items():
        if address in seen:
            raise UserError(f"targets {seen[address].name} and {t.name} are both {address}; a board is measured "
                            "once a lab run, remove one of them.")
        seen[address] = t


def lab_gates(lab, runs, stored: list[Run], rules, junit_path: str | None) -> int:
    """Each target's run against the rules and the profile's budget: printed, written as
    JUnit (a suite per target), and their exit status (rtgauge/errors.py gate_status)."""
    by_id = {r.id: r for r in stored}
    suites, statuses = [], []
    budget = getattr(lab.loaded, "budget", None)
    for r in runs:
        run = by_id.get(r.run_id)
        name = f"lab {lab.name}: {r.target.name}"
        if run is None:
            suites.append(Suite(name, [Case(r.target.name, "measured", "incomplete", r.reason or "nothing stored")]))
            statuses.append(5)
            continue
        cases = []
        if budget is not None:
            v = judge(run, budget)
            statuses.append(v.exit_status)
            cases += verdict_cases(v, run.id)
            say(f"  {r.target.name}: can it carry the job? {v.headline}")
        for c in check_run(run, rules):
            statuses.append(c.exit_status)
            cases.append(Case(f"{r.target.name}.{c.job}", c.rule, c.outcome, c.message))
            say(f"  {r.target.name}: --fail-on {c.rule}: {c.job}: {c.outcome} — {c.message}")
        suites.append(fail_closed(Suite(name, cases, run.started_at), incomplete_runs([run]), r.target.name))
    if junit_path:
        write_junit(junit_path, suites)
        say(f"JUnit: {junit_path}")
    return gate_status(statuses)


def finish(lab, runs, report: str | None, stopped, rules=(), junit_path: str | None = None) -> int:
    stored = []
    say("")
    say(f"Lab {lab.name}:")
    with open_store(lab.db) as store:
        for r in runs:
            run = store.get_run(r.run_id) if r.run_id is not None else None
            if run is not None:
                stored.append(run)
            where = f"{r.target.name} ({r.address})" if r.address != r.target.name else r.target.name
            if run is not None:
                text = f"run {run.id} on {run.hostname}: {run.status}, {run.note}"
            else:
                text = "nothing stored"
            if not r.ok and not (stopped and r.exit_status == 130):
                text += f"; failed: {r.reason or f'exit status {r.exit_status}'}"
            say(f"  {where}: {text}")
    if report and stored:
        ids = ",".join(str(r.id) for r in stored)
        write_html(report, stored, fix=f"the runs are stored; write their page elsewhere with `rtgauge report {ids} "
                                       "-o FILE`")
        say(f"Report of {len(stored)} run{'s' if len(stored) != 1 else ''}: {report}")
    gate = lab_gates(lab, runs, stored, list(rules), junit_path) \
        if rules or junit_path or getattr(lab.loaded, "budget", None) is not None else 0
    if stopped:
        print("rtgauge: interrupted; every target kept what it measured.", file=sys.stderr)
        return 130
    if gate:
        return gate
    failed = [r for r in runs if not r.ok]
    if failed:
        print(f"rtgauge: {len(failed)} of {len(runs)} targets failed: "
              + "; ".join(f"{r.target.name}: {r.reason or f'exit status {r.exit_status}'}" for r in failed),
              file=sys.stderr)
        return 1
    return 0


def no_action(args) -> int:
    raise UserError("rtgauge lab needs an action: `rtgauge lab run LAB.toml` or `rtgauge lab emulate start` "
                    "(docs/lab.md).")
