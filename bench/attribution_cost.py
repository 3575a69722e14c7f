"""The cost of attribution tracing (`python3 bench/attribution_cost.py`, root): the
engine's wake-up latency on one CPU with and without the whole-run trace of
`run --attribute` (rtgauge/trace/wholerun.py), in interleaved rounds, so the
machine's drift falls on both arms alike; per arm the median over rounds of p99.99
and of the maximum, and the per-round ratio traced/untraced (median, 95 % bootstrap
interval, Wilcoxon p). Both arms write the raw samples (the attribution needs them),
so the difference is the tracing alone. Also the trace's volume and the analysis
time per second of run. Writes the section "Attribution tracing" of
docs/performance.md."""

from __future__ import annotations

import argparse
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perfdoc import paired_shift, write_section  # noqa: E402
from rtgauge.analysis.run import spikes  # noqa: E402
from rtgauge.analysis.samples import read_samples  # noqa: E402
from rtgauge.enginebin import engine_path  # noqa: E402
from rtgauge.trace import Tracefs  # noqa: E402
from rtgauge.trace.wholerun import WholeRunTrace  # noqa: E402


def one(engine: str, cpu: int, seconds: float, traced: bool, tracefs: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="rtgauge-attrcost-") as tmp:
        tmp = Path(tmp)
        trace = WholeRunTrace(tracefs, [cpu], tmp / "trace.txt") if traced else None
        if trace:
            trace.start()
        try:
            subprocess.run([engine, "latency", "--cpus", str(cpu), "--duration-s", str(seconds),
                            "--samples", str(tmp / "s.csv"), "--out", str(tmp / "doc.json")],
                           check=True, capture_output=True, timeout=seconds + 120)
        finally:
            note = trace.finish() if trace else None
            if trace:
                trace.remove()
        th, cy, dl, ti = read_samples(str(tmp / "s.csv"))
        out = {"p9999_us": float(np.quantile(ti, 0.9999)) / 1000, "max_us": float(ti.max()) / 1000,
               "samples": len(ti)}
        if note:
            started = time.perf_counter()
            with open(tmp / "trace.txt") as f:
                spikes.attribute(f, (th, cy, dl, ti), {0: cpu}, {"rtgauge-engine"}, None, [cpu])
            out["analysis_s"] = time.perf_counter() - started
            out["mb_per_s"] = note["trace_bytes"] / 1e6 / seconds
        return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--no-write", action="store_true", help="print, do not touch docs/performance.md")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("bench/attribution_cost.py needs root (tracefs, SCHED_FIFO); run it as root.", file=sys.stderr)
        return 2
    tracefs = Tracefs.open(True)
    if not tracefs.path:
        print(f"bench/attribution_cost.py: {tracefs.note}", file=sys.stderr)
        return 1
    engine = engine_path()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(130))     # unwind: the trace instance is removed
    cpu = sorted(os.sched_getaffinity(0))[-1]
    arms: dict[str, list[dict]] = {"untraced": [], "traced": []}
    for r in range(args.rounds):
        order = ("untraced", "traced") if r % 2 == 0 else ("traced", "untraced")
        for arm in order:
            arms[arm].append(one(engine, cpu, args.seconds, arm == "traced", tracefs.path))
            print(arm, arms[arm][-1], flush=True)
    med = {arm: {k: statistics.median(x[k] for x in rows) for k in ("p9999_us", "max_us")}
           for arm, rows in arms.items()}
    shift = {k: paired_shift([x[k] for x in arms["traced"]], [x[k] for x in arms["untraced"]], ratio=True)
             for k in ("p9999_us", "max_us")}
    mb = statistics.median(x["mb_per_s"] for x in arms["traced"])
    analysis = statistics.median(x["analysis_s"] for x in arms["traced"]) / args.seconds
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")

    def verdict(s):
        if s["low"] is None:
            return "Too few rounds for an interval."
        if s["low"] <= 1 <= s["high"]:
            return ("The interval of the p99.99 ratio includes 1: at this machine's noise (host stalls of "
                    "several ms in both arms) the tracing's cost is not resolved (rerun on a quiet machine for a figure).")
        return f"The tracing raises p99.99 by a factor {s['median']:.2f} here (interval above 1)."

    def ratio(s):        # paired_shift(ratio=True) gives ratios already
        text = f"{s['median']:.2f}"
        if s["low"] is not None:
            text += f" ({s['low']:.2f} to {s['high']:.2f}, Wilcoxon p {s['p']:.2g})"
        return text

    body = (f"`python3 bench/attribution_cost.py --rounds {args.rounds} --seconds {args.seconds:g}` ({now}, load "
            f"average {os.getloadavg()[0]:.2f} at the end, kernel {platform.release()}, {os.cpu_count()} CPUs, "
            f"measured CPU {cpu}, 1 kHz, SCHED_FIFO 80): the engine's wake-up latency with and without the "
            "whole-run trace of `run --attribute`, interleaved rounds, both arms writing the raw samples.\n\n"
            "| arm | median p99.99 (µs) | median max (µs) |\n| --- | --- | --- |\n"
            + "".join(f"| {arm} | {med[arm]['p9999_us']:,.1f} | {med[arm]['max_us']:,.1f} |\n" for arm in arms)
            + f"\nRatio traced / untraced, median over rounds (95 % bootstrap interval): p99.99 "
              f"{ratio(shift['p9999_us'])}, max {ratio(shift['max_us'])}.\n\n"
              f"Trace volume {mb:.2f} MB per second of run (text, per measured CPU at 1 kHz); the analysis takes "
              f"{analysis * 1000:.0f} ms per second of run. {verdict(shift['p9999_us'])}\n")
    print(body)
    if not args.no_write:
        write_section("Attribution tracing", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
