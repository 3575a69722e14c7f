"""docs/performance.md is shared by several benchmarks; each owns one or more
'## ' sections and replaces only those, so running one bench keeps the others'."""

from __future__ import annotations

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PERFORMANCE_MD = ROOT / "docs" / "performance.md"
TITLE = "# Performance of rtgauge itself"
LOAD_AT_START = os.getloadavg()[0]     # a bench imports this module first thing


def load_text() -> str:
    """The 1-minute load average when the bench started and now: other sessions load
    this shared machine and it moves a lot within one run, so a section says both."""
    return f"load average {LOAD_AT_START:.1f} at the start, {os.getloadavg()[0]:.1f} at the end"


def replace_section_text(text: str, title: str, body: str) -> str:
    """`text` with the section '## title' (up to the next '## ' heading) replaced by
    body, or with the section appended when it is not there."""
    pattern = re.compile(rf"^## {re.escape(title)}\n.*?(?=^## |\Z)", re.S | re.M)
    new = f"## {title}\n\n{body.strip()}\n\n"
    if pattern.search(text):
        return pattern.sub(lambda _m: new, text, count=1)
    return text.rstrip() + "\n\n" + new


def write_section(title: str, body: str, path: Path = PERFORMANCE_MD) -> None:
    text = path.read_text() if path.exists() else TITLE + "\n"
    path.write_text(replace_section_text(text, title, body))


def paired_shift(after: list[float], before: list[float], ratio: bool = False) -> dict:
    """The shift between two series measured in the same rounds (round i of each
    interleaved with the other): per-round differences after - before (or ratios
    after / before), their median, a 95 % bootstrap interval of that median and the
    Wilcoxon signed-rank p-value against no shift. Rounds pair out the machine's
    drift; with fewer than 5 rounds there is no interval (None)."""
    import numpy as np
    from scipy import stats

    a, b = np.asarray(after, float), np.asarray(before, float)
    d = np.log(a / b) if ratio else a - b
    out = {"median": float(np.median(d)), "low": None, "high": None, "p": None, "n": len(d)}
    if len(d) >= 5 and np.ptp(d) > 0:
        ci = stats.bootstrap((d,), np.median, confidence_level=0.95, n_resamples=9999, method="percentile",
                             random_state=np.random.default_rng(1)).confidence_interval
        out["low"], out["high"] = float(ci.low), float(ci.high)
        out["p"] = float(stats.wilcoxon(d).pvalue)
    if ratio:
        out = {k: (float(np.exp(v)) if k in ("median", "low", "high") and v is not None else v)
               for k, v in out.items()}
    return out


def shift_text(s: dict, unit: str = "", fmt: str = "{:+.1f}") -> str:
    """'+1.2 us (95 % CI -0.3 .. +2.5, Wilcoxon p 0.04, 8 rounds)'."""
    text = fmt.format(s["median"]) + unit
    if s["low"] is None:
        return text + f" ({s['n']} rounds: too few for an interval)"
    return (text + f" (95 % CI {fmt.format(s['low'])} .. {fmt.format(s['high'])}, Wilcoxon p "
            f"{s['p']:.2g}, {s['n']} rounds)")
