"""The probable worst case of a raw samples file (docs/samples.md, read by
rtgauge/analysis/samples.py): cutting it into blocks of cycles, and analysing all threads
and each."""

from __future__ import annotations

import numpy as np

from rtgauge.defaults import DEFAULT_EXCEEDANCE
from rtgauge.errors import UserError
from rtgauge.analysis.samples import by_thread, read_samples
from rtgauge.analysis.pwcet.fit import GOF_DRAWS
from rtgauge.analysis.pwcet.text import Pwcet
from rtgauge.analysis.pwcet.estimate import analyse, seen_max


BLOCKS_MAX = 10**7      # blocks a samples file may make


def default_block(cycles: int) -> int:
    """Cycles a block when not given: 1000 (one second at 1 kHz), fewer for short runs so
    that there are about 100 blocks, never under 10."""
    return int(max(10, min(1000, cycles // 100)))


def samples_pwcet(path: str, exceedance: float = DEFAULT_EXCEEDANCE, block_cycles: int | None = None,
                  gof_draws: int = GOF_DRAWS) -> list[Pwcet]:
    """pWCET of a raw samples file: all threads together (the largest Ti of each cycle),
    then each thread. Blocks are runs of consecutive cycle numbers."""
    samples = read_samples(path)
    if len(samples.thread) == 0:
        raise UserError(f"{path} holds no samples; run `rtgauge-engine latency --samples FILE` for longer.")
    per_thread = by_thread(samples)
    interval = None
    diffs = [np.diff(d) for _, d, _ in per_thread.values() if len(d) > 1]
    steps = [np.diff(c) for c, _, _ in per_thread.values() if len(c) > 1]
    if diffs:
        d, s = np.concatenate(diffs), np.concatenate(steps)
        ok = s > 0
        if ok.any():
            interval = int(round(float(np.median(d[ok] / s[ok]))))
    longest = max(int(c[-1]) + 1 for c, _, _ in per_thread.values())
    if min(int(c[0]) for c, _, _ in per_thread.values()) < 0:
        raise UserError(f"{path} has a negative cycle number; it is not an rtgauge samples file.")
    block = block_cycles or default_block(longest)
    if block < 1:
        raise UserError(f"a block must hold at least one cycle (got {block}).")
    if longest // block > BLOCKS_MAX:
        raise UserError(f"{path} numbers its cycles up to {longest - 1:,}, which makes more than {BLOCKS_MAX:,} "
                        "blocks; give a larger --block-cycles or the engine's own samples file.")

    def maxima(cycle, ti):
        # the maximum per block of cycle numbers; blocks with no sample (all skipped) are left out
        idx = cycle // block
        full = int(longest // block)
        keep = idx < full
        out = np.full(full, -np.inf)
        np.maximum.at(out, idx[keep], ti[keep].astype(float))
        return [v for v in out if np.isfinite(v)]

    cyc_all = np.concatenate([c for c, _, _ in per_thread.values()])
    ti_all = np.concatenate([t for _, _, t in per_thread.values()])
    def top(ti):
        return float(ti.max()) if len(ti) else None

    results = [seen_max(analyse(maxima(cyc_all, ti_all), block, exceedance, interval, "all threads", "samples",
                                gof_draws), top(ti_all))]
    if len(per_thread) > 1:
        for t, (c, _, ti) in per_thread.items():
            results.append(seen_max(analyse(maxima(c, ti), block, exceedance, interval, f"thread {t}", "samples",
                                            gof_draws), top(ti)))
    return results
