"""`rtgauge export RUN --format json|csv|md|cyclictest`: one stored run for another
machine (json, which `rtgauge import` reads back; its shape is validate.EXPORT_SCHEMA,
versioned by its "rtgauge_export" number), a spreadsheet (csv: one row per figure and
per histogram bin), a page of text (md: the summary tables in Markdown) or cyclictest's
-h/--histfile layout (one latency measurement a file, --measurement NAME, a column per
thread, for the scripts that read `# Max Latencies`). A file given with -o is written whole or
not at all (rtgauge/safefile.py)."""

from __future__ import annotations

import io
import sys

from rtgauge import __version__, safefile
from rtgauge.cli.report import add_db_argument
from rtgauge.errors import UserError
from rtgauge.records import Measurement, Run

STATS = ("count", "min", "avg", "stddev", "p50", "p90", "p99", "p999", "p9999", "max")


def register(sub) -> None:
    p = sub.add_parser("export", help="export a stored run as JSON, CSV or Markdown",
                       description="Write one run: json (everything, for `rtgauge import` on another machine), "
                       "csv (one row per figure) or md (the summary tables).")
    p.add_argument("run", metavar="RUN", help="a run id, or 'latest'")
    add_db_argument(p)
    p.add_argument("--format", choices=("json", "csv", "md", "cyclictest"), default="json",
                   help="output format (default json); cyclictest: its -h/--histfile layout, one block per "
                   "latency measurement")
    p.add_argument("-o", "--output", metavar="FILE", default=None, help="file to write; - or none: standard output")
    p.add_argument("--measurement", metavar="NAME", default=None,
                   help="with --format cyclictest: the latency measurement to write (NAME@CONDITION as `show` "
                   "lists it); needed when the run has more than one")
    p.set_defaults(func=cmd_export)


def export_json(run: Run) -> str:
    """The run as the export's document (`Run.to_dict`: written here, once)."""
    from datetime import datetime, timezone
    import json
    from rtgauge.owner import hash_machine_id
    from rtgauge.records import EXPORT_FORMAT
    run = run.to_dict()
    if isinstance(run.get("system"), dict):   # runs stored before facts hashed it hold the raw id
        run["system"] = dict(run["system"], machine_id=hash_machine_id(run["system"].get("machine_id")))
    run.pop("owner", None)                    # a pid and boot id of this machine: nothing to take along
    return json.dumps({"rtgauge_export": EXPORT_FORMAT, "rtgauge_version": __version__,
                       "exported_at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "run": run},
                      indent=1, default=str) + "\n"


# A spreadsheet runs a cell starting with one of these as a formula (CSV injection);
# such a cell is written with a leading apostrophe, which spreadsheets show as text.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value):
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def csv_rows(run: Run):
    for row in csv_figures(run):
        yield [csv_cell(c) for c in row]


def csv_figures(run: Run):
    s = run.system
    base = [run.id, s.get("hostname"), s.get("kernel_release")]
    for m in run.measurements:
        head = base + [m.label, m.tool, m.test, m.condition]
        # the marks (analysis/marks.py), as rows of kind "mark", where a measurement has them
        if m.fallback:
            yield head + ["fallback", "mark", "", "value", 1, None, None]
        if m.not_idle:
            yield head + ["not_idle", "mark", "share", "value", m.others_load.get("share"), None, None]
        for name, figure in m.metrics.items():
            metric = figure.to_dict()       # the figure as stored (a value beyond the bounds included)
            kind, unit = metric.get("kind", ""), metric.get("unit", "")
            if kind == "series":
                continue
            if "value" in metric:
                yield head + [name, kind, unit, "value", metric["value"], None, None]
            for stat in STATS:
                if metric.get(stat) is not None:
                    yield head + [name, kind, unit, stat, metric[stat], None, None]
            hist = metric.get("histogram") if isinstance(metric.get("histogram"), dict) else {}
            for lo, hi, count in hist.get("bins") or []:
                yield head + [name, kind, unit, "bin", count, lo, hi]
            if hist.get("overflow"):
                yield head + [name, kind, unit, "overflow", hist["overflow"], hist.get("overflow_from_ns"), None]
        for name, v in m.verdicts.items():
            yield head + [name, "verdict", "", "pass", int(v.passed), None, None]


def export_csv(run: Run) -> str:
    import csv
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["run", "host", "kernel", "measurement", "tool", "test", "condition", "metric", "kind", "unit",
                "statistic", "value", "bin_lo_ns", "bin_hi_ns"])
    w.writerows(csv_rows(run))
    return buf.getvalue()


