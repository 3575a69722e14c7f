"""A stored run as the export writes it (rtgauge export): the json document `rtgauge
import` reads back (its shape is store/validate.EXPORT_SCHEMA, versioned by
records.EXPORT_FORMAT), the csv of one row per figure and histogram bin, the md page of
the summary tables. Here, below the command line, because the import reads a run
through the same writers before it stores it (cli/importing.py dry_read)."""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime, timezone

from rtgauge import __version__
from rtgauge.analysis.run.headline import headline
from rtgauge.analysis.run.marks import marks
from rtgauge.analysis.run.rows import latency_measurements, latency_row, system_label
from rtgauge.analysis.run.tire import held_text, period_text
from rtgauge.analysis.studies.micro import micro_rows, verdict_rows
from rtgauge.owner import hash_machine_id
from rtgauge.records import EXPORT_FORMAT, Run
from rtgauge.report.numbers import misses_text
from rtgauge.report.terminal import published_text

STATS = ("count", "min", "avg", "stddev", "p50", "p90", "p99", "p999", "p9999", "max")


def export_json(run: Run) -> str:
    """The run as the export's document (`Run.to_dict`: written here, once)."""
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
        # the marks (analysis/run/marks.py), as rows of kind "mark", where a measurement has them
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
        best = f"{t['max_masses']:,}" if t["max_masses"] else "none"     # as the terminal prints it
        lines.append(f"- tire at {period_text(t['period_ms'])}, {t['policy']}, {t['threads_label']} threads, "
                     f"{t['solver']}: largest n with zero misses {best}"
                     + (f" ({held_text(t)})" if held_text(t) else ""))
    lines.append("")
    rows = []
    for m in latency_measurements(run):
        r = latency_row(m)
        rows.append([r["name"] + "".join(f" ({text})" for text in marks(m)), r["tool"], r["condition"], r["samples"],
                     _f(r["min_us"]), _f(r["avg_us"]), _f(r["p99_us"]), _f(r["p9999_us"]), _f(r["max_us"]),
                     misses_text(r["misses"], r["skipped"], "-")])
    if rows:
        lines += ["## Wake-up latency (µs)", ""] + md_table(
            ["job", "tool", "condition", "samples", "min", "avg", "p99", "p99.99", "max", "misses"], rows)
    micro = micro_rows([run])
    if micro:
        rows = []
        for r in micro:
            c = r.cells[run.id]
            rows.append([r.label, r.condition, _f(c["avg"] / 1000, 2) if c["avg"] is not None else None,
                         _f(c["max"] / 1000) if c["max"] is not None else None, published_text(r) or "-"])
        lines += ["## Microbenchmarks (µs)", ""] + md_table(["test", "condition", "avg", "max", "published figures in"], rows)
    verdicts = verdict_rows([run])
    if verdicts:
        rows = [[v["test"] + (f" [{v['variant']}]" if v["variant"] else ""), v["verdict"],
                 "pass" if v["cells"][run.id]["pass"] else "FAIL", v["cells"][run.id]["detail"]] for v in verdicts]
        lines += ["## Verdicts", ""] + md_table(["test", "verdict", "result", "detail"], rows)
    return "\n".join(lines)
