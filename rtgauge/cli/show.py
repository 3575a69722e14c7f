"""`rtgauge show [RUN]`: the runs in the results store, or one run in detail."""

from __future__ import annotations

import argparse
import sys


from rtgauge.errors import UserError
from rtgauge.config import DB_HELP
from rtgauge.records import Measurement, Run

PERIODIC_STATS = ("min", "avg", "p99", "max")


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "show", help="list the stored runs, or show one",
        description="Without RUN, list the runs in the results database; with RUN (an id or "
        "'latest'), show that run's system, doctor warnings and measurements.")
    p.add_argument("run", nargs="?", metavar="RUN", help="a run id, or 'latest'")
    p.add_argument("--db", metavar="URL", default=None, help=DB_HELP)
    p.add_argument("--json", action="store_true", help="print the data as JSON instead of tables")
    p.add_argument("--budget-us", type=float, default=None, metavar="US",
                   help="with RUN: the job's worst wake-up latency, µs; adds the verdict (yes / no / not enough "
                   "evidence, under \"verdict\" in --json) and exits with its status (0, 3, 4 or 5); "
                   "default: the config file's [budget]")
    p.add_argument("--period-us", type=float, default=None, metavar="US", help="the job's period, µs")
    p.add_argument("--miss-rate", type=float, default=None, metavar="RATE",
                   help="the share of cycles allowed later than the budget (default: none, hard)")
    add_format_argument(p)
    p.set_defaults(func=show)


def config_budget() -> dict:
    """The config file's [budget] table ({} without one): the user's default job."""
    try:
        from rtgauge.config import load_config
    except ImportError:
        return {}
    return load_config().get("budget", {}) or {}


def show_budget(args):
    """The budget to judge a shown run against: the command line's, else the config
    file's [budget], else None."""
    from rtgauge.analysis.verdict import make_budget
    given = {k: getattr(args, a, None) for k, a in (("latency_us", "budget_us"), ("period_us", "period_us"),
                                                    ("miss_rate", "miss_rate"))}
    if any(v is not None for v in given.values()):
        return make_budget(**given, source="command line")
    conf = config_budget()
    if conf.get("latency_us") is None:
        return None
    return make_budget(conf.get("latency_us"), conf.get("period_us"), conf.get("miss_rate"), "config file")


def rating_json(run: Run) -> dict:
    from rtgauge.analysis.headline import headline
    r = headline(run)["rating"]
    return {"stars": r.stars, "class": r.klass, "rated": not r.flags, "flags": r.flags, "reasons": r.reasons,
            "unrated_class": r.unrated_class}


# How tables are printed: drawn for a terminal, TSV for a pipe or a file (--format chooses)
TABLE_FORMAT: dict[str, str | None] = {"format": None}


def add_format_argument(p) -> None:
    p.add_argument("--format", choices=("table", "tsv"), default=None,
                   help="tables drawn for a terminal (table) or as tab-separated values (tsv); "
                   "default: table on a terminal, tsv otherwise")


def parse_run_argument(text: str | None) -> int | str | None:
    if text is None or text == "latest":
        return text
    from rtgauge.bounds import RUN_ID_MAX
    try:
        run_id = int(text) if len(text) < 30 else 0
    except ValueError:
        run_id = 0
    if not 0 < run_id <= RUN_ID_MAX:
        raise UserError(f"'{text[:40]}' is not a run; give a run id such as 3, or 'latest'; "
                        "`rtgauge show` lists the runs.")
    return run_id


def show(args: argparse.Namespace) -> int:
    TABLE_FORMAT["format"] = args.format
    from rtgauge.store.urls import database_to_read, display_url, normalise_url
    from rtgauge.store import open_store
    wanted = parse_run_argument(args.run)
    budget = show_budget(args)
    url = database_to_read(args.db)
    # Looking must not create an empty database file as a side effect.
    if url is None:
        return say_no_runs(display_url(normalise_url(None)), args.json, wanted)
    with open_store(args.db) as store:
        tell_abandoned(store)
        if wanted is None:
            runs = store.list_runs()
            if not runs:
                return say_no_runs(store.url, args.json, wanted)
            if args.json:
                print_json(runs)
            else:
                print_run_list(runs, store.url)
            return 0
        run_id = store.latest_run_id() if wanted == "latest" else wanted
        run = None if run_id is None else store.get_run(run_id)
        if run is None:
            if run_id is None:
                return say_no_runs(store.url, args.json, wanted)
            raise UserError(f"no run {run_id} in {store.url}; `rtgauge show` lists the runs.")
        verdict = None
        if budget is not None:
            from rtgauge.analysis.verdict import judge
            verdict = judge(run, budget)
        if args.json:
            doc = run_document(run)
            doc["rating"] = rating_json(run)
            if verdict is not None:
                doc["verdict"] = verdict.to_json()
            print_json(doc)
        else:
            if verdict is not None:
                from rtgauge.report.safe import SafeConsole
                from rtgauge.report.terminal import print_verdict
                print_verdict(SafeConsole(highlight=False), verdict)
            print_run(run)
            print_pwcet(run)
            print_tire_pretest(run)
            print_tire_cost(run)
        return verdict.exit_status if verdict is not None else 0


