"""Report generation for 100 runs: time to read them from the store, to render the
HTML, and its size. Runs are hand-made like the engine's documents (two CPUs of
latency with ~300 log-linear bins each, a cyclictest cross-check, microbenchmarks,
a 36-point tire sweep), from tests/test_report_builders.py.

    python3 bench/report.py [--runs 100] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from perfdoc import load_text, write_section  # noqa: E402
from rtgauge.report.html import render  # noqa: E402
from rtgauge.store import open_store  # noqa: E402
from test_report_builders import SYSTEM, full_run_documents, store_run  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-write", action="store_true", help="print only; leave docs/performance.md alone")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{os.path.join(tmp, 'bench.db')}"
        t0 = time.perf_counter()
        docs = full_run_documents()
        ids = [store_run(url, docs, system=dict(SYSTEM, hostname=f"rig-{i % 7}")) for i in range(args.runs)]
        build_s = time.perf_counter() - t0
        read, draw, size = [], [], 0
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            with open_store(url) as s:
                runs = [s.get_run(i, documents=False) for i in ids]
            t1 = time.perf_counter()
            html = render(runs)
            t2 = time.perf_counter()
            read.append(t1 - t0)
            draw.append(t2 - t1)
            size = len(html.encode())
    n_meas = len(docs)
    lines = [f"`python3 bench/report.py --runs {args.runs} --rounds {args.rounds}` "
             f"({time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, {os.cpu_count()} CPUs, {load_text()}): {args.runs} "
             f"hand-made runs of {n_meas} measurements each (two-CPU latency with ~300 log-linear bins per "
             "CPU, a cyclictest cross-check with 1 µs bins, microbenchmarks, a tire grid and real-fast "
             "points), read from SQLite and rendered into one report; medians of the rounds.", "",
             "| step | median s | min s | max s |", "|---|---:|---:|---:|"]
    for name, xs in ((f"read from SQLite (`get_run(documents=False)` × {args.runs})", read),
                     ("render HTML", draw), ("total", [a + b for a, b in zip(read, draw)])):
        lines.append(f"| {name} | {statistics.median(xs):.2f} | {min(xs):.2f} | {max(xs):.2f} |")
    lines += ["", f"The report is {size / 1e6:.1f} MB of HTML with inline SVG. A report does not need each "
              "measurement's original engine document (everything in it is in the relational rows too), "
              "so it reads runs without it, which halves the read time."]
    print("\n".join(lines))
    if not args.no_write:
        write_section("Report generation", "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