def md_cell(v) -> str:
    return str("-" if v is None else v).replace("|", "\\|").replace("\n", " ")


def md_table(header: list[str], rows: list[list]) -> list[str]:
    out = ["| " + " | ".join(md_cell(h) for h in header) + " |",
           "|" + "|".join("---" if i < 1 else "---:" for i in range(len(header))) + "|"]
    out += ["| " + " | ".join(md_cell(c) for c in r) + " |" for r in rows]
    return out + [""]


def _f(v, d=1):
    return None if v is None else f"{v:,.{d}f}"


def export_md(run: Run) -> str:
    from rtgauge.analysis.headline import headline
    from rtgauge.analysis.tire import held_text, period_text
    from rtgauge.analysis import latency_measurements, latency_row, system_label
    from rtgauge.analysis.micro import micro_rows, verdict_rows
    from rtgauge.report.numbers import misses_text
    h = headline(run)
    s = run.system
    lines = [f"# rtgauge run {run.id}: {md_cell(system_label(run))}", "",
             f"Profile {md_cell(run.profile)}, started {md_cell(run.started_at)}, status "
             f"{md_cell(run.status)}; kernel {md_cell(s.get('kernel_release'))} "
             f"({md_cell(s.get('preempt_model'))}), {md_cell(s.get('cpus'))} × {md_cell(s.get('cpu_model'))}.", "",
             f"**Rating: {h['rating'].label}** — worst-case wake-up latency idle "
             f"{md_cell(_f(h['worst_idle_us']))} µs, loaded {md_cell(_f(h['worst_loaded_us']))} µs; "
             f"{md_cell(misses_text(h['misses'], h['skipped'], '-'))} missed deadlines.", ""]
    for t in h["tire"]:
        lines.append(f"- tire at {period_text(t['period_ms'])}, {t['policy']}, {t['threads_label']} threads, "
                     f"{t['solver']}: largest n with zero misses {t['max_masses'] or 'none'}"
                     + (f" ({held_text(t)})" if held_text(t) else ""))
    lines.append("")
    rows = []
    for m in latency_measurements(run):
        r = latency_row(m)
        from rtgauge.analysis.marks import marks
        rows.append([r["name"] + "".join(f" ({text})" for text in marks(m)), r["tool"], r["condition"], r["samples"],
                     _f(r["min_us"]), _f(r["avg_us"]), _f(r["p99_us"]), _f(r["p9999_us"]), _f(r["max_us"]),
                     misses_text(r["misses"], r["skipped"], "-")])
    if rows:
        lines += ["## Wake-up latency (µs)", ""] + md_table(
            ["job", "tool", "condition", "samples", "min", "avg", "p99", "p99.99", "max", "misses"], rows)
    micro = micro_rows([run])
    if micro:
        from rtgauge.report.terminal import published_text
        rows = []
        for r in micro:
            c = r.cells[run.id]
            rows.append([r.label, r.condition, _f(c["avg"] / 1000, 2) if c["avg"] is not None else None,
                         _f(c["max"] / 1000) if c["max"] is not None else None, published_text(r) or "-"])
        lines += ["## Microbenchmarks (µs)", ""] + md_table(["test", "condition", "avg", "max", "published avg/max"], rows)
    verdicts = verdict_rows([run])
    if verdicts:
        rows = [[v["test"] + (f" [{v['variant']}]" if v["variant"] else ""), v["verdict"],
                 "pass" if v["cells"][run.id]["pass"] else "FAIL", v["cells"][run.id]["detail"]] for v in verdicts]
        lines += ["## Verdicts", ""] + md_table(["test", "verdict", "result", "detail"], rows)
    return "\n".join(lines)