def run_document(run: Run) -> dict:
    """A stored run as `show RUN --json` (and `run --json`) print it: the run with its
    analyses (tire model, pWCET, host stalls, published studies, tire cost). The
    analyses read the records; the run is written as a document once, here."""
    from rtgauge.analysis.tire import tire_summary
    from rtgauge.analysis.tirecost import run_cost_model
    from rtgauge.report.stalls import stalls_json
    tire = tire_summary(run)      # what the report draws of the tire model: maps, limits, curves
    cost = run_cost_model(run)
    pwcet = {id(m): results for m, results in pwcet_results(run)}
    published = published_json(run)
    doc = run.to_dict()
    if any(tire.values()):
        doc.setdefault("analysis", {})["tire"] = tire
    from rtgauge.analysis.marks import marks_json
    for m, shown in zip(run.measurements, doc.get("measurements", [])):
        shown.update(marks_json(m))
        if id(m) in pwcet:
            shown["pwcet"] = [r.to_json() for r in pwcet[id(m)]]
        stalls = stalls_json(m)
        if stalls is not None:
            shown["host_stalls"] = stalls
    extra = {"published": published, **({"tire_cost": cost} if cost else {})}
    return dict(doc, **extra)


def published_json(run: Run) -> dict:
    """What the report shows of the published evaluations for this run: each study's
    rows with the measurement placed beside them (or why not), and the behaviour
    verdicts beside the published ones (rtgauge/analysis/published.py)."""
    from rtgauge.analysis.conclusions import check_conclusions
    from rtgauge.analysis.published import published_verdicts, studies_json
    verdicts = [dict(v, cells={str(k): c for k, c in v["cells"].items()}) for v in published_verdicts([run])]
    studied = studies_json([run])
    checks = check_conclusions([run], {st["source"] for st in studied})
    return {"studies": studied, "verdicts": verdicts, "conclusions": [c.to_json() for c in checks]}


def tell_abandoned(store) -> None:
    for run_id in store.abandoned:
        print(f"rtgauge: run {run_id} was left running by an rtgauge that ended without finishing it; "
              "marked abandoned (its stored measurements are kept).", file=sys.stderr)


def say_no_runs(where: str, as_json: bool, wanted) -> int:
    from rtgauge.report.safe import say
    if wanted not in (None, "latest"):
        raise UserError(f"no run {wanted} in {where}; it has no runs yet, `rtgauge run` makes one.")
    if as_json:
        print_json([] if wanted is None else None)
    else:
        say(f"There are no runs in {where} yet; `rtgauge run` measures this machine and stores one.")
    return 0


def print_json(data) -> None:
    import json
    json.dump(data, sys.stdout, indent=2)
    sys.stdout.write("\n")


def console() -> SafeConsole:
    """Tables drawn on a terminal, TSV into a pipe or file, unless --format says."""
    from rtgauge.report.safe import table_console
    return table_console(TABLE_FORMAT["format"])


def when(iso: str | None) -> str:
    """A stored UTC timestamp as local time, to the second."""
    from datetime import datetime
    if not iso:
        return "-"
    try:
        return datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%d %H:%M:%S")
    except ValueError:
        return iso


