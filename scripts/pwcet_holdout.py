#!/usr/bin/env python3
"""Hold-out check of the probable worst case on a real samples file (docs/performance.md).

The run's block maxima are cut into consecutive segments; the pWCET analysis is fitted on
segment i and judged on segment i+1, which it has not seen:
  * the level the next segment's maximum should stay under with 95 % probability
    (per-cycle p = 1 - 0.95^(1/N), N = cycles in the next segment): is it under?
  * block calibration: the share of the next segment's blocks above the fitted block
    quantiles for q = 0.1 and 0.01, with a binomial test against q.
Usage: scripts/pwcet_holdout.py FILE --block-cycles N [--segments K]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rtgauge.analysis.pwcet import analyse, read_samples  # noqa: E402


def series(path: str, block: int) -> list[tuple[str, np.ndarray]]:
    per_thread = read_samples(path)
    longest = max(int(c[-1]) + 1 for c, _, _ in per_thread.values())
    full = longest // block

    def maxima(cycle, ti):
        out = np.full(full, -np.inf)
        keep = cycle // block < full
        np.maximum.at(out, cycle[keep] // block, ti[keep].astype(float))
        return out   # -inf: a block with no sample (kept in place so that segments stay aligned in time)

    out = [("all threads", maxima(np.concatenate([c for c, _, _ in per_thread.values()]),
                                  np.concatenate([t for _, _, t in per_thread.values()])))]
    out += [(f"thread {t}", maxima(c, ti)) for t, (c, _, ti) in per_thread.items()]
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--block-cycles", type=int, required=True)
    ap.add_argument("--segments", type=int, default=2)
    args = ap.parse_args()
    rows = []
    for label, x in series(args.file, args.block_cycles):
        seg = np.array_split(x, args.segments)
        for i in range(args.segments - 1):
            fit_part = seg[i][np.isfinite(seg[i])]
            test = seg[i + 1][np.isfinite(seg[i + 1])]
            n_test = len(seg[i + 1]) * args.block_cycles
            p95 = float(-np.expm1(np.log(0.95) / n_test))
            r = analyse(fit_part, args.block_cycles, p95, label=label, source="samples")
            row = {"series": label, "fit_segment": i, "fit_blocks": len(fit_part), "test_blocks": len(test),
                   "applicable": r.applicable, "reason": r.reason, "test_max_us": float(test.max()) / 1000,
                   "fit_max_us": float(fit_part.max()) / 1000}
            if r.applicable:
                row.update(level95_us=r.level_ns / 1000, ci_us=[r.ci_low_ns / 1000,
                                                                 None if r.ci_high_ns is None else r.ci_high_ns / 1000],
                           under=bool(test.max() <= r.level_ns), shape=r.fit.shape)
                for q in (0.1, 0.01):
                    z = float(r.fit.isf(q))
                    k = int(np.sum(test > z))
                    row[f"above_q{q}"] = [k, len(test), stats.binomtest(k, len(test), q).pvalue]
            rows.append(row)
            print(json.dumps(row))
    app = [r for r in rows if r["applicable"]]
    print(f"# {len(app)} of {len(rows)} fits applicable; the next segment's maximum stayed under the 95 % level "
          f"in {sum(r['under'] for r in app)} of {len(app)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
