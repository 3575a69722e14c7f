"""The answer (Pwcet) and how it reads: its one-line summary, the run a probability
needs, its JSON, durations in words, and what its return-level plot shows."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np

from rtgauge.analysis.pwcet.pot import PotFit
from rtgauge.analysis.pwcet.fit import (
    CI_METHOD, CONFIDENCE, GevFit, METHOD, POT_METHOD, block_probability, cycles_needed, cycles_to_reach,
    evidence_limit, return_level,
)
from rtgauge.analysis.pwcet.checks import Check


@dataclass
class Pwcet:
    """The probable worst case of one series of block maxima."""
    label: str                      # "all threads", "thread 0", ...
    source: str                     # "ti_window_max", "samples"
    exceedance: float               # p, per cycle
    block_cycles: int               # m
    interval_ns: int | None         # cycle period, when known
    blocks: int                     # n block maxima used
    observed_max_ns: float | None
    applicable: bool
    reason: str | None              # why not applicable
    checks: list[Check] = field(default_factory=list)
    fit: GevFit | PotFit | None = None    # a PotFit when peaks over a threshold answered
    level_ns: float | None = None
    ci_low_ns: float | None = None
    ci_high_ns: float | None = None   # None with an applicable result: not bounded by the data
    confidence: float = CONFIDENCE
    ci_method: str = CI_METHOD
    maxima_ns: list[float] = field(default_factory=list, repr=False)
    code: str | None = None           # the stable reason code of a refusal (CODES)
    tail: str | None = None           # bounded, exponential, heavy (from the shape's interval)
    shape_low: float | None = None    # 95 % profile-likelihood interval of ξ (None: unbounded)
    shape_high: float | None = None
    mixture: dict | None = None       # the two regimes, when the code is "mixture"
    supported_exceedance: float | None = None   # the smallest p the data support, and the level there
    supported_level_ns: float | None = None
    supported_low_ns: float | None = None
    supported_high_ns: float | None = None
    cycles_needed: float | None = None          # cycles a run needs for the evidence to reach p
    method: str = METHOD                        # METHOD (GEV on block maxima) or POT_METHOD

    @property
    def by_pot(self) -> bool:
        """Whether peaks over a threshold answered (the block maxima were dependent)."""
        return self.method == POT_METHOD

    @property
    def block_exceedance(self) -> float:
        return block_probability(self.exceedance, self.block_cycles)

    @property
    def return_period_s(self) -> float | None:
        """Mean time between cycles above the level at this rate: interval / p."""
        return None if not self.interval_ns else self.interval_ns * 1e-9 / self.exceedance

    @property
    def run_to_reach_s(self) -> float | None:
        """How long a run must be for its observed maximum to reach the level with
        probability 1/2: n cycles with 1 - (1-p)^n = 1/2."""
        if not self.interval_ns:
            return None
        return cycles_to_reach(self.exceedance, 0.5) * self.interval_ns * 1e-9

    @property
    def observed_s(self) -> float | None:
        return None if not self.interval_ns else self.blocks * self.block_cycles * self.interval_ns * 1e-9

    def rate_text(self) -> str:
        s = self.return_period_s
        if s is None:
            return f"once in {1 / self.exceedance:,.3g} cycles"
        return f"about {once_per(s)} at this rate"

    @property
    def run_needed_s(self) -> float | None:
        """How long a run must be (at least) for the evidence to reach the requested p."""
        return None if not self.interval_ns or self.cycles_needed is None else self.cycles_needed * self.interval_ns * 1e-9

    @property
    def length_helps(self) -> bool:
        """Whether a longer run is the remedy: not for an estimate already given, nor for
        a refusal a longer run would not cure (a heavy tail, a mixture, bursts or drift,
        no tail)."""
        return not self.applicable and self.code not in ("heavy-tail", "mixture", "not-iid", "no-tail",
                                                         "below-threshold")

    @property
    def method_text(self) -> str:
        return " (peaks over a threshold, declustered)" if self.by_pot else ""

    @property
    def past_needed(self) -> bool:
        """Whether this run is already as long as the evidence limit asks (a too-uncertain
        answer): then only "longer than this run" can be said, not a length."""
        s, obs = self.run_needed_s, self.observed_s
        return s is not None and obs is not None and s <= obs

    def needed_text(self) -> str:
        s = self.run_needed_s
        if self.past_needed:
            return (f"this run ({duration_text(self.observed_s)}) is past the evidence limit for "
                    f"p={self.exceedance:g}; a longer one narrows the interval")
        n = f"{self.cycles_needed:,.0f} cycles" if s is None else duration_text(s)
        return f"a run of at least {n} is needed for p={self.exceedance:g}"

    def needed_label(self) -> str:
        """The run the requested p needs, for a table cell: "-" where a longer run is not
        the remedy (or the interval is not known). Always a floor ("at least", "longer
        than"): the distance rule is necessary, not sufficient; a run that long still has
        to pass every check and narrow its interval to MAX_SPAN, which no length promises."""
        if not self.length_helps or self.run_needed_s is None:
            return "-"
        if self.past_needed:
            return f"longer than {duration_text(self.observed_s)}"
        return f"at least {duration_text(self.run_needed_s)}"

    def summary(self) -> str:
        """One line: the observed maximum, then the level with its interval, or why there
        is none (with its code) and how long a run would need to be."""
        seen = "" if self.observed_max_ns is None else f"observed max {self.observed_max_ns / 1000:,.1f} µs; "
        if not self.applicable:
            text = f"{seen}no estimate at p={self.exceedance:g} [{self.code}]{self.method_text}: {self.reason}"
            if self.length_helps:
                text += f"; {self.needed_text()}"
            return text
        high = "unbounded" if self.ci_high_ns is None else f"{self.ci_high_ns / 1000:,.1f}"
        text = (f"{seen}{self.level_ns / 1000:,.1f} µs (95% CI {self.ci_low_ns / 1000:,.1f}–{high} µs) "
                f"exceeded with p={self.exceedance:g} per cycle{self.method_text}, {self.rate_text()}")
        if self.run_to_reach_s is not None:
            text += f"; a run would need about {duration_text(self.run_to_reach_s)} to observe it"
        return text

    def to_json(self) -> dict:
        return {
            "label": self.label, "source": self.source, "exceedance": self.exceedance,
            "block_cycles": self.block_cycles, "block_exceedance": self.block_exceedance,
            "interval_ns": self.interval_ns, "blocks": self.blocks,
            "observed_max_ns": self.observed_max_ns, "observed_s": self.observed_s,
            "applicable": self.applicable, "reason": self.reason,
            "checks": [c.to_json() for c in self.checks],
            "fit": None if self.fit is None else (self.fit.to_json() if isinstance(self.fit, PotFit) else {
                "distribution": "GEV", "method": "maximum likelihood", **asdict(self.fit)}),
            "level_ns": self.level_ns, "ci_low_ns": self.ci_low_ns, "ci_high_ns": self.ci_high_ns,
            "confidence": self.confidence, "ci_method": self.ci_method,
            "return_period_s": self.return_period_s, "run_to_reach_s": self.run_to_reach_s,
            "method": self.method,
            "code": self.code,
            "estimate": None if not self.applicable else {
                "exceedance": self.exceedance, "level_ns": self.level_ns, "ci_low_ns": self.ci_low_ns,
                "ci_high_ns": self.ci_high_ns},
            "tail": None if self.tail is None else {"class": self.tail, "shape": self.fit.shape,
                                                    "shape_ci_low": self.shape_low, "shape_ci_high": self.shape_high},
            "supported": None if self.supported_exceedance is None else {
                "exceedance": self.supported_exceedance, "level_ns": self.supported_level_ns,
                "ci_low_ns": self.supported_low_ns, "ci_high_ns": self.supported_high_ns},
            "mixture": self.mixture,
            "evidence_limit": None if not self.blocks else evidence_limit(self.blocks, self.block_cycles),
            "cycles_needed": self.cycles_needed, "run_needed_s": self.run_needed_s,
            "summary": self.summary(),
        }


UNITS = (("year", 365.25 * 86400), ("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1))


def duration_text(seconds: float) -> str:
    for name, size in UNITS:
        if seconds >= size:
            v = seconds / size
            return f"{v:,.3g} {name}{'s' if v >= 1.5 else ''}"
    return f"{seconds * 1000:.3g} ms"


def once_per(seconds: float) -> str:
    """'once per 11.6 days', 'once per hour'."""
    for name, size in UNITS:
        if seconds >= size:
            v = seconds / size
            return f"once per {name}" if 0.95 <= v < 1.05 else f"once per {v:,.3g} {name}s"
    return f"once per {seconds * 1000:.3g} ms"


def _num(v: float | None) -> str:
    return "unbounded" if v is None else f"{v:+.2f}"



def plot_data(r: Pwcet, band_points: int = 5) -> dict | None:
    """What a return-level plot of r shows, in µs against the return period in cycles:
    observed block maxima at their empirical return periods (Weibull plotting positions
    i/(n+1)), the fitted curve, its 95 % profile-likelihood band at band_points periods,
    and the level with its interval at the requested exceedance (an estimate) or at the
    smallest probability the data support (a refusal that still has a sound fit). None
    when there is no fitted level to show (a refusal without one draws no chart)."""
    if r.fit is None or not r.maxima_ns:
        return None
    if r.applicable:
        p, mark = r.exceedance, (r.level_ns, r.ci_low_ns, r.ci_high_ns)
    elif r.supported_exceedance is not None:
        p, mark = r.supported_exceedance, (r.supported_level_ns, r.supported_low_ns, r.supported_high_ns)
    else:
        return None
    m = r.block_cycles
    if isinstance(r.fit, PotFit):
        # the cluster peaks, at the rate of clusters above each: λ·(1 - i/(k+1))
        x = np.sort(r.fit.peaks)
        F = np.arange(1, len(x) + 1) / (len(x) + 1)
        observed = [(float(m / (r.fit.rate * (1 - f))), float(v) / 1000) for f, v in zip(F, x)]
        q_start = min(0.5, 0.9 * r.fit.rate)
    else:
        x = np.sort(np.asarray(r.maxima_ns, dtype=float))
        F = np.arange(1, len(x) + 1) / (len(x) + 1)
        observed = [(float(m / (1 - f)), float(v) / 1000) for f, v in zip(F, x)]
        q_start = 0.5
    out = {"observed": observed, "curve": [], "band": [], "exceedance": p}
    q_target = block_probability(p, m)
    qs = np.geomspace(q_start, q_target, 40)
    out["curve"] = [(float(m / q), float(r.fit.isf(q)) / 1000) for q in qs]
    for q in np.geomspace(q_start, q_target, band_points):
        _, lo, hi = return_level(r.fit, x, float(q))
        out["band"].append((float(m / q), lo / 1000, math.inf if hi is None else hi / 1000))
    out["mark"] = (1 / p, mark[0] / 1000, mark[1] / 1000, None if mark[2] is None else mark[2] / 1000)
    return out
