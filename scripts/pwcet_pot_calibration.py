#!/usr/bin/env python3
"""Validation that can fail, for peaks over a threshold (docs/pwcet.md, "Peaks over a
threshold"): dependent series of window maxima with a known marginal tail and extremal
index (rtgauge/analysis/pwcet_calibration.py: draw_dependent), the POT fit judged at the
true level by the PIT of its likelihood (judge_truth), declustered and not, calibrated,
inflated (x1.5) and deflated (/1.5); then the answers `analyse` gives on such series.

Usage: scripts/pwcet_pot_calibration.py [--cases N] [--answers N] [--only near|far|answers]
Prints markdown tables (docs/pwcet.md quotes them).
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

from rtgauge.analysis import pwcet as pw  # noqa: E402
from rtgauge.analysis import pwcet_calibration as pc  # noqa: E402
from rtgauge.analysis import pwcet_pot as pot  # noqa: E402

Q = 1e-4        # a window's cluster rate of the level judged
M = 100         # cycles a window


def truth_table(cases: int) -> None:
    print("| series | windows | declustered | method | PIT uniform (KS p) | truth above the 95 % interval | "
          "truth below it | level / truth (median) |")
    print("|---|---|---|---|---|---|---|---|")
    for windows in (300, 3000):
        for tail, theta in (("exponential", 0.4), ("bounded", 0.4), ("heavy", 0.4), ("exponential", 1.0)):
            truth = pc.true_level(tail, theta, Q)
            for declustered in ((True, False) if theta < 1 else (True,)):
                fits = [f for f, *_ in pc.dependent_cases(tail, cases, windows, 1, theta=theta,
                                                          declustered=declustered, seed=21)]
                for method in pc.METHODS:
                    c = pc.judge_truth(fits, Q, truth, method)
                    print(f"| {tail}, θ = {theta:g} | {windows} | {'yes' if declustered else 'no'} | {method} | "
                          f"{c.ks_p:.2g}{'' if c.passed else ' ✗'} | {c.high_share:.0%} | {c.low_share:.0%} | "
                          f"{c.sharpness_median:.2f} |", flush=True)


def far_table(cases: int) -> None:
    """At the evidence limit: 1000 windows of 100 cycles (100 s at 1 kHz) and p = 1e-9 a
    cycle, ten thousand times beyond the data."""
    q = 1 - (1 - 1e-9) ** M
    print("\n| series (1000 windows, p = 1e-9: 10^4 × beyond) | declustered | interval below the truth | "
          "above it | level / truth (median) | interval within 10× |")
    print("|---|---|---|---|---|---|")
    for tail in ("exponential", "bounded"):
        truth = pc.true_level(tail, 0.4, q)
        for declustered in (True, False):
            fits = [f for f, *_ in pc.dependent_cases(tail, cases, 1000, 1, theta=0.4, declustered=declustered,
                                                      seed=31)]
            c = pc.judge_truth(fits, q, truth, "calibrated")
            spans = [(lambda r: r[2] is not None and r[2] <= 10 * r[1])(pot.return_level(f, q)) for f in fits]
            print(f"| {tail}, θ = 0.4 | {'yes' if declustered else 'no'} | {c.high_share:.0%} | {c.low_share:.0%} | "
                  f"{c.sharpness_median:.2f} | {sum(spans)} of {len(fits)} |", flush=True)


def answers(series: int) -> None:
    print("\n| series (300 windows of 100 cycles, θ = 0.4) | answers at p = 1e-6 | at p = 1e-9 |")
    print("|---|---|---|")
    for tail in ("exponential", "bounded", "heavy"):
        got = {}
        for p in (1e-6, 1e-9):
            codes = Counter()
            for s in range(series):
                x = 1_000 * pc.draw_dependent(np.random.default_rng(1000 + s), 300, tail, 0.4)
                r = pw.analyse(x, M, p, interval_ns=1_000_000)
                codes["estimate" if r.applicable else r.code] += 1
            got[p] = ", ".join(f"{k} {v}" for k, v in sorted(codes.items()))
        print(f"| {tail} | {got[1e-6]} | {got[1e-9]} |", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=60)
    ap.add_argument("--answers", type=int, default=10)
    ap.add_argument("--only", choices=("near", "far", "answers"), help="print one table only")
    args = ap.parse_args()
    print(f"Measured {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC with `scripts/pwcet_pot_calibration.py "
          f"--cases {args.cases} --answers {args.answers}{' --only ' + args.only if args.only else ''}`; "
          f"level at a cluster rate of {Q:g} a window.\n")
    if args.only in (None, "near"):
        truth_table(args.cases)
    if args.only in (None, "far"):
        far_table(args.cases)
    if args.only in (None, "answers"):
        answers(args.answers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
