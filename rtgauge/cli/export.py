"""`rtgauge export RUN --format json|csv|md|cyclictest`: one stored run for another
machine (json, which `rtgauge import` reads back; its shape is validate.EXPORT_SCHEMA,
versioned by its "rtgauge_export" number), a spreadsheet (csv: one row per figure and
per histogram bin), a page of text (md: the summary tables in Markdown) or cyclictest's
-h/--histfile layout (one latency measurement a file, --measurement NAME, a column per
thread, for the scripts that read `# Max Latencies`). A file given with -o is written whole or
not at all (rtgauge/safefile.py)."""

from __future__ import annotations

import sys

from rtgauge import safefile
from rtgauge.cli.common import check_writable, read_runs
from rtgauge.errors import UserError
from rtgauge.printable import printable
from rtgauge.records import Measurement, Run
from rtgauge.report.exports import export_csv, export_json, export_md
from rtgauge.tools.cyclictest import histfile_lines, histfile_plan


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
    target = args.output or "-"
    check_writable("-o", target)               # before anything is read
    [run] = read_runs(args.db, [args.run], documents=True)
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
