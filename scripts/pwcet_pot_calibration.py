#!/usr/bin/env python3
"""Validation that can fail, for peaks over a threshold (docs/pwcet.md, "Peaks over a
threshold"): dependent series of window maxima with a known marginal tail and extremal
index (scripts/calibration.py: draw_dependent), the POT fit judged at the
true level by the PIT of its likelihood (judge_truth), declustered and not, calibrated,
inflated (x1.5) and deflated (/1.5), and the fit before its small-sample correction
(plain maximum likelihood, no shape penalty); then the answers `analyse` gives on such
series, and the small-sample bias of the GPD shape the penalty corrects.

Usage: scripts/pwcet_pot_calibration.py [--cases N] [--answers N] [--only near|far|answers|bias]
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
import calibration as pc  # noqa: E402  (scripts/calibration.py, beside this script)
from rtgauge.analysis.pwcet import pot  # noqa: E402

Q = 1e-4        # a window's cluster rate of the level judged
M = 100         # cycles a window
PENALTY = pot.SHAPE_PENALTY     # the judged fit's shape penalty (--penalty: to weigh another)


def cells(c) -> str:
    return (f"{c.ks_p:.2g}{'' if c.ks_p > pc.ALPHA else ' ✗'} | {c.dispersion:.2f}"
            f"{'' if c.dispersion_p > pc.ALPHA else ' ✗'} | {c.high_share:.0%} | {c.low_share:.0%} | "
            f"{c.sharpness_median:.2f} ({c.sharpness_low:.2f}–{c.sharpness_high:.2f}) |")


HEADER = ("PIT uniform (KS p) | mean r² | truth above the 95 % interval | truth below it | "
          "level / truth, median (10–90 %) |")


def truth_table(cases: int) -> None:
    """Level at cluster rate Q a window, 300 and 3000 windows: the default fit (shape
    penalty), its broken variants, and plain maximum likelihood (the fit before the
    small-sample correction)."""
    print(f"| series | windows | declustered | method | {HEADER}")
    print("|---|---|---|---|---|---|---|---|---|")
    for windows in (300, 3000):
        for tail, theta in (("exponential", 0.4), ("bounded", 0.4), ("heavy", 0.4), ("exponential", 1.0)):
            truth = pc.true_level(tail, theta, Q)
            for declustered in ((True, False) if theta < 1 else (True,)):
                fits = [f for f, *_ in pc.dependent_cases(tail, cases, windows, 1, theta=theta,
                                                          declustered=declustered, seed=21, penalty=PENALTY)]
                rows = [(m, pc.judge_truth(fits, Q, truth, m)) for m in pc.METHODS]
                if declustered:
                    ml = [f for f, *_ in pc.dependent_cases(tail, cases, windows, 1, theta=theta, seed=21, penalty=0)]
                    rows.append(("calibrated, plain ML", pc.judge_truth(ml, Q, truth, "calibrated")))
                for method, c in rows:
                    print(f"| {tail}, θ = {theta:g} | {windows} | {'yes' if declustered else 'no'} | {method} | "
                          f"{cells(c)}", flush=True)


def far_table(cases: int) -> None:
    """At the evidence limit: 1000 windows of 100 cycles (100 s at 1 kHz) and p = 1e-9 a
    cycle, ten thousand times beyond the data."""
    q = 1 - (1 - 1e-9) ** M
    print(f"\n| series (1000 windows, p = 1e-9: 10^4 × beyond) | declustered | method | {HEADER} "
          "interval within 10× |")
    print("|---|---|---|---|---|---|---|---|---|")
    for tail in ("exponential", "bounded"):
        truth = pc.true_level(tail, 0.4, q)
        for declustered, penalty in ((True, PENALTY), (False, PENALTY), (True, 0.0)):
            fits = [f for f, *_ in pc.dependent_cases(tail, cases, 1000, 1, theta=0.4, declustered=declustered,
                                                      seed=31, penalty=penalty)]
            spans = sum((lambda r: r[2] is not None and r[2] <= 10 * r[1])(pot.return_level(f, q)) for f in fits)
            for method in (pc.METHODS if declustered and penalty else ("calibrated",)):
                c = pc.judge_truth(fits, q, truth, method)
                name = method + ("" if penalty else ", plain ML")
                print(f"| {tail}, θ = 0.4 | {'yes' if declustered else 'no'} | {name} | {cells(c)} "
                      f"{spans} of {len(fits)} |", flush=True)


def bias_table(reps: int) -> None:
    """The small-sample bias of the GPD shape: n independent excesses of a GPD with shape
    ξ (scale 1), fitted by plain maximum likelihood and with the shape penalty; the mean
    error of the shape times n (the first-order bias is c / n: Giles, Feng and Godwin
    2016 give c = -(1 + ξ)(3 + ξ) / (1 + 3ξ), -3 at ξ = 0)."""
    from scipy import stats
    print(f"\nThe shape's small-sample bias ({reps} samples a row, penalty k = {PENALTY:g}):\n")
    print("| ξ | n | ML shape: mean error × n | penalised: mean error × n | ML scale: mean error × n | penalised |")
    print("|---|---|---|---|---|---|")
    rng = np.random.default_rng(5)
    for xi in (-1 / 3, 0.0, 0.2):
        for n in (30, 90):
            err = {0.0: [], PENALTY: []}
            while len(err[0.0]) < reps:
                y = stats.genpareto.rvs(xi, 0, 1.0, size=n, random_state=rng)
                try:
                    fits = {k: pot.fit_gpd(y, 0.0, 10 * n, 1.0, penalty=k) for k in err}
                except ValueError:          # no converged fit (rare): the analysis refuses it
                    continue
                for k, f in fits.items():
                    err[k].append((f.shape - xi, f.scale - 1.0))
            ml, pen = np.mean(err[0.0], axis=0) * n, np.mean(err[PENALTY], axis=0) * n
            print(f"| {xi:+.2f} | {n} | {ml[0]:+.2f} | {pen[0]:+.2f} | {ml[1]:+.2f} | {pen[1]:+.2f} |", flush=True)


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
    ap.add_argument("--only", choices=("near", "far", "answers", "bias"), help="print one table only")
    ap.add_argument("--bias-samples", type=int, default=300, help="samples a row of the bias table")
    ap.add_argument("--penalty", type=float, default=pot.SHAPE_PENALTY,
                    help=f"the shape penalty k of the judged fit (default {pot.SHAPE_PENALTY:g}, the method's)")
    args = ap.parse_args()
    global PENALTY
    PENALTY = args.penalty
    print(f"Measured {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC with `scripts/pwcet_pot_calibration.py "
          f"--cases {args.cases} --answers {args.answers} --bias-samples {args.bias_samples}"
          f"{'' if args.penalty == pot.SHAPE_PENALTY else f' --penalty {args.penalty:g}'}"
          f"{' --only ' + args.only if args.only else ''}`; "
          f"level at a cluster rate of {Q:g} a window.\n")
    if args.only in (None, "near"):
        truth_table(args.cases)
    if args.only in (None, "far"):
        far_table(args.cases)
    if args.only in (None, "answers"):
        answers(args.answers)
    if args.only in (None, "bias"):
        bias_table(args.bias_samples)
    return 0


if __name__ == "__main__":
    sys.exit(main())
