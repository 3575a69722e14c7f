"""One number formatter for the terminal and the HTML report.

Figures that are read together (a cell's min / avg / max, a row's avg / max) are
printed with the same number of decimals, chosen from the smallest non-zero
magnitude among them so that it keeps SIG significant digits (at most MAX_DECIMALS
decimals: a nanosecond when the unit is µs). Rounding to a common number of
decimals is monotone, so a maximum is never printed below its average (the old
"0.03 / 0.0"), and a figure of a few nanoseconds does not print as 0.0 µs."""

from __future__ import annotations

import math

SIG = 3
MAX_DECIMALS = 3
DASH = "–"


def decimals_for(values, sig: int = SIG, max_decimals: int = MAX_DECIMALS) -> int:
    """Decimals that give the smallest non-zero |value| sig significant digits."""
    mags = [abs(float(v)) for v in values if v is not None and math.isfinite(float(v)) and float(v) != 0]
    if not mags:
        return 0
    smallest = min(mags)
    return int(min(max_decimals, max(0, sig - 1 - math.floor(math.log10(smallest)))))


def fmt_group(values, scale: float = 1.0, sig: int = SIG, dash: str = DASH, max_decimals: int = MAX_DECIMALS,
              prefixes=None) -> list[str]:
    """The values (divided by scale: 1000 turns ns into µs) as text with one number
    of decimals; None becomes the dash. prefixes: a bound ("<", ">") per value."""
    scaled = [None if v is None else float(v) / scale for v in values]
    d = decimals_for(scaled, sig, max_decimals)
    out = []
    for i, v in enumerate(scaled):
        if v is None or not math.isfinite(v):
            out.append(dash)
            continue
        pre = (prefixes[i] if prefixes else "") or ""
        out.append(f"{pre}{v:,.{d}f}")
    return out


def us_fixed(ns, digits: int = 1, dash: str = DASH) -> str:
    """One figure in ns as µs with a fixed number of decimals (thousands separated);
    the dash when it is not a number. For a figure shown alone, in a column of
    its kind (fmt_group chooses the decimals for figures read together)."""
    return dash if not isinstance(ns, (int, float)) else f"{ns / 1000:,.{digits}f}"


def us_group(values_ns, dash: str = DASH) -> list[str]:
    """Nanosecond values as microseconds, one number of decimals for the group."""
    return fmt_group(values_ns, 1000.0, dash=dash)


def latency_figures(row: dict, dash: str = DASH) -> list[str]:
    """min, avg, p99, p99.99, max (µs) of a latency row (rtgauge.analysis.run.rows.latency_row)
    with one number of decimals."""
    return fmt_group([row.get(k) for k in ("min_us", "avg_us", "p99_us", "p9999_us", "max_us", "stddev_us")],
                     dash=dash)[:5]


def avg_sigma(row: dict, dash: str = DASH) -> str:
    """'avg ± σ' (µs) of a latency row, as the interrupt study reports it, with the
    decimals of the row's other figures."""
    figs = fmt_group([row.get(k) for k in ("min_us", "avg_us", "p99_us", "p9999_us", "max_us", "stddev_us")], dash=dash)
    return figs[1] if row.get("stddev_us") is None else f"{figs[1]} ± {figs[5]}"


def misses_text(misses, skipped, dash: str = DASH) -> str:
    """Periods not served on time (analysis.run.rows.late_periods: late cycles and skipped
    deadlines), with how many of them were skipped when any were."""
    if misses is None:
        return dash
    return f"{misses:,}" + (f" ({skipped:,} skipped)" if skipped else "")
