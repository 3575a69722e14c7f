#!/usr/bin/env python3
"""Validation that can fail, for the probable worst case (docs/performance.md, docs/pwcet.md).

Synthetic tails with a known answer (bounded, exponential, heavy, a quiet regime with
rare bounded stalls): a GEV is fitted to 300 block maxima of 100 cycles and judged on a
held-out part as long (x1) and 100 times as long (x100): the PIT of the held-out maximum
(Kolmogorov-Smirnov p of uniformity), sharpness (predicted median of the held-out maximum
/ held-out maximum), and the binomial test of the held-out blocks above the level a block
exceeds with probability 1/300 (x1) or 1/30,000 (x100); the calibrated method and the
deliberately inflated (x1.5) and deflated (/1.5) ones. Then the answers of `analyse`
(estimate or refusal code) on 10 series of each tail, and on the real runs given
(stored runs' latency measurements: all threads and each thread; held-out halves).

Usage: scripts/pwcet_calibration.py [--db RUNS.db ...] [--cases N] [--answers N] [--write]
                                    [--pot-penalty K] [--only-real]
(opening a stored run looks for the engine: set RTGAUGE_ENGINE when it is not installed)
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from rtgauge.analysis.run.rows import is_latency_measurement  # noqa: E402
from rtgauge.analysis import pwcet as pw  # noqa: E402
import calibration as pc  # noqa: E402  (scripts/calibration.py, beside this script)
from rtgauge.analysis.pwcet import pot  # noqa: E402

SECTION = "Probable worst case: validation that can fail"
BLOCKS, M = 300, 100


def synthetic_table(cases: int) -> list[str]:
    lines = ["| tail | held out | method | PIT uniform (KS p) | sharpness median (IQR) | held-out blocks above "
             "the level / expected | binomial p |", "|---|---|---|---|---|---|---|"]
    for ahead in (1, 100):
        for tail in ("bounded", "exponential", "heavy", "mixture"):
            cs = pc.synthetic_cases(tail, cases if ahead == 1 else max(cases // 2, 20), BLOCKS, M, ahead, seed=11)
            for method in pc.METHODS:
                c = pc.judge(cs, 1 / (BLOCKS * ahead), method)
                lines.append(f"| {tail} | ×{ahead} | {method} | {c.ks_p:.2g}{'' if c.passed else ' ✗'} | "
                             f"{c.sharpness_median:.2f} ({c.sharpness_q1:.2f}–{c.sharpness_q3:.2f}) | "
                             f"{c.exceedances} / {c.expected:.0f} | {c.binomial_p:.2g}{'' if c.reliable else ' ✗'} |")
                print(lines[-1], flush=True)
    return lines


def synthetic_answers(series: int) -> list[str]:
    lines = ["| tail | answers at p = 1e-6 (10^4 × 30,000 cycles is the evidence limit, 3.3e-9) | at p = 1e-9 |",
             "|---|---|---|"]
    for tail in ("bounded", "exponential", "heavy", "mixture"):
        got = {}
        for p in (1e-6, 1e-9):
            codes = Counter()
            for s in range(series):
                rng = np.random.default_rng(100 + s)
                x = (pc.draw_mixture(rng, BLOCKS, M) if tail == "mixture" else pc.TAILS[tail][1](rng, BLOCKS, M))
                r = pw.analyse(x * 1000, M, p, interval_ns=1_000_000)
                codes["estimate" if r.applicable else r.code] += 1
            got[p] = ", ".join(f"{k} {v}" for k, v in sorted(codes.items()))
        lines.append(f"| {tail} | {got[1e-6]} | {got[1e-9]} |")
        print(lines[-1], flush=True)
    return lines


def real_series(dbs: list[str]) -> list[tuple[str, np.ndarray, pw.Pwcet]]:
    from rtgauge.store import open_store
    out = []
    for db in dbs:
        with open_store(db) as store:
            ids = [store.latest_run_id()] if store.latest_run_id() is not None else []
            runs = [store.get_run(i) for i in ids]
        for run in runs:
            for m in run.measurements:
                if not is_latency_measurement(m) or m.ok is False:
                    continue
                for r in pw.measurement_pwcet(m, per_thread=True):
                    out.append((f"{Path(db).stem} {m.name} {r.label}", np.asarray(r.maxima_ns), r))
    return out


def real_table(dbs: list[str], pot_penalty: float = pot.SHAPE_PENALTY, echo: bool = True) -> list[str]:
    rows = real_series(dbs)
    if not rows:
        return ["(no real runs given)"]
    codes = Counter("estimate" if r.applicable else r.code for _, _, r in rows)
    lines = [f"{len(rows)} series (all threads and each thread of every latency measurement): answers at p = 1e-9: "
             + ", ".join(f"`{k}` {v}" for k, v in sorted(codes.items())) + ".", ""]
    usable = [x for _, x, _ in rows if len(x) >= 2 * pw.MIN_BLOCKS]
    cs = pc.real_cases(usable)
    for method in pc.METHODS:
        c = pc.judge(cs, 1 / (len(usable[0]) // 2), method)
        lines.append(f"* {method}: held-out halves of {c.cases} series, PIT uniform KS p = {c.ks_p:.2g}, sharpness "
                     f"median {c.sharpness_median:.2f} ({c.sharpness_q1:.2f}–{c.sharpness_q3:.2f}), blocks above the "
                     f"1/150 level {c.exceedances} / {c.expected:.0f} (binomial p = {c.binomial_p:.2g})")
        if echo:
            print(lines[-1], flush=True)
    pcs = pc.real_pot_cases(usable, pot_penalty)
    lines += ["", f"Peaks over a threshold (the method that answers dependent series; shape penalty {pot_penalty:g}) "
              f"on the same held-out halves: "
              f"{len(pcs)} of {len(usable)} first halves leave at least {pot.MIN_PEAKS_HALF} cluster peaks; the "
              f"level of the reliability test has clusters at rate 1/150 a window, counted as upcrossings.", ""]
    for method in pc.METHODS if len(pcs) >= 3 else ():
        c = pc.judge(pcs, 1 / (len(usable[0]) // 2), method)
        lines.append(f"* POT {method}: PIT uniform KS p = {c.ks_p:.2g}, sharpness median {c.sharpness_median:.2f} "
                     f"({c.sharpness_q1:.2f}–{c.sharpness_q3:.2f}), clusters above the 1/150 level {c.exceedances} / "
                     f"{c.expected:.0f} (binomial p = {c.binomial_p:.2g}); PIT values "
                     + ", ".join(f"{v:.2f}" for v in sorted(c.pit)))
        if echo:
            print(lines[-1], flush=True)
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", action="append", default=[], help="a database of stored runs (latest run used)")
    ap.add_argument("--cases", type=int, default=100)
    ap.add_argument("--answers", type=int, default=10, help="series of each tail given to analyse")
    ap.add_argument("--write", action="store_true", help="rewrite the section of docs/performance.md")
    ap.add_argument("--pot-penalty", type=float, default=pot.SHAPE_PENALTY,
                    help="the GPD fit's shape penalty on the real runs' halves (0: plain maximum likelihood)")
    ap.add_argument("--only-real", action="store_true", help="print the real runs' part only (no --write)")
    args = ap.parse_args()
    if args.only_real:
        print("\n".join(real_table(args.db, args.pot_penalty, echo=False)))
        return 0
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    body = [f"Measured {stamp} with `scripts/pwcet_calibration.py --cases {args.cases} --answers {args.answers}"
            + "".join(f" --db {d}" for d in args.db) + " --write`. A GEV is fitted to 300 block maxima of 100 cycles "
            "and judged on a held-out part as long (×1) or 100 times as long (×100), whose maximum and block counts "
            "are drawn exactly from the known tail (scripts/calibration.py). ✗ marks a failed test "
            "(p ≤ 0.01).", ""]
    body += synthetic_table(args.cases)
    body += ["", f"The answers `analyse` gives ({args.answers} series of each tail, 300 block maxima of 100 cycles):",
             ""]
    body += synthetic_answers(args.answers)
    body += ["", "On real runs here (`rtgauge run`, the quick profile, 0.1 s windows):", ""]
    body += real_table(args.db, args.pot_penalty)
    text = "\n".join(body)
    print(text)
    if args.write:
        from perfdoc import write_section
        write_section(SECTION, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