def latency_columns(m: Measurement) -> list[dict]:
    """A latency measurement's per-thread distributions (ti#0, ti#1, ...), or its one
    all-threads distribution when it has none per thread, as the contract writes them
    (cyclictest's layout is written from those)."""
    threads = sorted((int(k.split("#", 1)[1]), v) for k, v in m.metrics.items()
                     if k.startswith("ti#") and k.split("#", 1)[1].isdigit())
    if threads:
        return [v.to_dict() for _, v in threads]
    return [m.metrics["ti"].to_dict()] if "ti" in m.metrics else []


def _cyclictest_label(m: Measurement) -> str:
    return m.label if "@" in m.name else f"{m.name}@{m.condition or 'idle'}" + m.label[len(m.name):]


def export_cyclictest(run: Run, measurement: str | None = None):
    """One latency measurement in cyclictest's -h/--histfile layout, as cyclictest writes
    it (one histogram a file, so its readers' recipes hold: `grep -v "^#"` is that
    measurement's table, `grep "Max Latencies"` its maxima), after a "# rtgauge
    measurement NAME@CONDITION" line; written a row at a time (tools/cyclictest.py
    histfile_lines). A run of several latency measurements needs --measurement NAME."""
    from rtgauge.tools.cyclictest import histfile_lines, histfile_plan
    from rtgauge.printable import printable
    found = [(m, latency_columns(m)) for m in run.measurements if m.test == "latency"]
    found = [(m, cols) for m, cols in found if cols and any(c.get("count") for c in cols)]
    if not found:
        raise UserError(f"run {run.id} has no latency measurement with samples; export it as json, csv or md.")
    names = [_cyclictest_label(m) for m, _ in found]
    if measurement is not None:
        chosen = [(m, cols) for (m, cols), name in zip(found, names) if measurement in (name, m.label)]
        if not chosen:
            raise UserError(f"run {run.id} has no latency measurement {printable(measurement, 80)!r}; give one of "
                            f"{', '.join(printable(n, 80) for n in names[:20])}.")
        found = chosen[:1]
    elif len(found) > 1:
        raise UserError(f"run {run.id} has {len(found)} latency measurements and cyclictest's layout holds one a file; "
                        f"export each with --measurement NAME, NAME one of {', '.join(printable(n, 80) for n in names[:20])}.")
    m, columns = found[0]
    try:
        plan = histfile_plan(columns)
    except ValueError as e:
        raise UserError(f"{printable(_cyclictest_label(m), 80)} of run {run.id} cannot be written in cyclictest's "
                        f"layout: {e}; export it as json, csv or md.") from None

    def chunks():
        yield f"# rtgauge measurement {_cyclictest_label(m)}\n"
        yield from histfile_lines(columns, plan)
    return chunks()


def cmd_export(args) -> int:
    from rtgauge.cli.report import check_writable, load_runs
    from rtgauge.printable import printable
    target = args.output or "-"
    check_writable("-o", target)               # before anything is read
    [run] = load_runs(args.db, [args.run], documents=True)
    if args.measurement is not None and args.format != "cyclictest":
        raise UserError("--measurement chooses the one measurement of --format cyclictest; the other formats "
                        "hold the whole run.")
    text = export_cyclictest(run, args.measurement) if args.format == "cyclictest" else \
        {"json": export_json, "csv": export_csv, "md": export_md}[args.format](run)
    try:         # the one writer (rtgauge/safefile.py): a file whole or not at all, or the stream
        with safefile.open_for_write(target) as f:
            for chunk in ([text] if isinstance(text, str) else text):    # cyclictest's layout: a row at a time
                f.write(chunk)
    except BrokenPipeError:
        raise
    except OSError as e:
        where = "standard output" if safefile.stream_fd(target) is not None else printable(target, 120)
        raise UserError(f"cannot write the export to {where} ({safefile.reason(e)}); choose another file with "
                        "-o.") from None
    if safefile.stream_fd(target) is None:
        print(f"Run {run.id} exported as {args.format} to {printable(target, 120)}.", file=sys.stderr)
    return 0
