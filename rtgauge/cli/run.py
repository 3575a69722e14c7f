"""`rtgauge run`: its options (declared in rtgauge/cli/parsers/run.py) made into a
RunRequest (rtgauge/plan/session.py) that RunLifecycle runs (rtgauge/plan/lifecycle.py:
prepare, check, apply, measure, store, judge, report)."""

from __future__ import annotations

import signal
import sys
from dataclasses import fields

from rtgauge import stops
from rtgauge.cli.common import check_report_path
from rtgauge.plan.lifecycle import RunLifecycle
from rtgauge.plan.session import RunRequest
from rtgauge.report.safe import table_console


def cmd_run(args) -> int:
    """The options as a RunRequest, run by the lifecycle (rtgauge/plan/lifecycle.py)."""
    # with --json, standard output carries the run's document only: the rest goes to stderr
    console = table_console(args.format, stderr=args.json)
    # SIGTERM before the measurement's own handling starts ends the command as Ctrl-C does,
    # and both are recorded as well as raised (rtgauge/stops.py: a raise can be lost); a
    # SIGINT the caller ignores (a background job without job control) stays ignored
    stops.clear()              # a command starts with no stop asked (tests run several in one process)
    signal.signal(signal.SIGTERM, stops.interrupt)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, stops.interrupt)
    check_report_path(args)
    return RunLifecycle(run_request(args), console).run()


def run_request(args) -> RunRequest:
    """What the user asked, as the plain request the lifecycle takes: every option by
    its name, and the command line stored with the run."""
    return RunRequest(**{f.name: getattr(args, f.name) for f in fields(RunRequest) if f.name != "argv"},
                      argv=sys.argv)
