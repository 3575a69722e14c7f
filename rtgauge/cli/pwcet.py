"""`rtgauge pwcet (RUN | --samples FILE)`: the probable worst-case wake-up latency of a
stored run's latency measurements, or of a raw samples file, per thread and overall,
from extreme value theory (rtgauge/analysis/pwcet.py, docs/pwcet.md)."""

from __future__ import annotations

import argparse
import json
import math
import sys

from rich.markup import escape
from rich.table import Table

from rtgauge.analysis.pwcet import measurement_pwcet, samples_pwcet
from rtgauge.analysis.run.rows import is_latency_measurement
from rtgauge.defaults import EXCEEDANCE_MIN
from rtgauge.errors import UserError
from rtgauge.records import Run
from rtgauge.report.runtext import console as table_console
from rtgauge.store.reading import open_for_reading, parse_run_argument


BLOCK_CYCLES_MAX = 10**9


def parse_probability(text: str) -> float:
    try:
        p = float(text)
    except ValueError:
        p = math.nan
    if not EXCEEDANCE_MIN <= p < 1:
        raise UserError(f"--exceedance must be a probability from {EXCEEDANCE_MIN:g} to below 1, such as 1e-9 "
                        f"(got '{text[:40]}').")
    return p


def parse_block(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        n = int(text)
    except ValueError:
        n = 0
    if not 1 <= n <= BLOCK_CYCLES_MAX:
        raise UserError(f"--block-cycles must be a whole number of cycles from 1 to {BLOCK_CYCLES_MAX:,} "
                        f"(got '{text[:40]}').")
    return n


def pwcet(args: argparse.Namespace) -> int:
    def console():
        return table_console(args.format)
    p = parse_probability(args.exceedance)
    block = parse_block(args.block_cycles)
    if (args.run is None) == (args.samples is None):
        raise UserError("give either a stored RUN (an id or 'latest') or --samples FILE, not both or neither.")
    if block is not None and args.samples is None:
        raise UserError("--block-cycles applies to --samples only; a stored run's blocks are its windows.")
    if args.samples is not None:
        results = samples_pwcet(args.samples, p, block)
        if args.json:
            dump({"samples": args.samples, "exceedance": p, "results": [r.to_json() for r in results]})
        else:
            out = console()
            out.print(f"[bold]Probable worst case of {escape(args.samples)}[/]")
            print_results(out, results)
        return 0
    run = load_run(args.run, args.db)
    groups = []
    for m in run.measurements:
        if not is_latency_measurement(m) or m.ok is False:
            continue
        results = measurement_pwcet(m, p, per_thread=True)
        if results:
            groups.append((m, results))
    if not groups:
        raise UserError(f"run {run.id} has no latency measurement with per-window maxima (ti_window_max); "
                        "run a latency profile (e.g. `rtgauge run --profile quick`).")
    if args.json:
        dump({"run": run.id, "exceedance": p, "measurements": [
            {"name": m.label, "tool": m.tool, "condition": m.condition,
             "results": [r.to_json() for r in rs]} for m, rs in groups]})
        return 0
    out = console()
    out.print(f"[bold]Probable worst-case wake-up latency, run {run.id}[/] (p = {p:g} per cycle; docs/pwcet.md)")
    for m, rs in groups:
        out.print(f"\n[bold]{escape(m.label)}[/] ({escape(str(m.condition))})")
        print_results(out, rs)
    return 0


def load_run(text: str, db: str | None) -> Run:
    wanted = parse_run_argument(text)
    with open_for_reading(db) as store:
        if not store.made:
            raise UserError(f"no runs in {store.url} yet; `rtgauge run` makes one.")
        run_id = store.latest_run_id() if wanted == "latest" else wanted
        run = None if run_id is None else store.get_run(run_id)
        if run is None:
            where = store.url
    if run is None:
        raise UserError(f"no run {'yet' if run_id is None else run_id} in {where}; `rtgauge show` lists the runs.")
    return run


def dump(data) -> None:
    json.dump(data, sys.stdout, indent=2)
    sys.stdout.write("\n")


def tail_text(r: Pwcet) -> str:
    if r.tail is None:
        return "-"
    lo = "?" if r.shape_low is None else f"{r.shape_low:+.2f}"
    hi = "?" if r.shape_high is None else f"{r.shape_high:+.2f}"
    return f"{r.tail} (ξ {lo}…{hi})"


def print_results(out, results: list[Pwcet]) -> None:
    """The same answer as `--json`, `show` and the report (Pwcet.summary): observed
    maximum, the estimate with its interval or the refusal code, the run needed."""
    table = Table(title_justify="left")
    for col in ("series", "blocks", "observed max µs", "tail", "estimate µs", "95% CI µs", "run needed for p"):
        table.add_column(col, justify="left" if col in ("series", "tail", "run needed for p") else "right",
                         overflow="fold")
    notes = []
    for r in results:
        blocks = f"{r.blocks} × {r.block_cycles:,}"
        observed = "-" if r.observed_max_ns is None else f"{r.observed_max_ns / 1000:,.1f}"
        needed = r.needed_label()
        if r.applicable:
            table.add_row(escape(r.label), blocks, observed, escape(tail_text(r)), f"[bold]{r.level_ns / 1000:,.1f}[/]",
                          f"{r.ci_low_ns / 1000:,.1f}–{r.ci_high_ns / 1000:,.1f}", escape(needed))
            notes.append(f"{r.label}: {r.summary()}")
        else:
            table.add_row(escape(r.label), blocks, observed, escape(tail_text(r)), f"[yellow]none[/] ({escape(r.code)})",
                          "-", escape(needed))
            notes.append(f"{r.label}: {r.summary()}")
    out.print(table)
    for n in notes:
        out.print(f"  {n}", markup=False)
    for r in results:
        checks = "; ".join(f"{c.name} {'ok' if c.passed else ('not tested' if c.passed is None else 'FAIL')}"
                           + (f" (p={c.p_value:.2g})" if c.p_value is not None else "") for c in r.checks)
        out.print(f"  {r.label} checks: {checks}", markup=False)
