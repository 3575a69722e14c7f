"""`rtgauge compare RUN_A RUN_B ...`: systems side by side in the terminal, and a
regression view of each later run against the first (the baseline): what got worse
beyond noise (thresholds in rtgauge/analysis/regress.py and docs/report.md).
--fail-on rules make the exit status 3 when they trip, for CI."""

from __future__ import annotations

import sys

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from rtgauge.analysis import latency_measurements, latency_row, system_label
from rtgauge.analysis.regress import compare_runs, parse_rule
from rtgauge.analysis.verdict import DEFAULT_BUDGET_US, headline
from rtgauge.cli.report import add_db_argument, budget_options, load_runs, write_html
from rtgauge.errors import UserError
from rtgauge.report.terminal import print_micro

EXIT_RULE_TRIPPED = 3


def register(sub) -> None:
    p = sub.add_parser("compare", help="compare stored runs side by side and show regressions",
                       description="Show runs side by side and what got worse in each later run compared "
                       "with the first (the baseline). With --fail-on, exit with status 3 when a rule trips.")
    p.add_argument("runs", nargs="+", metavar="RUN", help="two or more run ids (the first is the baseline), or ranges")
    add_db_argument(p)
    p.add_argument("--fail-on", action="append", default=[], metavar="RULE",
                   help="e.g. 'max_latency>+20%%', 'avg_latency>+5us', 'misses>0', 'tire_max_masses<-10%%' "
                   "(repeatable); exit status 3 when one trips")
    p.add_argument("-o", "--output", metavar="FILE", default=None, help="also write an HTML report with the regressions")
    p.add_argument("--all", action="store_true", help="list every compared figure, not only the changed ones")
    p.add_argument("--budget-us", type=float, default=None, metavar="US",
                   help="worst-case latency allowed for a hard real-time rating (default 100)")
    p.set_defaults(func=cmd_compare)


def console() -> Console:
    from rtgauge.report.safe import SafeConsole
    return SafeConsole(width=None if sys.stdout.isatty() else 160, highlight=False)


def cmd_compare(args) -> int:
    rules = [parse_rule(r) for r in args.fail_on]
    options = budget_options(args)
    runs = load_runs(args.db, args.runs, default_latest=False)
    if len(runs) < 2:
        raise UserError("compare needs two or more different runs (the first is the baseline); "
                        "`rtgauge show` lists the runs.")
    out = console()
    print_side_by_side(out, runs, options.get("budget_us", DEFAULT_BUDGET_US))
    base = runs[0]
    tripped: list[str] = []
    comparisons = []
    for cand in runs[1:]:
        changes = compare_runs(base, cand)
        comparisons.append((cand, changes))
        print_regressions(out, base, cand, changes, args.all)
        for rule in rules:
            for c in changes:
                hit = rule.trips(c)
                if hit:
                    tripped.append(f"{rule.text} (run {cand['id']}): {hit}")
    if args.output:
        write_html(args.output, runs, comparisons=comparisons, tripped=tripped, **options)
        out.print(f"Report written to {escape(args.output)}")
    if tripped:
        out.print(f"[red bold]--fail-on tripped ({len(tripped)}):[/]")
        for t in tripped:
            out.print(f"  [red]{escape(t)}[/]")
        return EXIT_RULE_TRIPPED
    if rules:
        out.print(f"[green]--fail-on: no rule tripped ({len(rules)} rule{'s' if len(rules) != 1 else ''}).[/]")
    return 0


def _f(v, digits=1) -> str:
    return "-" if v is None else f"{v:,.{digits}f}"


def print_side_by_side(out: Console, runs: list[dict], budget_us: float) -> None:
    table = Table(title="Systems side by side", title_justify="left")
    table.add_column("")
    for r in runs:
        table.add_column(escape(system_label(r)), justify="right")
    heads = [headline(r, budget_us) for r in runs]
    table.add_row("rating", *(escape(f"{h['rating'].glyphs} {h['rating'].klass}") for h in heads))
    facts = [r.get("system") or {} for r in runs]
    for label, key in (("preemption", "preempt_model"), ("CPU", "cpu_model"), ("CPUs", "cpus")):
        vals = [str(f.get(key)) for f in facts]
        mark = " ≠" if len(set(vals)) > 1 else ""
        table.add_row(label + mark, *(escape(v) for v in vals))
    table.add_row("worst latency idle µs", *(_f(h["worst_idle_us"]) for h in heads))
    table.add_row("worst latency loaded µs", *(_f(h["worst_loaded_us"]) for h in heads))
    table.add_row("missed deadlines", *("-" if h["misses"] is None else str(h["misses"]) for h in heads))
    keys = []
    for h in heads:
        for t in h["tire"]:
            k = (t["solver"], t["policy"], t["threads"])
            if k not in keys:
                keys.append(k)
    for k in keys:
        vals = []
        for h in heads:
            t = next((t for t in h["tire"] if (t["solver"], t["policy"], t["threads"]) == k), None)
            vals.append("-" if t is None else (f"{t['max_masses']:,}" if t["max_masses"] else "none"))
        table.add_row(escape(f"tire 100 Hz n ({k[0]}, {k[1]}, {k[2]} thr)"), *vals)
    out.print(table)
    lat = Table(title="Wake-up latency (µs): avg / p99 / max", title_justify="left")
    lat.add_column("job")
    for r in runs:
        lat.add_column(escape(system_label(r)), justify="right")
    names = []
    for r in runs:
        for m in latency_measurements(r):
            if m["name"] not in names:
                names.append(m["name"])
    for name in names:
        cells = []
        for r in runs:
            m = next((m for m in latency_measurements(r) if m["name"] == name), None)
            row = latency_row(m) if m else None
            cells.append("-" if row is None else f"{_f(row['avg_us'])} / {_f(row['p99_us'])} / [bold]{_f(row['max_us'])}[/]"
                         + (" [red](fallback)[/]" if row["fallback"] else ""))
        lat.add_row(escape(name), *cells)
    if lat.row_count:
        out.print(lat)
    print_micro(out, runs)


def fmt(v, unit) -> str:
    if v is None:
        return "-"
    if unit == "ns":
        return f"{v / 1000:,.2f} µs"
    if float(v).is_integer() and abs(v) < 1e15:
        return f"{v:,.0f} {unit}"
    return f"{v:,.4g} {unit}"


def print_regressions(out: Console, base: dict, cand: dict, changes, show_all: bool) -> None:
    worse = [c for c in changes if c.verdict == "worse"]
    better = [c for c in changes if c.verdict == "better"]
    table = Table(title=f"Run {cand['id']} against baseline run {base['id']}: {len(worse)} worse, "
                  f"{len(better)} better beyond noise, {len(changes)} figures", title_justify="left")
    for col in ("figure", "baseline", "candidate", "change", "verdict", "why"):
        table.add_column(col, justify="right" if col in ("baseline", "candidate", "change") else "left")
    shown = changes if show_all else worse + better
    order = {"worse": 0, "better": 1, "new": 2, "gone": 3, "same": 4}
    for c in sorted(shown, key=lambda c: order[c.verdict]):
        rel = c.relative
        style = {"worse": "red", "better": "green"}.get(c.verdict, "white")
        table.add_row(escape(c.figure.label), fmt(c.base, c.figure.unit), fmt(c.value, c.figure.unit),
                      "-" if rel is None else f"{rel:+.1%}", f"[{style}]{c.verdict}[/]", escape(c.why))
    if table.row_count:
        out.print(table)
    else:
        out.print(f"Run {cand['id']} against baseline run {base['id']}: nothing changed beyond noise "
                  f"({len(changes)} figures compared).")
