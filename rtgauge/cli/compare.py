"""`rtgauge compare RUN_A RUN_B ...`: systems side by side in the terminal, and a
regression view of each later run against the first (the baseline): every figure
better, worse or with no significant difference, with the size of the change and its
interval (statistics in rtgauge/analysis/compare/noise.py, docs/compare.md). --json prints
every compared figure for CI. --fail-on rules make the exit status 3 when they trip
on a significant change, and when they have nothing valid to check (fail closed);
status 4 (undecided) when a change beyond a rule is within the noise."""

from __future__ import annotations

import json
import sys

from rich.markup import escape
from rich.table import Table

from rtgauge.analysis.compare.gate import incomplete_runs
from rtgauge.analysis.compare.regress import BETTER, SAME, WORSE, change_json, compare_runs, parse_rule
from rtgauge.analysis.pwcet import DEFAULT_EXCEEDANCE, compare_pwcet
from rtgauge.analysis.run.headline import DEFAULT_BUDGET_US, headline
from rtgauge.analysis.run.rows import latency_measurements, latency_row, system_label
from rtgauge.cli.common import budget_options, check_writable, read_runs
from rtgauge.defaults import EXCEEDANCE_MIN, REGRESSION_ALPHA as ALPHA
from rtgauge.errors import EXIT_GATE_TRIPPED, EXIT_INCOMPLETE, EXIT_UNDECIDED, UserError
from rtgauge.report.junit import Case, Suite, check_path, fail_closed, write_junit
from rtgauge.report.numbers import fmt_group, misses_text, us_fixed
from rtgauge.report.output import write_html
from rtgauge.report import safe
from rtgauge.report.stalls import print_stalls, stalls_json
from rtgauge.report.terminal import print_micro, print_published

# compare --json's layout: 2 added "version" and "call" ("verdict", the same value, is kept
# for readers of version 1); docs/compare.md.
JSON_VERSION = 2


def console(fmt: str | None = None) -> Console:
    return safe.table_console(fmt)   # looked up on the module: tests replace it


