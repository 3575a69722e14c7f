"""The one histogram builder of the tool adapters: a tool's linear histogram (buckets of
one width, counts, the samples beyond the last bucket) as a distribution of the engine
contract (ns). cyclictest, its histfile, jitterdebugger, rtla and stress-ng all count
their samples this way; they differ only in what their files say, which the caller
passes:

- `width` and `unit_ns`: a bucket's width in the tool's unit, and the unit in ns
  (cyclictest: 1 µs buckets; rtla: --bucket-size of µs or ns; stress-ng: ns);
- `overflow_from`: where the overflows start (the tool's histogram limit, in its unit;
  None: right above the highest bucket with a count);
- `edge`: the value a percentile takes in its bucket: the bucket's lower edge (`low`,
  cyclictest's whole µs, truncated) or its top, never above the measured max (`high`,
  rtla's);
- `spread`: the standard deviation from the bucket mid-points only when no sample is an
  overflow (`complete`), from the buckets' samples whatever the overflows (`inside`), or
  none (`none`).

A percentile is nearest-rank (the bucket holding the ceil(q·n)-th sample); one that
falls among the overflows is the exact max, listed in `upper_bounds`."""

from __future__ import annotations

import math

PERCENTILES = (("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p999", 0.999), ("p9999", 0.9999))


def nearest_rank(counts: dict[int, int], count: int, q: float):
    """The bucket (its key) holding the ceil(q·count)-th sample; None when it is beyond
    the buckets (an overflow) or there is no sample."""
    if count <= 0:
        return None
    rank, seen = max(1, math.ceil(q * count)), 0
    for lo in sorted(counts):
        seen += counts[lo]
        if seen >= rank:
            return lo
    return None


def linear_histogram(counts: dict[int, int], width: int, unit_ns: int, overflow: int = 0,
                     overflow_from: int | None = None) -> dict:
    """The contract's linear histogram: bins [lo, lo + width) in ns with a count, sorted,
    then the overflows and where they start (unit: the tool's)."""
    out = {"scheme": "linear", "bucket_ns": width * unit_ns,
           "bins": [[lo * unit_ns, (lo + width) * unit_ns - 1, c] for lo, c in sorted(counts.items()) if c]}
    if overflow:
        out["overflow"] = overflow
        start = overflow_from if overflow_from is not None else max(counts, default=0) + width
        out["overflow_from_ns"] = start * unit_ns
    return out


def distribution(counts: dict[int, int], count: int, overflow: int, vmin, vavg, vmax, *, width: int = 1,
                 unit_ns: int = 1000, overflow_from: int | None = None, edge: str = "low",
                 spread: str = "complete", histogram: bool = True) -> dict:
    """A contract distribution (ns) from a tool's linear buckets (keys: a bucket's lower
    edge in the tool's unit) and overflows; vmin, vavg and vmax in the same unit, None
    where the tool gives none (they are then absent, never 0). histogram=False: the tool
    kept none (cyclictest without -h); with no bucket counted, min, avg and max are all
    it says, and a percentile or a spread would be invented."""
    total = sum(counts.values())
    out: dict = {"unit": "ns", "count": count,
                 "min": vmin * unit_ns if vmin is not None else None,
                 "avg": float(vavg) * unit_ns if vavg is not None else None}
    if spread == "inside":
        mean = sum((lo + width / 2) * unit_ns * c for lo, c in counts.items()) / total if total else 0.0
        out["stddev"] = math.sqrt(sum(c * ((lo + width / 2) * unit_ns - mean) ** 2
                                      for lo, c in counts.items()) / total) if total else 0.0
    out["max"] = vmax * unit_ns if vmax is not None else None
    out["resolution_ns"] = width * unit_ns
    if not histogram and not total:
        return out
    if spread == "complete" and total and not overflow:    # a spread only from every sample
        mean = sum((lo + width / 2) * c for lo, c in counts.items()) / total
        out["stddev"] = math.sqrt(sum(c * ((lo + width / 2) - mean) ** 2 for lo, c in counts.items()) / total) \
            * unit_ns
    bounded = []
    for name, q in PERCENTILES:
        lo = nearest_rank(counts, count, q)
        if count <= 0:
            out[name] = None
        elif lo is None:                   # among the overflows: the max, an upper bound
            out[name] = out["max"]
            bounded.append(name)
        elif edge == "high":
            out[name] = min((lo + width - 1) * unit_ns, out["max"])
        else:
            out[name] = lo * unit_ns
    if bounded:
        out["upper_bounds"] = bounded
    out["histogram"] = linear_histogram(counts, width, unit_ns, overflow, overflow_from)
    return out