def elapsed(start: str | None, end: str | None) -> str:
    from datetime import datetime
    try:
        seconds = (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()
    except (TypeError, ValueError):
        return ""
    minutes, seconds = divmod(int(round(seconds)), 60)
    return f"{minutes}m{seconds:02d}s" if minutes else f"{seconds}s"


STATUS_STYLE = {"complete": "green", "running": "yellow", "interrupted": "yellow", "failed": "red",
                "abandoned": "red"}


def styled_status(status: str) -> str:
    from rtgauge.report.safe import markup as escape
    return f"[{STATUS_STYLE.get(status, 'white')}]{escape(status)}[/]"


def print_run_list(runs: list[dict], where: str) -> None:
    from rich.table import Table
    from rtgauge.report.safe import markup as escape
    table = Table(title=f"Runs in {where}", title_justify="left")
    for column in ("run", "started", "status", "profile", "host", "kernel"):
        table.add_column(column)
    table.add_column("measurements", justify="right")
    for run in runs:
        table.add_row(str(run["id"]), when(run["started_at"]), styled_status(run["status"]),
                      escape(run["profile"]), escape(run["hostname"]), escape(run["kernel_release"]),
                      str(run["measurements"]))
    console().print(table)


def system_line(system: dict) -> str:
    parts = [system.get("hostname") or "?"]
    kernel = " ".join(str(system[k]) for k in ("kernel_release", "arch") if system.get(k))
    if kernel:
        parts.append(kernel)
    if system.get("preempt_model"):
        parts.append(f"preempt {system['preempt_model']}")
    cpu = system.get("cpu_model") or ""
    if system.get("cpus"):
        cpu = f"{system['cpus']} × {cpu}" if cpu else f"{system['cpus']} CPUs"
    if cpu:
        parts.append(cpu)
    return " · ".join(parts)


def microseconds(ns) -> str:
    return "-" if not isinstance(ns, (int, float)) else f"{ns / 1000:.1f}"


def scalar(m: Measurement, name: str) -> str:
    value = m.scalar(name)
    return "-" if value is None else str(value)


def misses_cell(m: Measurement) -> str:
    """Periods not served on time: late cycles and skipped deadlines (analysis.late_periods)."""
    from rtgauge.analysis import late_periods
    from rtgauge.report.numbers import misses_text
    late = late_periods(m)
    return misses_text(late["misses"], late["skipped"], "-")


def condition_cell(m: Measurement) -> str:
    """The condition with the measurement's marks (fallback, not idle: analysis/marks.py)."""
    from rtgauge.analysis.marks import marks
    return " ".join([str(m.condition), *(f"({text})" for text in marks(m))])


def outcome(m: Measurement) -> str:
    if not m.ok:
        return "[red]failed[/]"
    why = m.stopped_early
    return f"[yellow]{why}[/]" if why else "[green]ok[/]"


def verdict_summary(verdicts: dict) -> str:
    from rtgauge.report.safe import markup as escape
    return ", ".join(f"{escape(name)} {'[green]pass[/]' if v.passed else '[red]FAIL[/]'}"
                     for name, v in verdicts.items())


def steal_text(m: Measurement) -> str:
    """The hypervisor's steal time on the measured CPUs during the measurement."""
    steal = (m.env.get("counters") or {}).get("steal")
    if not isinstance(steal, dict) or not isinstance(steal.get("total_ms"), (int, float)):
        return "-"
    share = steal.get("max_share")
    text = f"{steal['total_ms']:g}"
    if isinstance(share, (int, float)) and share > 0:
        text += f" ({share:.1%})"
    return f"[yellow]{text}[/]" if steal["total_ms"] > 0 else text


def origin_text(origin: dict) -> str:
    """Where an imported run came from: the format, the file and its identity."""
    text = f"imported from {origin.get('format') or '?'} {origin.get('file') or '?'}"
    if origin.get("run") is not None:
        text += f" (run {origin['run']} of {origin.get('host') or '?'})"
    first = origin.get("first") if isinstance(origin.get("first"), dict) else None
    if first:
        text += f", first imported from {first.get('format') or '?'} {first.get('file') or '?'}"
    return text + f"; identity {origin.get('identity')}"


def print_run(run: Run) -> None:
    from rich.table import Table
    from rtgauge.report.safe import markup as escape, printable
    from rtgauge.report.stalls import print_stalls
    out = console()
    duration = elapsed(run.started_at, run.finished_at)
    out.print(f"[bold]Run {run.id}[/] · {styled_status(run.status)} · profile {escape(run.profile)} · "
              f"started {when(run.started_at)}" + (f" · took {duration}" if duration else ""))
    if run.note:
        out.print(f"  note: {printable(run.note)}", markup=False)
    if isinstance(run.origin, dict):
        out.print(f"  origin: {printable(origin_text(run.origin))}", markup=False)
    out.print(f"System: {system_line(run.system or {'hostname': run.extra.get('hostname')})}", markup=False)
    warnings = [d for d in run.doctor if d.get("status") != "ok"]
    if warnings:
        out.print("Doctor:")
        for d in warnings:
            advice = f" — {d['advice']}" if d.get("advice") else ""
            out.print(f"  {d.get('status', '?')}: {d.get('name', '?')} = {d.get('value', '')}{advice}",
                      markup=False)
    if not run.measurements:
        out.print("No measurements were stored in this run.")
        return
    table = Table(title="Measurements (wake-up latency ti in µs)", title_justify="left")
    for column in ("name", "tool", "condition", "result"):
        table.add_column(column)
    for stat in PERIODIC_STATS:
        table.add_column(f"ti {stat}", justify="right")
    table.add_column("misses", justify="right")
    table.add_column("steal ms", justify="right")
    table.add_column("verdicts")
    for m in run.measurements:
        from rtgauge.analysis import row_metric
        metric = row_metric(m)     # rtla's columns are not ti: the tool cell names the one shown
        ti = m.metric(metric)
        tool = (f"{m.tool} (x-check)" if m.cross_check else m.tool) + (f", {metric}" if metric != "ti" else "")
        table.add_row(escape(m.label), escape(tool), escape(condition_cell(m)), outcome(m),
                      *(microseconds(getattr(ti, stat)) for stat in PERIODIC_STATS),
                      misses_cell(m), steal_text(m), verdict_summary(m.verdicts))
    out.print(table)
    print_stalls(out, [run])
    from rtgauge.report.spikes import print_attribution
    print_attribution(out, [run])
    for m in run.measurements:
        if m.error:
            out.print(f"{printable(m.label, 200)}: {printable(m.error)}", markup=False)
    from rtgauge.report.terminal import print_conclusions
    print_conclusions(out, [run])


# ---- probable worst case (pWCET) -----------------------------------------------

def pwcet_results(run: Run) -> list[tuple[Measurement, list]]:
    """(measurement, [Pwcet of the whole run]) per latency measurement that stored
    per-window maxima."""
    from rtgauge.analysis import is_latency_measurement
    from rtgauge.analysis.pwcet import measurement_pwcet

    out = []
    for m in run.measurements:
        if is_latency_measurement(m) and m.ok is not False:
            results = measurement_pwcet(m)
            if results:
                out.append((m, results))
    return out


def print_pwcet(run: Run) -> None:
    results = pwcet_results(run)
    if not results:
        return
    out = console()
    out.print("Probable worst case (extreme value theory, docs/pwcet.md; `rtgauge pwcet` gives each thread):")
    for m, rs in results:
        for r in rs:
            out.print(f"  {m.label}: {r.summary()}", markup=False)


def print_tire_pretest(run: Run) -> None:
    """The pretest's thread findings (first miss, thread ceiling) beside the study's."""
    from rtgauge.analysis.tire import period_text, pretest_threads, pretest_threads_sentence
    for c in pretest_threads(run):
        console().print(f"Tire pretest at {period_text(c['period_ms'])}, {c['policy']}, {c['solver']}: "
                        f"{pretest_threads_sentence(c)}", markup=False)


def print_tire_cost(run: Run) -> None:
    """The tire cost equation of the run: constants measured by the solver, and
    each configuration's step time predicted from the others' (docs/tire.md)."""
    from rich.table import Table
    from rtgauge.analysis.tirecost import run_cost_model
    model = run_cost_model(run)
    if not model:
        return
    out = console()
    for policy, m in model.items():
        c = m["constants"]
        tsw = m["tswitch_ns"]
        micro = m["tswitch_micro_ns"]
        out.print(f"Tire cost equation ({policy}): Tspring {c['Tspring']['median']:.2f} ns, "
                  f"Tmass {c['Tmass']['median']:.2f} ns, Tipc {c['Tipc']['median']:.2f} ns, "
                  f"Tswitch {'–' if tsw is None else f'{tsw / 1e3:.1f} µs'} in the runs"
                  + (f" ({micro / 1e3:.2f} µs switch microbenchmark)" if micro is not None else "")
                  + f"; median prediction error {m['median_error']:.0%}", markup=False)
        table = Table(title=f"Ts predicted against measured ({policy})", title_justify="left")
        for col in ("masses", "threads", "Nswitch (unplanned)", "Nwait", "measured µs", "predicted µs", "error"):
            table.add_column(col, justify="right")
        for r in m["predictions"]:
            table.add_row(f"{r['masses']:,}", str(r["threads"]), f"{r['nswitch']:.2f}", f"{r.get('nwait', 0):.2f}",
                          f"{r['measured_ns'] / 1e3:.1f}", f"{r['predicted_ns'] / 1e3:.1f}", f"{r['error']:.0%}")
        out.print(table)