def cmd_compare(args) -> int:
    # every option is checked before anything is read or printed
    rules = [parse_rule(r) for r in args.fail_on]
    for r in rules:
        if r.family == "pwcet":
            raise UserError(f"--fail-on '{r.text}': a pwcet rule checks one run's credible worst case; use it on "
                            "`rtgauge run`, or compare worst cases with `rtgauge compare --pwcet`.")
    check_path(args.junit)
    if not 0 < args.alpha < 1:
        raise UserError(f"--alpha {args.alpha:g} is not a rate; give a number between 0 and 1, e.g. 0.05.")
    options = budget_options(args)
    exceedance = pwcet_exceedance(args)
    check_writable("-o", args.output)
    runs = list(read_runs(args.db, args.runs, default_latest=False))
    if len(runs) < 2:
        raise UserError("compare needs two or more different runs (the first is the baseline); "
                        "`rtgauge show` lists the runs.")
    out = console(args.format)
    base = runs[0]
    tripped: list[str] = []
    closed: list[str] = []
    suites = []
    undecided: list[str] = []
    comparisons = []
    worst_cases: dict[int, list[dict]] = {}
    for cand in runs[1:]:
        changes = compare_runs(base, cand, args.alpha)
        comparisons.append((cand, changes))
        if args.pwcet:
            worst_cases[cand.id] = compare_worst_cases(base, cand, exceedance)
        cases = []
        for rule in rules:
            shut = rule.fails_closed(changes, cand)
            closed += shut
            for text in shut:
                cases.append(Case(f"run {cand.id}", rule.text, "incomplete", text))
            for c in changes:
                if c.figure.family != rule.family:
                    continue
                hit = rule.trips(c)
                if hit:
                    tripped.append(f"{rule.text} (run {cand.id}): {hit}")
                open_ = rule.undecided(c)
                if open_:
                    undecided.append(f"{rule.text} (run {cand.id}): {open_}")
                cases.append(Case(f"run {cand.id}.{c.figure.label}", rule.text,
                                  "fail" if hit else ("undecided" if open_ else "pass"),
                                  hit or open_ or f"{c.figure.label}: {c.call}"))
        suite = Suite(f"rtgauge compare {base.id} → {cand.id}", cases, cand.started_at)
        # the JUnit file says what the exit status says: nothing passes on an incomplete run (exit 5)
        suites.append(fail_closed(suite, incomplete_runs([base, cand]), f"run {cand.id}") if rules else suite)
    incomplete = incomplete_runs(runs) if rules else []
    gate = None if not rules else ("incomplete" if incomplete else "fail" if tripped or closed
                                   else "undecided" if undecided else "pass")
    if not args.json:
        # the answer first, one line per later run and one for the gate; the detail after
        for cand, changes in comparisons:
            out.print(answer_line(base, cand, changes, args.alpha))
        if rules:
            out.print(gate_line(gate, rules, tripped, closed, undecided, incomplete))
        out.print()
        print_side_by_side(out, runs, options.get("budget_us", DEFAULT_BUDGET_US))
        for cand, changes in comparisons:
            print_regressions(out, base, cand, changes, args.all, args.alpha)
            if args.pwcet:
                print_worst_cases(out, base, cand, worst_cases[cand.id], exceedance)
    if args.json:
        doc = {"version": JSON_VERSION, "baseline": base.id, "alpha": args.alpha, "correction": "benjamini-hochberg",
               "comparisons": [{"candidate": cand.id,
                                "worse": sum(c.call == WORSE for c in changes),
                                "better": sum(c.call == BETTER for c in changes),
                                "figures": [change_json(c) for c in changes],
                                **({"pwcet": worst_cases[cand.id]} if args.pwcet else {})}
                               for cand, changes in comparisons],
               "host_stalls": {str(r.id): [j for m in r.measurements if (j := stalls_json(m))]
                               for r in runs},
               "rules": [r.text for r in rules], "tripped": tripped, "failed_closed": closed,
               "undecided": undecided, "incomplete": incomplete, "gate": gate}
        sys.stdout.write(json.dumps(doc, indent=1, allow_nan=False) + "\n")
    if args.junit:
        write_junit(args.junit, suites)
    if args.output:
        write_html(args.output, runs, comparisons=comparisons, tripped=tripped + closed, **options)
        if not args.json:
            out.print(f"Report written to {escape(args.output)}")
    if incomplete:
        # a gate never passes on what was not fully measured: it fails closed, with its own status
        print(f"rtgauge: --fail-on cannot judge {incomplete[0]}" + (f" (and {len(incomplete) - 1} more)"
              if len(incomplete) > 1 else "") + "; measure it again to a complete run.", file=sys.stderr)
        return EXIT_INCOMPLETE
    if tripped or closed:
        if not args.json:
            if tripped:
                out.print(f"[red bold]--fail-on tripped ({len(tripped)}):[/]")
                for t in tripped:
                    out.print(f"  [red]{escape(t)}[/]")
            for t in closed:
                out.print(f"[red bold]--fail-on failed closed:[/] [red]{escape(t)}[/]")
        else:
            for t in tripped + closed:
                print(f"rtgauge: --fail-on: {t}", file=sys.stderr)
        return EXIT_GATE_TRIPPED
    if undecided:
        if not args.json:
            out.print(f"[yellow bold]--fail-on undecided ({len(undecided)}):[/]")
            for t in undecided:
                out.print(f"  [yellow]{escape(t)}[/]")
        else:
            for t in undecided:
                print(f"rtgauge: --fail-on undecided: {t}", file=sys.stderr)
        return EXIT_UNDECIDED
    if rules and not args.json:
        out.print(f"[green]--fail-on: no rule tripped ({len(rules)} rule{'s' if len(rules) != 1 else ''}).[/]")
    return 0


def answer(changes) -> str:
    """better / worse / no change / undecided for one later run against the baseline:
    worse when any figure is significantly worse (better ones are said beside it),
    undecided when a figure could not be compared (invalid, new, gone)."""
    calls = [c.call for c in changes]
    if WORSE in calls:
        return "worse"
    if BETTER in calls:
        return "better"
    if not calls or any(c not in (SAME,) for c in calls):
        return "undecided"
    return "no change"


