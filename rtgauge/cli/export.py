"""`rtgauge export RUN --format json|csv|md`: one stored run for another machine
(json, which `rtgauge import` reads back), a spreadsheet (csv: one row per figure)
or a page of text (md: the summary tables in Markdown)."""

from __future__ import annotations

import io
import sys

from rtgauge import __version__
from rtgauge.cli.report import add_db_argument
from rtgauge.errors import UserError

EXPORT_FORMAT = 1
STATS = ("count", "min", "avg", "stddev", "p50", "p90", "p99", "p999", "p9999", "max")


def register(sub) -> None:
    p = sub.add_parser("export", help="export a stored run as JSON, CSV or Markdown",
                       description="Write one run: json (everything, for `rtgauge import` on another machine), "
                       "csv (one row per figure) or md (the summary tables).")
    p.add_argument("run", metavar="RUN", help="a run id, or 'latest'")
    add_db_argument(p)
    p.add_argument("--format", choices=("json", "csv", "md"), default="json", help="output format (default json)")
    p.add_argument("-o", "--output", metavar="FILE", default=None, help="file to write; - or none: standard output")
    p.set_defaults(func=cmd_export)


def export_json(run: dict) -> str:
    from datetime import datetime, timezone
    import json
    from rtgauge.owner import hash_machine_id
    run = dict(run)
    if isinstance(run.get("system"), dict):   # runs stored before facts hashed it hold the raw id
        run["system"] = dict(run["system"], machine_id=hash_machine_id(run["system"].get("machine_id")))
    run.pop("owner", None)                    # a pid and boot id of this machine: nothing to take along
    return json.dumps({"rtgauge_export": EXPORT_FORMAT, "rtgauge_version": __version__,
                       "exported_at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "run": run},
                      indent=1, default=str) + "\n"


def csv_rows(run: dict):
    s = run.get("system") or {}
    base = [run["id"], s.get("hostname"), s.get("kernel_release")]
    for m in run.get("measurements", []):
        head = base + [m["name"], m.get("tool"), m.get("test"), m.get("condition")]
        for name, metric in (m.get("metrics") or {}).items():
            kind, unit = metric.get("kind", ""), metric.get("unit", "")
            if kind == "series":
                continue
            if "value" in metric:
                yield head + [name, kind, unit, "value", metric["value"]]
            for stat in STATS:
                if metric.get(stat) is not None:
                    yield head + [name, kind, unit, stat, metric[stat]]
        for name, v in (m.get("verdicts") or {}).items():
            yield head + [name, "verdict", "", "pass", int(bool(v.get("pass")))]


def export_csv(run: dict) -> str:
    import csv
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["run", "host", "kernel", "measurement", "tool", "test", "condition", "metric", "kind", "unit",
                "statistic", "value"])
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


def export_md(run: dict) -> str:
    from rtgauge.analysis.headline import headline
    from rtgauge.analysis.tire import held_text, period_text
    from rtgauge.analysis import latency_measurements, latency_row, system_label
    from rtgauge.analysis.micro import micro_rows, verdict_rows
    h = headline(run)
    s = run.get("system") or {}
    lines = [f"# rtgauge run {run['id']}: {md_cell(system_label(run))}", "",
             f"Profile {md_cell(run.get('profile'))}, started {md_cell(run.get('started_at'))}, status "
             f"{md_cell(run.get('status'))}; kernel {md_cell(s.get('kernel_release'))} "
             f"({md_cell(s.get('preempt_model'))}), {md_cell(s.get('cpus'))} × {md_cell(s.get('cpu_model'))}.", "",
             f"**Rating: {h['rating'].glyphs} {h['rating'].klass}** — worst-case wake-up latency idle "
             f"{md_cell(_f(h['worst_idle_us']))} µs, loaded {md_cell(_f(h['worst_loaded_us']))} µs; "
             f"{md_cell(h['misses'])} missed deadlines.", ""]
    for t in h["tire"]:
        lines.append(f"- tire at {period_text(t['period_ms'])}, {t['policy']}, {t['threads_label']} threads, "
                     f"{t['solver']}: largest n with zero misses {t['max_masses'] or 'none'}"
                     + (f" ({held_text(t)})" if held_text(t) else ""))
    lines.append("")
    rows = []
    for m in latency_measurements(run):
        r = latency_row(m)
        rows.append([r["name"] + (" (fallback)" if r["fallback"] else ""), r["tool"], r["condition"], r["samples"],
                     _f(r["min_us"]), _f(r["avg_us"]), _f(r["p99_us"]), _f(r["p9999_us"]), _f(r["max_us"]), r["misses"]])
    if rows:
        lines += ["## Wake-up latency (µs)", ""] + md_table(
            ["job", "tool", "condition", "samples", "min", "avg", "p99", "p99.99", "max", "misses"], rows)
    micro = micro_rows([run])
    if micro:
        from rtgauge.report.terminal import published_text
        rows = []
        for r in micro:
            c = r.cells[run["id"]]
            rows.append([r.label, r.condition, _f(c["avg"] / 1000, 2) if c["avg"] is not None else None,
                         _f(c["max"] / 1000) if c["max"] is not None else None, published_text(r) or "-"])
        lines += ["## Microbenchmarks (µs)", ""] + md_table(["test", "condition", "avg", "max", "published avg/max"], rows)
    verdicts = verdict_rows([run])
    if verdicts:
        rows = [[v["test"] + (f" [{v['variant']}]" if v["variant"] else ""), v["verdict"],
                 "pass" if v["cells"][run["id"]]["pass"] else "FAIL", v["cells"][run["id"]]["detail"]] for v in verdicts]
        lines += ["## Verdicts", ""] + md_table(["test", "verdict", "result", "detail"], rows)
    return "\n".join(lines)


def cmd_export(args) -> int:
    from rtgauge.cli.report import load_runs
    [run] = load_runs(args.db, [args.run], documents=True)
    text = {"json": export_json, "csv": export_csv, "md": export_md}[args.format](run)
    if args.output and args.output != "-":
        try:
            with open(args.output, "w", encoding="utf-8") as f:
                f.write(text)
        except OSError as e:
            raise UserError(f"cannot write {args.output} ({e.strerror}); choose another file with -o.") from None
        print(f"Run {run['id']} exported as {args.format} to {args.output}.", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
