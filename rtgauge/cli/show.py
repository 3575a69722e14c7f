"""`rtgauge show [RUN]`: the runs in the results store, or one run in detail."""

from __future__ import annotations

import argparse

from rtgauge.analysis.run.verdict import judge, make_budget
from rtgauge.cli.common import tell_abandoned
from rtgauge.config import budget_table
from rtgauge.errors import UserError
from rtgauge.report.document import print_json, rating_json, run_document
from rtgauge.report.runtext import (print_micro_figures, print_pwcet, print_run, print_run_list, print_tire_cost,
                                    print_tire_limits, print_tire_pretest)
from rtgauge.report.safe import SafeConsole, say
from rtgauge.report.terminal import print_verdict
from rtgauge.store.reading import open_for_reading, parse_run_argument


def show_budget(args):
    """The budget to judge a shown run against: the command line's, else the config
    file's [budget], else None."""
    given = {k: getattr(args, a, None) for k, a in (("latency_us", "budget_us"), ("period_us", "period_us"),
                                                    ("miss_rate", "miss_rate"))}
    if any(v is not None for v in given.values()):
        return make_budget(**given, source="command line")
    conf = budget_table()
    if conf.get("latency_us") is None:
        return None
    return make_budget(conf.get("latency_us"), conf.get("period_us"), conf.get("miss_rate"), "config file")


def show(args: argparse.Namespace) -> int:
    fmt = args.format
    wanted = parse_run_argument(args.run)
    budget = show_budget(args)
    # Looking must not create an empty database file as a side effect.
    with open_for_reading(args.db) as store:
        if not store.made:
            return say_no_runs(store.url, args.json, wanted)
        tell_abandoned(store)
        if wanted is None:
            runs = store.list_runs()
            if not runs:
                return say_no_runs(store.url, args.json, wanted)
            if args.json:
                print_json(runs)
            else:
                print_run_list(runs, store.url, fmt)
            return 0
        run_id = store.latest_run_id() if wanted == "latest" else wanted
        run = None if run_id is None else store.get_run(run_id)
        if run is None:
            if run_id is None:
                return say_no_runs(store.url, args.json, wanted)
            raise UserError(f"no run {run_id} in {store.url}; `rtgauge show` lists the runs.")
        verdict = None
        if budget is not None:
            verdict = judge(run, budget)
        if args.json:
            doc = run_document(run)
            doc["rating"] = rating_json(run)
            if verdict is not None:
                doc["verdict"] = verdict.to_json()
            print_json(doc)
        else:
            if verdict is not None:
                print_verdict(SafeConsole(highlight=False), verdict)
            print_run(run, fmt)
            print_pwcet(run, fmt)
            print_micro_figures(run, fmt)
            print_tire_limits(run, fmt)
            print_tire_pretest(run, fmt)
            print_tire_cost(run, fmt)
        return verdict.exit_status if verdict is not None else 0


def say_no_runs(where: str, as_json: bool, wanted) -> int:
    if wanted not in (None, "latest"):
        raise UserError(f"no run {wanted} in {where}; it has no runs yet, `rtgauge run` makes one.")
    if as_json:
        print_json([] if wanted is None else None)
    else:
        say(f"There are no runs in {where} yet; `rtgauge run` measures this machine and stores one.")
    return 0