def answer_line(base: Run, cand: Run, changes, alpha: float) -> str:
    word = answer(changes)
    colour = {"worse": "red", "better": "green", "no change": "green"}.get(word, "yellow")
    n = {k: sum(c.call == k for c in changes) for k in (WORSE, BETTER, SAME)}
    other = len(changes) - sum(n.values())
    detail = (f"{n[WORSE]} worse, {n[BETTER]} better, {n[SAME]} without a significant difference"
              + (f", {other} not comparable" if other else "") + f" of {len(changes)} figures")
    return (f"[bold]Run {cand.id} against baseline run {base.id}:[/] [{colour} bold]{escape(word)}[/] "
            f"({detail}; false discovery rate {alpha:g})")


def gate_line(gate: str, rules, tripped, closed, undecided, incomplete) -> str:
    colour = {"pass": "green", "undecided": "yellow"}.get(gate, "red")
    what = {"pass": f"no rule tripped ({len(rules)} rule{'s' if len(rules) != 1 else ''})",
            "fail": f"{len(tripped) + len(closed)} tripped or failed closed",
            "undecided": f"{len(undecided)} change{'s' if len(undecided) != 1 else ''} beyond a rule within the noise",
            "incomplete": f"{len(incomplete)} incomplete run or measurement"}[gate]
    return f"[bold]Gate (--fail-on):[/] [{colour} bold]{gate}[/] — {escape(what)}; the detail is at the end"


def pwcet_exceedance(args) -> float:
    if args.exceedance is None:
        return DEFAULT_EXCEEDANCE
    if not args.pwcet:
        raise UserError("--exceedance goes with --pwcet; add --pwcet or leave --exceedance out.")
    if not EXCEEDANCE_MIN <= args.exceedance < 1:
        raise UserError(f"--exceedance {args.exceedance:g} is not a probability rtgauge can judge; give one from "
                        f"{EXCEEDANCE_MIN:g} to below 1, e.g. 1e-9.")
    return args.exceedance


def compare_worst_cases(base: Run, cand: Run, exceedance: float) -> list[dict]:
    """The probable worst case of each latency measurement (ours, not the cyclictest
    cross-check) present in both runs under the same name, round and segment, A against B."""
    ours = {m.key: m for m in latency_measurements(base) if m.tool == "engine"}
    out = []
    for m in latency_measurements(cand):
        if m.tool != "engine" or m.key not in ours:
            continue
        result = compare_pwcet(ours[m.key], m, exceedance=exceedance)
        out.append({"name": m.label, "condition": m.condition, **result})
    return out


NONE = "-"      # a figure not measured, in the worst-case table


def _level(side: dict) -> str:
    if not side.get("applicable"):
        return "n/a"
    lo, hi = side.get("ci_low_ns"), side.get("ci_high_ns")
    interval = f" [{us_fixed(lo, dash=NONE)}, {us_fixed(hi, dash=NONE)}]" if lo is not None and hi is not None else ""
    return f"{us_fixed(side.get('level_ns'), dash=NONE)}{interval}"


def print_worst_cases(out: Console, base: Run, cand: Run, rows: list[dict], exceedance: float) -> None:
    t = Table(title=f"Probable worst case, exceeded with probability {exceedance:g} per cycle (µs, 95% interval): "
              f"run {cand.id} against run {base.id}", title_justify="left")
    for col in ("measurement", f"run {base.id}", f"run {cand.id}", "B - A", "call"):
        t.add_column(col)
    for r in rows:
        diff = "-" if r.get("difference_ns") is None else \
            (f"{us_fixed(r['difference_ns'], dash=NONE)} [{us_fixed(r['ci_low_ns'], dash=NONE)}, "
             f"{us_fixed(r['ci_high_ns'], dash=NONE)}]")
        call = r["call"] + (f" ({r['reason']})" if r.get("reason") else "")
        t.add_row(escape(str(r["name"])), _level(r["a"]), _level(r["b"]), diff, escape(call))
    if not rows:
        out.print("Probable worst case: no latency measurement is in both runs.")
        return
    out.print(t)


def _f(v, digits=1) -> str:
    return "-" if v is None else f"{v:,.{digits}f}"


