"""The probable worst-case latency (pWCET) from extreme value theory.

Block maxima (the engine's per-window maxima `ti_window_max`, or raw samples cut into
blocks of cycles) are fitted with a generalised extreme value (GEV) distribution by
maximum likelihood (scipy.stats.genextreme). The latency exceeded with probability p
per cycle is the block-level return level for q = 1 - (1 - p)^m, m cycles a block,
with a 95 % profile-likelihood interval. Before the number, the conditions that make
it meaningful are tested; when one fails the result says "not applicable because ..."
instead of a number. docs/pwcet.md explains the method and how to read the result.
"""

from __future__ import annotations

import math
import struct
import warnings
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from scipy import optimize, special, stats

from rtgauge.analysis.records import Measurement, as_measurement
from rtgauge.defaults import DEFAULT_EXCEEDANCE
from rtgauge.errors import UserError

CONFIDENCE = 0.95
MIN_BLOCKS = 30
# Each applicability check fails when its p-value is at most this; three checks together
# wrongly refuse a sound series at most ~3 % of the time. With GOF_DRAWS = 99 the Monte
# Carlo goodness-of-fit test has exactly this size (the data's statistic above all draws).
ALPHA = 0.01
GOF_DRAWS = 99          # parametric bootstrap draws for the goodness-of-fit p-value
COMPARE_DRAWS = 200     # parametric bootstrap draws for compare_pwcet
CI_METHOD = "profile likelihood"


# ---- result types -----------------------------------------------------------

@dataclass
class Check:
    """One applicability condition and the test that checked it."""
    name: str            # independence, identical distribution, goodness of fit, enough blocks
    test: str
    statistic: float | None
    p_value: float | None
    passed: bool | None   # None: not tested (an earlier check already failed)
    detail: str

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class GevFit:
    """GEV parameters in the units of the data (ns). shape is ξ (the climate/EVT sign:
    ξ > 0 heavy tail, ξ = 0 Gumbel, ξ < 0 bounded); scipy's c is -ξ."""
    shape: float
    loc: float
    scale: float
    loglik: float

    @property
    def c(self) -> float:
        return -self.shape

    def isf(self, q) -> np.ndarray:
        return stats.genextreme.isf(q, self.c, self.loc, self.scale)

    def cdf(self, x) -> np.ndarray:
        return stats.genextreme.cdf(x, self.c, self.loc, self.scale)


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
    fit: GevFit | None = None
    level_ns: float | None = None
    ci_low_ns: float | None = None
    ci_high_ns: float | None = None   # None with an applicable result: not bounded by the data
    confidence: float = CONFIDENCE
    ci_method: str = CI_METHOD
    maxima_ns: list[float] = field(default_factory=list, repr=False)

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

    def summary(self) -> str:
        """One line: the level with its interval, or why there is none."""
        if not self.applicable:
            return f"not applicable because {self.reason}"
        high = "unbounded" if self.ci_high_ns is None else f"{self.ci_high_ns / 1000:,.1f}"
        text = (f"{self.level_ns / 1000:,.1f} µs (95% CI {self.ci_low_ns / 1000:,.1f}–{high} µs) "
                f"exceeded with p={self.exceedance:g} per cycle, {self.rate_text()}")
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
            "fit": None if self.fit is None else {"distribution": "GEV", "method": "maximum likelihood",
                                                  **asdict(self.fit)},
            "level_ns": self.level_ns, "ci_low_ns": self.ci_low_ns, "ci_high_ns": self.ci_high_ns,
            "confidence": self.confidence, "ci_method": self.ci_method,
            "return_period_s": self.return_period_s, "run_to_reach_s": self.run_to_reach_s,
            "summary": self.summary(),
        }


# ---- small conversions --------------------------------------------------------

def block_probability(p: float, m: int) -> float:
    """Probability that a block of m independent cycles holds at least one above the
    per-cycle level: 1 - (1-p)^m, computed without cancellation."""
    return float(-np.expm1(m * np.log1p(-p)))


def cycles_to_reach(p: float, chance: float) -> float:
    """Cycles n such that a run of n cycles exceeds the level with this chance."""
    return float(np.log1p(-chance) / np.log1p(-p))


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


# ---- fitting ------------------------------------------------------------------

@contextmanager
def _quiet():
    """Overflow and invalid-value warnings are expected while the optimiser probes
    parameters outside the support; they are handled (the likelihood is -inf there)."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def _standardise(x: np.ndarray) -> tuple[float, float]:
    """Location and scale that bring x near unit scale (GEV is a location-scale family,
    so fitting (x - a) / b and mapping back gives the same maximum)."""
    a = float(np.median(x))
    b = float(np.std(x)) or 1.0
    return a, b


def _loglik(z: np.ndarray, c: float, loc: float, scale: float) -> float:
    """GEV log-likelihood in scipy's parametrisation (c = -ξ); the same value as
    scipy.stats.genextreme.logpdf(z, c, loc, scale).sum() (tests/test_pwcet.py checks),
    written out because the profile likelihood evaluates it thousands of times and
    scipy's per-call overhead is 20 times the arithmetic."""
    if not scale > 0 or not np.isfinite(c) or abs(c) > 5:
        return -np.inf
    u = (z - loc) / scale
    if abs(c) < 1e-9:
        w = u
    else:
        t = -c * u
        if np.any(t <= -1):
            return -np.inf          # an observation outside the support
        w = -np.log1p(t) / c
    return float(-len(z) * math.log(scale) - (1 - c) * w.sum() - np.exp(-w).sum())


def _nll(z: np.ndarray, c: float, loc: float, scale: float) -> float:
    return -_loglik(z, c, loc, scale)


def _isf1(q: float, c: float) -> float:
    """Standard GEV upper quantile: scipy.stats.genextreme.isf(q, c), via Box-Cox."""
    return float(-special.boxcox(-math.log1p(-q), c))


def fit_gev(x) -> GevFit:
    """Maximum-likelihood GEV fit (scipy.stats.genextreme.fit), started from the Gumbel
    moment estimates of the standardised data."""
    with _quiet():
        return _fit_gev(np.asarray(x, dtype=float))


def _fit_gev(x: np.ndarray) -> GevFit:
    a, b = _standardise(x)
    z = (x - a) / b
    s0 = max(float(np.std(z)) * math.sqrt(6) / math.pi, 1e-6)
    l0 = float(np.mean(z)) - 0.5772 * s0
    best = None
    for c0 in (0.0, -0.3, 0.3):      # further starts only when the first fails
        c, loc, scale = stats.genextreme.fit(z, c0, loc=l0, scale=s0)
        nll = _nll(z, c, loc, scale)
        if best is None or nll < best[0]:
            best = (nll, c, loc, scale)
        if np.isfinite(best[0]):
            break
    nll, c, loc, scale = best
    if not np.isfinite(nll):
        raise ValueError("the GEV fit did not converge")
    return GevFit(shape=-float(c), loc=a + b * float(loc), scale=b * float(scale),
                  loglik=-nll - len(x) * math.log(b))


def refit(y: np.ndarray, start: GevFit) -> GevFit | None:
    """Maximum-likelihood refit of a bootstrap draw, started at the fit it was drawn from
    (scipy.optimize on the same likelihood as genextreme.fit; 10x faster warm-started)."""
    with _quiet():
        a, b = _standardise(y)
        z = (y - a) / b
        theta = (start.c, (start.loc - a) / b, math.log(start.scale / b))
        r = optimize.minimize(lambda t: _nll(z, t[0], t[1], math.exp(t[2])), theta, method="Nelder-Mead",
                              options={"xatol": 1e-3, "fatol": 1e-5, "maxfev": 2000})
        if not np.isfinite(r.fun):
            return None
        c, loc, log_s = r.x
        return GevFit(shape=-float(c), loc=a + b * float(loc), scale=b * math.exp(log_s),
                      loglik=-float(r.fun) - len(y) * math.log(b))