def print_side_by_side(out: Console, runs: list[Run], budget_us: float) -> None:
    table = Table(title="Systems side by side", title_justify="left")
    table.add_column("")
    for r in runs:
        table.add_column(escape(system_label(r)), justify="right")
    heads = [headline(r, budget_us) for r in runs]
    table.add_row("rating", *(escape(h['rating'].label) for h in heads))
    facts = [r.system for r in runs]
    for label, key in (("preemption", "preempt_model"), ("CPU", "cpu_model"), ("CPUs", "cpus")):
        vals = [str(f.get(key)) for f in facts]
        mark = " ≠" if len(set(vals)) > 1 else ""
        table.add_row(label + mark, *(escape(v) for v in vals))
    table.add_row("worst latency idle µs", *(_f(h["worst_idle_us"]) for h in heads))
    table.add_row("worst latency loaded µs", *(_f(h["worst_loaded_us"]) for h in heads))
    table.add_row("missed deadlines", *(misses_text(h["misses"], h["skipped"], "-") for h in heads))
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
            if m.label not in names:
                names.append(m.label)
    for name in names:
        cells = []
        for r in runs:
            m = next((m for m in latency_measurements(r) if m.label == name), None)
            row = latency_row(m) if m else None
            figs = None if row is None else fmt_group([row["avg_us"], row["p99_us"], row["max_us"]], dash=NONE)
            cells.append("-" if row is None else f"{figs[0]} / {figs[1]} / [bold]{figs[2]}[/]"
                         + (" [red](fallback)[/]" if row["fallback"] else ""))
        lat.add_row(escape(name), *cells)
    if lat.row_count:
        out.print(lat)
    print_micro(out, runs)
    print_stalls(out, runs)
    print_published(out, runs)


def fmt(v, unit) -> str:
    if v is None:
        return "-"
    if unit == "ns":
        return f"{v:,.3g} ns" if abs(v) < 1000 else f"{v / 1000:,.2f} µs"
    if float(v).is_integer() and abs(v) < 1e15:
        return f"{v:,.0f} {unit}"
    return f"{v:,.4g} {unit}"


def interval_text(iv, unit) -> str:
    if iv is None:
        return "no interval"
    return f"[{fmt(iv[0], unit)}, {fmt(iv[1], unit)}]"


def print_regressions(out: Console, base: Run, cand: Run, changes, show_all: bool, alpha: float = ALPHA) -> None:
    worse = [c for c in changes if c.call == WORSE]
    better = [c for c in changes if c.call == BETTER]
    others = [c for c in changes if c.call not in (WORSE, BETTER, SAME)]
    table = Table(title=f"Run {cand.id} against baseline run {base.id}: {len(worse)} worse, "
                  f"{len(better)} better, {len(changes) - len(worse) - len(better) - len(others)} without a "
                  f"significant difference, {len(changes)} figures (false discovery rate {alpha:g})",
                  title_justify="left")
    for col in ("figure", "baseline", "candidate", "change [95% interval]", "call", "why"):
        table.add_column(col, justify="right" if col in ("baseline", "candidate") else "left")
    shown = changes if show_all else worse + better + others
    order = {WORSE: 0, BETTER: 1, "invalid": 2, "new": 3, "gone": 4, SAME: 5}
    for c in sorted(shown, key=lambda c: order.get(c.call, 9)):
        unit = c.figure.unit
        r = c.result
        rel = c.relative
        if r is not None and r.difference is not None and c.base is not None:
            size = fmt_signed(r.difference, unit) + (f" ({rel:+.1%})" if rel is not None else "")
            size += " " + interval_text(r.interval, unit)
        else:
            size = "-"
        style = {WORSE: "red", BETTER: "green", "invalid": "red"}.get(c.call, "white")
        rounds = len(c.figure.rounds)
        cand_text = fmt(c.value, unit) + (f" ({rounds} rounds)" if rounds > 1 else "")
        table.add_row(escape(c.figure.label), fmt(c.base, unit), cand_text, escape(size),
                      f"[{style}]{escape(c.call)}[/]", escape(c.why))
    if table.row_count:
        out.print(table)
    else:
        out.print(f"Run {cand.id} against baseline run {base.id}: no significant difference "
                  f"({len(changes)} figures compared, false discovery rate {alpha:g}).")


def fmt_signed(v, unit) -> str:
    text = fmt(abs(v), unit)
    return ("+" if v >= 0 else "-") + text