def _profile(z: np.ndarray, q: float, level: float, start: tuple[float, float]) -> tuple[float, tuple]:
    """Maximum log-likelihood of standardised z with the return level for block
    exceedance q held at `level`: loc follows from (level, c, scale)."""
    def nll(theta):
        c, log_s = theta
        s = math.exp(log_s)
        return _nll(z, c, level - s * _isf1(q, c), s)
    simplex = np.array([start, (start[0] + 0.05, start[1]), (start[0], start[1] + 0.05)])
    r = optimize.minimize(nll, start, method="Nelder-Mead",
                          options={"xatol": 1e-3, "fatol": 1e-3, "maxfev": 400, "initial_simplex": simplex})
    best = r
    if not np.isfinite(r.fun):
        for c0 in (0.0, -0.3, 0.3):
            rr = optimize.minimize(nll, (c0, start[1]), method="Nelder-Mead",
                                   options={"xatol": 1e-4, "fatol": 1e-4, "maxfev": 600})
            if rr.fun < best.fun:
                best = rr
    return -float(best.fun), tuple(best.x)


def return_level(fit: GevFit, x, q: float, confidence: float = CONFIDENCE) -> tuple[float, float, float | None]:
    """(level, low, high) of the return level for block exceedance q, the interval by
    profile likelihood: every level whose profile log-likelihood is within
    chi2(1, confidence)/2 of the maximum. high is None when the data do not bound it."""
    with _quiet():
        return _return_level(fit, np.asarray(x, dtype=float), q, confidence)


def _return_level(fit: GevFit, x: np.ndarray, q: float, confidence: float) -> tuple[float, float, float | None]:
    a, b = _standardise(x)
    z = (x - a) / b
    c, loc, scale = fit.c, (fit.loc - a) / b, fit.scale / b
    zhat = float(stats.genextreme.isf(q, c, loc, scale))
    lmax = -_nll(z, c, loc, scale)
    cut = lmax - stats.chi2.ppf(confidence, 1) / 2
    start0 = (c, math.log(scale))
    cache: dict[float, tuple] = {}
    values: dict[float, float] = {}

    def g(level):
        if level in values:
            return values[level]
        nearest = min(cache, key=lambda k: abs(k - level)) if cache else None
        ll, th = _profile(z, q, level, cache[nearest] if nearest is not None else start0)
        if np.isfinite(ll):
            cache[level] = th
        values[level] = max(ll - cut, -1e6)   # an impossible level (data outside the support) is far below
        return values[level]

    width = max(abs(zhat - loc), scale)

    def bound(direction: int) -> float | None:
        inner = zhat
        step = 0.05 * width
        for _ in range(40):
            outer = zhat + direction * step
            if g(outer) < 0 < g(inner):
                return optimize.brentq(g, min(inner, outer), max(inner, outer), xtol=2e-3 * width, rtol=1e-4)
            inner = outer
            step *= 2.5
            if step > 1e6 * width:
                break
        return None

    high = bound(+1)
    low = bound(-1)
    tr = lambda v: None if v is None else a + b * v   # noqa: E731
    return a + b * zhat, (tr(low) if low is not None else float(np.min(x))), tr(high)


# ---- applicability checks ----------------------------------------------------------

def check_independence(x: np.ndarray) -> Check:
    """Ljung-Box portmanteau test on the ranks of the series (ranks: one huge maximum
    must not dominate the autocorrelations); chi-square p-value from scipy."""
    n = len(x)
    lags = max(1, min(10, n // 5))
    r = stats.rankdata(x)
    r = r - r.mean()
    denom = float(np.dot(r, r))
    if denom == 0:
        return Check("independence", f"Ljung-Box on ranks, {lags} lags", None, None, False,
                     "all block maxima are equal")
    ac = np.array([np.dot(r[:-k], r[k:]) / denom for k in range(1, lags + 1)])
    q = float(n * (n + 2) * np.sum(ac ** 2 / (n - np.arange(1, lags + 1))))
    p = float(stats.chi2.sf(q, lags))
    worst = int(np.argmax(np.abs(ac))) + 1
    return Check("independence", f"Ljung-Box on ranks, {lags} lags", q, p, bool(p > ALPHA),
                 f"largest autocorrelation {ac[worst - 1]:+.2f} at lag {worst}")


def check_identical(x: np.ndarray) -> Check:
    """Two-sample Kolmogorov-Smirnov test between the first and second half."""
    h = len(x) // 2
    first, second = x[:h], x[h:]
    r = stats.ks_2samp(first, second)
    return Check("identical distribution", "two-sample Kolmogorov-Smirnov, first vs second half",
                 float(r.statistic), float(r.pvalue), bool(r.pvalue > ALPHA),
                 f"median {np.median(first) / 1000:,.1f} µs then {np.median(second) / 1000:,.1f} µs")


def _ad(x_sorted: np.ndarray, fit_cdf) -> float:
    """Anderson-Darling statistic of sorted data against a fitted cdf; the value of
    scipy.stats.goodness_of_fit(..., statistic="ad") with every parameter given (the
    test holds them equal), without its Monte Carlo, which would refit by the slow path."""
    u = np.clip(fit_cdf(x_sorted), 1e-12, 1 - 1e-12)
    n = len(u)
    i = np.arange(1, n + 1)
    return float(-n - np.mean((2 * i - 1) * (np.log(u) + np.log1p(-u[::-1]))))


def check_fit(x: np.ndarray, fit: GevFit, draws: int = GOF_DRAWS, seed: int = 0) -> Check:
    """Anderson-Darling distance between the data and the fitted GEV; its p-value by
    parametric bootstrap (draw from the fit, refit, recompute), because the parameters
    were estimated from the same data."""
    xs = np.sort(x)
    a2 = _ad(xs, fit.cdf)
    rng = np.random.default_rng(seed)
    null = []
    for _ in range(draws):
        y = np.sort(stats.genextreme.rvs(fit.c, fit.loc, fit.scale, size=len(x), random_state=rng))
        f = refit(y, fit)
        if f is not None:
            null.append(_ad(y, f.cdf))
    p = (1 + sum(v >= a2 for v in null)) / (1 + len(null))
    return Check("goodness of fit", f"Anderson-Darling against the fitted GEV, {len(null)} bootstrap draws",
                 a2, float(p), bool(p > ALPHA), f"shape ξ={fit.shape:+.2f}")


# ---- the analysis ---------------------------------------------------------------

def analyse(maxima, block_cycles: int, exceedance: float = DEFAULT_EXCEEDANCE, interval_ns: int | None = None,
            label: str = "all threads", source: str = "ti_window_max", gof_draws: int = GOF_DRAWS) -> Pwcet:
    """The pWCET of a series of block maxima (ns, in time order)."""
    if not 0 < exceedance < 1:
        raise UserError(f"the exceedance probability must be between 0 and 1 (got {exceedance:g}); "
                        "give e.g. --exceedance 1e-9.")
    x = np.asarray([v for v in maxima if v is not None], dtype=float)
    res = Pwcet(label=label, source=source, exceedance=exceedance, block_cycles=int(block_cycles),
                interval_ns=interval_ns, blocks=len(x), observed_max_ns=float(x.max()) if len(x) else None,
                applicable=False, reason=None, maxima_ns=x.tolist())
    if len(x) < MIN_BLOCKS:
        res.reason = (f"only {len(x)} block maxima (at least {MIN_BLOCKS} are needed); "
                      "run longer or use shorter windows")
        res.checks.append(Check("enough blocks", f"at least {MIN_BLOCKS} block maxima", len(x), None, False,
                                res.reason))
        return res
    if np.ptp(x) == 0:
        res.reason = "every block maximum is the same value, so there is no tail to fit"
        return res
    res.checks += [check_independence(x), check_identical(x)]
    try:
        fit = fit_gev(x)
    except ValueError:
        res.reason = "the GEV fit did not converge"
        return res
    res.fit = fit
    if all(c.passed for c in res.checks):
        res.checks.append(check_fit(x, fit, gof_draws))
    else:
        res.checks.append(Check("goodness of fit", "Anderson-Darling against the fitted GEV", None, None, None,
                                "not tested: an earlier check failed"))
    failed = [c for c in res.checks if c.passed is False]
    if failed:
        res.reason = "; ".join(f"the block maxima fail the {c.name} check ({c.test}: p={c.p_value:.2g} ≤ {ALPHA}; "
                               f"{c.detail})" if c.p_value is not None else f"{c.name}: {c.detail}"
                               for c in failed)
        return res
    q = res.block_exceedance
    level, low, high = return_level(fit, x, q)
    res.level_ns, res.ci_low_ns, res.ci_high_ns = level, low, high
    res.applicable = True
    return res


def block_maxima(values, block_cycles: int) -> np.ndarray:
    """Maxima of consecutive blocks of block_cycles values; a last partial block is dropped."""
    v = np.asarray(values, dtype=float)
    n = len(v) // block_cycles
    return v[: n * block_cycles].reshape(n, block_cycles).max(axis=1) if n else np.empty(0)


# ---- stored measurements ---------------------------------------------------------

def _series_keys(metrics: dict) -> list[tuple[str, str]]:
    threads = sorted((k for k in metrics if k.startswith("ti_window_max#") and k.split("#")[1].isdigit()),
                     key=lambda k: int(k.split("#")[1]))
    out = [(k, f"thread {k.split('#')[1]}") for k in threads]
    if "ti_window_max" in metrics:
        out.insert(0, ("ti_window_max", "all threads"))
    return out


def measurement_series(m: Measurement | dict, key: str = "ti_window_max") -> tuple[list, int, int] | None:
    """(block maxima ns, block cycles, interval ns) of one stored series, or None when the
    measurement did not store one. Windows that are not full (the last one, when the run
    did not end on a window edge) are dropped: a shorter block has a smaller maximum."""
    m = as_measurement(m)
    metrics = m.metrics
    series = metrics.get(key)
    interval_us = m.params.get("interval_us")
    if not series or not series.window_ns or not interval_us:
        return None
    interval_ns = int(round(float(interval_us) * 1000))
    block = int(series.window_ns // interval_ns)
    if block < 1:
        return None
    vals = list(series.series or [])
    suffix = key[len("ti_window_max"):]
    elapsed = sum((m.scalar(f"{n}{suffix}") or 0) for n in ("cycles", "skipped"))
    if suffix == "" and any(k.startswith("cycles#") for k in metrics):
        # the whole-run counters add the threads; deadlines elapsed are per thread
        threads = sum(1 for k in metrics if k.startswith("cycles#"))
        elapsed = elapsed // max(threads, 1)
    if elapsed:
        vals = vals[: int(elapsed // block)]
    return vals, block, interval_ns


def measurement_pwcet(m: Measurement | dict, exceedance: float = DEFAULT_EXCEEDANCE, per_thread: bool = False,
                      gof_draws: int = GOF_DRAWS) -> list[Pwcet]:
    """The pWCET of a stored latency measurement: the whole run (all threads), and each
    thread when asked. Empty when it stored no per-window maxima (e.g. cyclictest)."""
    m = as_measurement(m)
    out = []
    for key, label in _series_keys(m.metrics):
        if key != "ti_window_max" and not per_thread:
            continue
        s = measurement_series(m, key)
        if s is None:
            continue
        vals, block, interval_ns = s
        out.append(analyse(vals, block, exceedance, interval_ns, label, "ti_window_max", gof_draws))
    return out


# ---- raw samples -------------------------------------------------------------------

BINARY_MAGIC = b"RTGSAMP1"
BINARY_DTYPE = np.dtype([("thread", "<u4"), ("reserved", "<u4"), ("cycle", "<u8"), ("deadline_ns", "<i8"),
                         ("ti", "<i8"), ("ts", "<i8"), ("tw", "<i8")])


def read_samples(path: str) -> dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """{thread: (cycle, deadline_ns, ti_ns)} from a docs/samples.md file (CSV or binary)."""
    p = Path(path)
    try:
        with p.open("rb") as f:
            head = f.read(16)
            if head[:8] == BINARY_MAGIC:
                size = struct.unpack_from("<I", head, 8)[0]
                if size != BINARY_DTYPE.itemsize:
                    raise UserError(f"{path} has {size}-byte records; this rtgauge reads the 48-byte "
                                    "records of docs/samples.md.")
                data = np.fromfile(f, dtype=BINARY_DTYPE)
                cols = (data["thread"], data["cycle"], data["deadline_ns"], data["ti"])
            else:
                f.seek(0)
                header = f.readline().decode("utf-8", "replace").strip()
                if header != "thread,cycle,deadline_ns,ti_ns,ts_ns,tw_ns":
                    raise UserError(f"{path} is not an rtgauge samples file (docs/samples.md): it starts with "
                                    f"{header[:40]!r} instead of the CSV header or RTGSAMP1.")
                try:
                    arr = np.loadtxt(f, delimiter=",", dtype=np.int64, ndmin=2)
                except ValueError as e:
                    raise UserError(f"{path} has a malformed line ({str(e).splitlines()[0]}); "
                                    "each line must hold six integers.") from None
                if arr.size == 0:
                    arr = np.empty((0, 6), dtype=np.int64)
                if arr.shape[1] != 6:
                    raise UserError(f"{path} has {arr.shape[1]} columns a line; docs/samples.md has six.")
                cols = (arr[:, 0], arr[:, 1], arr[:, 2], arr[:, 3])
    except FileNotFoundError:
        raise UserError(f"no samples file {path}; write one with `rtgauge-engine latency --samples FILE`.") from None
    except IsADirectoryError:
        raise UserError(f"{path} is a directory; give a samples file.") from None
    except PermissionError:
        raise UserError(f"cannot read {path}: permission denied.") from None
    thread, cycle, deadline, ti = cols
    if len(thread) == 0:
        raise UserError(f"{path} holds no samples; run `rtgauge-engine latency --samples FILE` for longer.")
    out = {}
    for t in np.unique(thread):
        sel = thread == t
        order = np.argsort(cycle[sel], kind="stable")
        out[int(t)] = (cycle[sel][order].astype(np.int64), deadline[sel][order].astype(np.int64),
                       ti[sel][order].astype(np.int64))
    return out


def default_block(cycles: int) -> int:
    """Cycles a block when not given: 1000 (one second at 1 kHz), fewer for short runs so
    that there are about 100 blocks, never under 10."""
    return int(max(10, min(1000, cycles // 100)))


def samples_pwcet(path: str, exceedance: float = DEFAULT_EXCEEDANCE, block_cycles: int | None = None,
                  gof_draws: int = GOF_DRAWS) -> list[Pwcet]:
    """pWCET of a raw samples file: all threads together (the largest Ti of each cycle),
    then each thread. Blocks are runs of consecutive cycle numbers."""
    per_thread = read_samples(path)
    interval = None
    diffs = [np.diff(d) for _, d, _ in per_thread.values() if len(d) > 1]
    steps = [np.diff(c) for c, _, _ in per_thread.values() if len(c) > 1]
    if diffs:
        d, s = np.concatenate(diffs), np.concatenate(steps)
        ok = s > 0
        if ok.any():
            interval = int(round(float(np.median(d[ok] / s[ok]))))
    longest = max(int(c[-1]) + 1 for c, _, _ in per_thread.values())
    block = block_cycles or default_block(longest)
    if block < 1:
        raise UserError(f"a block must hold at least one cycle (got {block}).")

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
    results = [analyse(maxima(cyc_all, ti_all), block, exceedance, interval, "all threads", "samples", gof_draws)]
    if len(per_thread) > 1:
        for t, (c, _, ti) in per_thread.items():
            results.append(analyse(maxima(c, ti), block, exceedance, interval, f"thread {t}", "samples", gof_draws))
    return results


# ---- comparing two systems -----------------------------------------------------------

def _bootstrap_levels(r: Pwcet, draws: int, rng) -> np.ndarray:
    x = np.asarray(r.maxima_ns, dtype=float)
    q = r.block_exceedance
    out = []
    for _ in range(draws):
        y = stats.genextreme.rvs(r.fit.c, r.fit.loc, r.fit.scale, size=len(x), random_state=rng)
        f = refit(y, r.fit)
        if f is not None:
            out.append(float(f.isf(q)))
    return np.asarray(out)


def compare_pwcet(meas_a, meas_b, exceedance: float = DEFAULT_EXCEEDANCE, draws: int = COMPARE_DRAWS,
                  seed: int = 0, gof_draws: int = GOF_DRAWS) -> dict:
    """Is B's probable worst case significantly different from A's? meas_a/meas_b are
    stored measurements (dicts) or Pwcet results. The difference B - A of the levels at
    the same per-cycle exceedance gets a parametric-bootstrap interval (each side
    redrawn from its own fit and refitted, the draws paired at random); the call is
    'worse' when the whole interval is above 0, 'better' when below, otherwise 'no
    significant difference'. p_value is the two-sided bootstrap p-value of no difference
    (twice the share of bootstrap differences on the far side of 0)."""
    ra, rb = (_as_pwcet(m, exceedance, gof_draws) for m in (meas_a, meas_b))
    out = {"a": ra.to_json(), "b": rb.to_json(), "exceedance": exceedance, "confidence": CONFIDENCE,
           "method": f"parametric bootstrap of the difference, {draws} draws a side"}
    if not (ra.applicable and rb.applicable):
        which = [f"{side}: {r.reason}" for side, r in (("A", ra), ("B", rb)) if not r.applicable]
        out.update(call="not applicable", verdict="not applicable", reason="; ".join(which), difference_ns=None, ci_low_ns=None,
                   ci_high_ns=None, p_value=None)
        return out
    rng = np.random.default_rng(seed)
    la, lb = _bootstrap_levels(ra, draws, rng), _bootstrap_levels(rb, draws, rng)
    n = min(len(la), len(lb))
    diff = lb[:n] - la[:n]
    alpha = 1 - CONFIDENCE
    # percentile interval of the bootstrap differences: the levels' sampling distributions
    # are skewed to the right (as the profile-likelihood intervals are), which a reflected
    # interval would turn the wrong way
    d0 = rb.level_ns - ra.level_ns
    low, high = np.quantile(diff, [alpha / 2, 1 - alpha / 2])
    # two-sided p-value of "no difference": how much of the bootstrap distribution lies
    # on the other side of 0
    p = float(min(1.0, 2 * (1 + min(np.sum(diff <= 0), np.sum(diff >= 0))) / (1 + n)))
    call = "worse" if low > 0 else ("better" if high < 0 else "no significant difference")
    # "verdict": the same, its name before version 2 of compare --json (docs/compare.md)
    out.update(call=call, verdict=call, reason=None, difference_ns=float(d0), ci_low_ns=float(low),
               ci_high_ns=float(high), p_value=p)
    return out


def _as_pwcet(m, exceedance: float, gof_draws: int) -> Pwcet:
    if isinstance(m, Pwcet):
        return m
    rs = measurement_pwcet(m, exceedance, gof_draws=gof_draws)
    if not rs:
        raise UserError(f"measurement {as_measurement(m).name or '?'} stored no per-window maxima (ti_window_max), "
                        "so it has no probable worst case.")
    return rs[0]


# ---- the return-level plot -----------------------------------------------------------

def plot_data(r: Pwcet, band_points: int = 5) -> dict:
    """What a return-level plot of r shows, in µs against the return period in cycles:
    observed block maxima at their empirical return periods (Weibull plotting positions
    i/(n+1)), the fitted curve, its 95 % profile-likelihood band at band_points periods,
    and the level at the chosen exceedance with its interval."""
    x = np.sort(np.asarray(r.maxima_ns, dtype=float))
    n, m = len(x), r.block_cycles
    F = np.arange(1, n + 1) / (n + 1)
    observed = [(float(m / (1 - f)), float(v) / 1000) for f, v in zip(F, x)]
    out = {"observed": observed, "curve": [], "band": [], "mark": None}
    if r.fit is None or not r.applicable:
        return out
    q_target = r.block_exceedance
    qs = np.geomspace(0.5, q_target, 40)
    out["curve"] = [(float(m / q), float(r.fit.isf(q)) / 1000) for q in qs]
    for q in np.geomspace(0.5, q_target, band_points):
        _, lo, hi = return_level(r.fit, x, float(q))
        out["band"].append((float(m / q), lo / 1000, math.inf if hi is None else hi / 1000))
    out["mark"] = (1 / r.exceedance, r.level_ns / 1000, r.ci_low_ns / 1000,
                   None if r.ci_high_ns is None else r.ci_high_ns / 1000)
    return out
