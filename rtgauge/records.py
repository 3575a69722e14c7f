"""Typed records of what flows between the store, analysis and the report: a run, its
measurements and their metrics. Small frozen dataclasses the store returns (it reads
its rows into them once, `from_dict`) and that write back the same dict (`to_dict`,
the export's and `show --json`'s form), in the
manner of pyperf's _bench.py: the stored documents and the JSON contract do not change,
the code that reads them says what it reads (`m.metric("ti").max`, `run.system_label`)
instead of chains of `.get(`.

A key the record does not name is kept in `extra` and written back, so `to_dict` gives
back what `from_dict` was given (tests/test_records.py checks it on real engine runs)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from rtgauge.defaults import TIRE_PERIOD_MS

STATS = ("min", "avg", "stddev", "p50", "p90", "p99", "p999", "p9999", "max")
DISTRIBUTION, SCALAR, SERIES = "distribution", "scalar", "series"


def _mapping(value) -> dict:
    return value if isinstance(value, dict) else {}


def _in_order(out: dict, order: tuple) -> dict:
    """OUT with its keys in the order the record was read in (ORDER), any others after:
    the JSON a record writes back is the stored one, key for key (tests/test_golden.py)."""
    if not order:
        return out
    return {**{k: out[k] for k in order if k in out}, **{k: v for k, v in out.items() if k not in order}}


# The formats rtgauge writes, declared once beside the records they carry: an engine
# document's "schema" (docs/engine.md: the engine writes the same number) and an export's
# "rtgauge_export" (docs/store.md, store/validate.EXPORT_SCHEMA). A change of shape takes
# a new number.
DOCUMENT_SCHEMA = 1
EXPORT_FORMAT = 1


def engine_document(test: str, *, ok, tool: str | None = None, interrupted: bool = False, error: str | None = None,
                    params: dict | None = None, env: dict | None = None, metrics: dict | None = None,
                    verdicts: dict | None = None, **more) -> dict:
    """A document of the engine's contract written in Python: another tool's result
    (cyclictest, rtla, stress-ng), a job that failed before the engine said anything, a
    sweep's summary. The one constructor: the engine's keys in the engine's order, an
    error only when there is one, then MORE (a sweep's own keys)."""
    doc: dict = {"schema": DOCUMENT_SCHEMA, "test": test, **({"tool": tool} if tool is not None else {}),
                 "ok": ok, "interrupted": interrupted, **({"error": error} if error is not None else {})}
    doc.update(params=params or {}, env=env or {}, metrics=metrics or {}, verdicts=verdicts or {})
    doc.update(more)
    return doc


# The largest count of events a measurement can hold: 31 years of a 1 kHz loop. A stored
# figure beyond it (a crafted bin count of 2**62, misses of 1e300) is not a measurement;
# the reader drops it, so no statistic ever runs on it (binom.ppf searched for hours).
COUNT_MAX = 10**12
VALUE_MAX = 2**63


def bounded_count(value):
    """A count the statistics may use (an integer 0..COUNT_MAX), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and (value != value or not value.is_integer()):
        return None
    return int(value) if 0 <= value <= COUNT_MAX else None


def _bounded_value(value):
    """A scalar's value: numbers within 64 bits and finite, anything else as it is."""
    if isinstance(value, float) and (value != value or abs(value) >= VALUE_MAX):
        return None
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= VALUE_MAX:
        return None
    return value


def _bounded_histogram(histogram):
    """The histogram if every bin is [lo, hi, count] with a count the statistics may use."""
    bins = _mapping(histogram).get("bins")
    if bins is None:
        return histogram
    if not isinstance(bins, list) or not all(isinstance(b, list) and len(b) >= 3 and bounded_count(b[2]) is not None
                                             for b in bins) or sum(int(b[2]) for b in bins) > COUNT_MAX:
        return None
    return histogram


@dataclass(frozen=True)
class Metric:
    """One metric of the engine's contract: a distribution (count and statistics, ns,
    with its log-linear `histogram` and optional `linear` one), a scalar (`value`) or a
    series (a per-window maximum: `window_ns`, `start_ns` and the values)."""
    kind: str | None = None             # as stored; None when the dict did not say (readers default it)
    unit: str | None = None
    value: Any = None
    count: int | None = None
    min: float | None = None
    avg: float | None = None
    stddev: float | None = None
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    p999: float | None = None
    p9999: float | None = None
    max: float | None = None
    histogram: dict | None = None
    linear: dict | None = None
    series: list | None = None          # a series' values (its "max" key in the contract)
    window_ns: int | None = None        # a series' window
    start_ns: int | None = None
    nulls: tuple = ()                   # known keys the dict gave as null (kept apart from absent ones)
    extra: dict = field(default_factory=dict)
    # value, count or histogram as stored where the reader dropped them (beyond COUNT_MAX,
    # VALUE_MAX): no statistic reads them, to_dict gives them back as they were stored
    unbounded: dict = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: dict) -> Metric:
        d = _mapping(d)
        kind = d.get("kind")
        known = {"kind", "unit", "value", "count", "histogram", "linear", "window_ns", "start_ns", *STATS}
        series = None
        stats = {k: d.get(k) for k in STATS}
        if isinstance(stats["max"], list):           # a series keeps its values under "max"
            series, stats["max"] = stats["max"], None
        count = d.get("count")
        bounded = {"value": _bounded_value(d.get("value")), "count": None if count is None else bounded_count(count),
                   "histogram": _bounded_histogram(d.get("histogram"))}
        return cls(kind=kind, unit=d.get("unit"), linear=d.get("linear"), series=series,
                   window_ns=d.get("window_ns"), start_ns=d.get("start_ns"),
                   nulls=tuple(k for k in known if k in d and d[k] is None),
                   extra={k: v for k, v in d.items() if k not in known},
                   unbounded={k: d[k] for k, v in bounded.items() if v is None and d.get(k) is not None},
                   **bounded, **stats)

    def to_dict(self, *, with_kind: bool = True) -> dict:
        out: dict = {"kind": self.kind} if with_kind and self.kind is not None else {}
        for key in ("unit", "value", "count", *STATS, "histogram", "linear", "window_ns", "start_ns"):
            v = getattr(self, key)
            if v is None:
                v = self.unbounded.get(key)     # the stored figure, given back as it was stored
            if v is not None:
                out[key] = v
        if self.series is not None:
            out["max"] = self.series
        out.update({k: None for k in self.nulls if k not in out})
        out.update(self.extra)
        return out

    def has(self, key: str) -> bool:
        """Whether the stored metric names `key` (even as null), as `key in metric` did."""
        return key in self.nulls or (key == "max" and self.series is not None) or (
            hasattr(self, key) and getattr(self, key) is not None) or key in self.extra

    @property
    def is_distribution(self) -> bool:
        return (self.kind or DISTRIBUTION) == DISTRIBUTION

    @property
    def bins(self) -> list:
        """The log-linear histogram's bins, or []."""
        return _mapping(self.histogram).get("bins") or []


NO_METRIC = Metric(kind="absent")


@dataclass(frozen=True)
class Verdict:
    """A behaviour test's pass/fail and what it saw (docs/design.md, "One meaning a word")."""
    passed: bool
    detail: str | None = None

    @classmethod
    def from_dict(cls, d) -> Verdict:
        if not isinstance(d, dict):
            return cls(bool(d))
        return cls(bool(d.get("pass")), d.get("detail"))

    def to_dict(self) -> dict:
        return {"pass": self.passed, "detail": self.detail}


def _positive(value) -> float | None:
    """A period as stored: a finite number above 0, else None."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0
    return float(value) if ok else None


def stored_period_ns(test: str, params: dict, physics: dict | None = None) -> int | None:
    """The period of a document that does not carry env.period_ns, from the test's own
    parameter, ns: one written before the engine said it, or another tool's (cyclictest,
    rtla, stress-ng's cyclic). The one place the period is rebuilt (docs/engine.md):
    interval_us (latency and the tools that cross-check it), period_us (spin, hil,
    preempt --event timer), period_ms (tire: else the engine's record in PHYSICS, else
    its mode's default; real-fast has none). None where the test ran no period."""
    if test == "hartstone" or (test == "preempt" and params.get("event") != "timer"):
        return None
    if test == "tire":
        mode = str(params.get("mode") or "realtime")
        ms = None if mode == "realfast" else (
            _positive(params.get("period_ms")) or _positive(_mapping(physics).get("period_ms"))
            or TIRE_PERIOD_MS.get(mode))
        return None if ms is None else round(ms * 1e6)
    us = _positive(params.get("interval_us")) or _positive(params.get("period_us"))
    return None if us is None else round(us * 1000)


def _index(value) -> int | None:
    """A round's or segment's index (1..N), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


@dataclass(frozen=True)
class Measurement:
    """One stored job: the engine's (or a cross-check tool's) result and how it ran.
    The name says the job (`latency@idle`, `latency@idle/cyclictest`); a job measured
    in rounds, or in segments of one long load, is one measurement a round or segment,
    each with the job's name and its `round` / `segment` (1..N)."""
    name: str
    tool: str = "engine"
    test: str = ""
    condition: str | None = None
    cross_check: bool = False           # stored as "reference" (docs/store.md)
    round: int | None = None            # 1..N when the job ran in rounds (run --rounds)
    segment: int | None = None          # 1..N when one long load's job was stored in segments
    ok: bool | None = None              # as stored (None: not said)
    interrupted: bool = False
    error: str | None = None
    duration_s: float | None = None
    params: dict = field(default_factory=dict)
    env: dict = field(default_factory=dict)
    load: dict = field(default_factory=dict)
    metrics: dict[str, Metric] = field(default_factory=dict)
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    extra: dict = field(default_factory=dict)
    order: tuple = field(default=(), compare=False)   # the dict's keys as read (to_dict keeps them)

    KEYS = ("name", "tool", "test", "condition", "reference", "round", "segment", "ok", "interrupted", "error",
            "duration_s", "params", "env", "load", "metrics", "verdicts")

    @classmethod
    def from_dict(cls, d: dict) -> Measurement:
        return cls(
            name=d.get("name") or "", tool=d.get("tool") or "engine", test=d.get("test") or "",
            condition=d.get("condition"), cross_check=bool(d.get("reference")),
            round=_index(d.get("round")), segment=_index(d.get("segment")), ok=d.get("ok"),
            interrupted=bool(d.get("interrupted")), error=d.get("error"), duration_s=d.get("duration_s"),
            params=_mapping(d.get("params")), env=_mapping(d.get("env")), load=_mapping(d.get("load")),
            metrics={k: Metric.from_dict(v) for k, v in _mapping(d.get("metrics")).items()},
            verdicts={k: Verdict.from_dict(v) for k, v in _mapping(d.get("verdicts")).items()},
            extra={k: v for k, v in d.items() if k not in cls.KEYS}, order=tuple(d))

    def to_dict(self) -> dict:
        # round and segment are written when the job had them (a job measured once has neither)
        fields = {k: v for k, v in (("round", self.round), ("segment", self.segment)) if v is not None or k in self.order}
        return _in_order({"name": self.name, "tool": self.tool, "test": self.test, "condition": self.condition,
                          "reference": self.cross_check, **fields, "ok": self.ok, "interrupted": self.interrupted,
                          "error": self.error, "duration_s": self.duration_s, "params": self.params,
                          "env": self.env, "load": self.load,
                          "metrics": {k: m.to_dict() for k, m in self.metrics.items()},
                          "verdicts": {k: v.to_dict() for k, v in self.verdicts.items()}, **self.extra}, self.order)

    def metric(self, name: str) -> Metric:
        """The metric, or an empty one (every field None) when the job did not emit it."""
        return self.metrics.get(name, NO_METRIC)

    def scalar(self, name: str):
        return self.metric(name).value

    def series(self, name: str) -> list | None:
        """A series metric's values, one a window in time order (its "max" key in the
        contract: the window maxima `ti_window_max`, the window counts `window_cycles`,
        `ti_window_sum`, `window_misses`, `window_skipped`, docs/engine.md), or None when
        the job did not store NAME as a series."""
        values = self.metric(name).series
        return values if isinstance(values, list) else None

    def param(self, name: str, default=None):
        v = self.params.get(name)
        return default if v is None else v

    @property
    def period_ns(self) -> int | None:
        """The period the job's cycles were paced at, ns, or None where it had none
        (a behaviour test, a microbenchmark, hartstone's own task periods, tire's
        real-fast). The cycle driver says it (env.period_ns); a document stored before
        it did, or another tool's, gives it by its parameters (`stored_period_ns`).
        Every reader of a period reads it here."""
        given = _positive(self.env.get("period_ns"))
        if given is not None:
            return round(given)
        return stored_period_ns(self.test, self.params, _mapping(self.extra.get("document")).get("physics"))

    @property
    def period_us(self) -> float | None:
        """period_ns in µs, for the text that states it in µs (whole when it is)."""
        ns = self.period_ns
        return None if ns is None else ns // 1000 if ns % 1000 == 0 else ns / 1000

    @property
    def policy(self) -> str | None:
        """The scheduling policy the job ran with (as the engine reports it)."""
        return self.env.get("policy")

    @property
    def fallback(self) -> bool:
        """True when the measurement ran without the real-time policy it asked for."""
        if self.env.get("fallback"):
            return True
        asked, got = self.params.get("policy"), self.policy
        return bool(asked in ("fifo", "rr") and got is not None and got != asked)

    @property
    def stopped_early(self) -> str | None:
        """Why the measurement holds less than it asked for, or None: the engine's watchdog
        stopped it (env.incomplete: "incomplete: 938 of 3,000 measured, the watchdog's 1 s")
        or a signal did ("interrupted"). Decided once for every reader (docs/engine.md)."""
        inc = self.env.get("incomplete")
        if isinstance(inc, dict):
            asked, got, limit = inc.get("asked"), inc.get("measured"), inc.get("timeout_s")
            counts = (f"{got:,} of {asked:,} measured" if isinstance(asked, int) and isinstance(got, int)
                      else "not all measured")
            return f"incomplete: {counts}, stopped by the watchdog" + (
                f" at {limit:g} s" if isinstance(limit, (int, float)) else "")
        return "interrupted" if self.interrupted else None

    @property
    def others_load(self) -> dict:
        """What others ran beside an idle measurement (env.others_load, trace/counters.py),
        or {} when it was not looked at (another condition, an older or imported run)."""
        return _mapping(self.env.get("others_load"))

    @property
    def not_idle(self) -> bool:
        """True when the condition says idle and others kept the measured CPUs busy
        beyond the threshold during the measurement (decided and stored when measured)."""
        return self.condition == "idle" and self.others_load.get("idle") is False

    @property
    def is_sweep_probe(self) -> bool:
        """One probe of the tire sweep (tire-sweep/MODE/POLICY/Kt/N, hundreds in a full
        study), stored as its own measurement; the sweep's result is named tire-sweep.
        Tables that list measurements count the probes rather than list them."""
        return self.name.startswith("tire-sweep/")

    @property
    def label(self) -> str:
        """The name with its round and segment, where a table lists measurements:
        `latency@idle`, `latency@idle (round 2)`, `latency@cpu (segment 3)`."""
        tags = [f"round {self.round}" if self.round else "", f"segment {self.segment}" if self.segment else ""]
        tags = [t for t in tags if t]
        return f"{self.name} ({', '.join(tags)})" if tags else self.name

    @property
    def pooled_name(self) -> str:
        """What its rounds share, where rounds are pooled (compare, the verdict, the
        trend): the job's name, with its segment when it has one (a long load's
        segments are parts of one measurement, not repeats of it)."""
        return f"{self.name} (segment {self.segment})" if self.segment else self.name

    @property
    def key(self) -> tuple:
        """What tells a run's measurements apart: the name, round and segment."""
        return (self.name, self.round, self.segment)


@dataclass(frozen=True)
class Run:
    """One stored run: its system and its measurements, in the order they ran."""
    id: int | None
    profile: str | None = None
    status: str | None = None
    started_at: str | None = None
    note: str | None = None
    argv: list = field(default_factory=list)
    system: dict = field(default_factory=dict)
    doctor: list = field(default_factory=list)    # the doctor's checks when the run began
    measurements: tuple[Measurement, ...] = ()
    extra: dict = field(default_factory=dict)
    order: tuple = field(default=(), compare=False)   # the dict's keys as read (to_dict keeps them)

    KEYS = ("id", "profile", "status", "started_at", "note", "argv", "system", "doctor", "measurements")

    @classmethod
    def from_dict(cls, d: dict, measurements: list[Measurement] | None = None) -> Run:
        """The run a dict describes; its measurements are read from the dict's, or are
        MEASUREMENTS when the caller (the store) has them as records already."""
        if measurements is None:
            measurements = [Measurement.from_dict(m) for m in d.get("measurements") or []]
        return cls(id=d.get("id"), profile=d.get("profile"), status=d.get("status"), started_at=d.get("started_at"),
                   note=d.get("note"), argv=list(d.get("argv") or []), system=_mapping(d.get("system")),
                   doctor=list(d.get("doctor") or []), measurements=tuple(measurements),
                   extra={k: v for k, v in d.items() if k not in cls.KEYS},
                   order=tuple(d) + (() if "measurements" in d else ("measurements",)))

    def to_dict(self) -> dict:
        return _in_order({"id": self.id, "profile": self.profile, "status": self.status,
                          "started_at": self.started_at, "note": self.note, "argv": self.argv,
                          "system": self.system, "doctor": self.doctor,
                          "measurements": [m.to_dict() for m in self.measurements], **self.extra}, self.order)

    @property
    def hostname(self) -> str:
        return self.system.get("hostname") or self.extra.get("hostname") or "?"

    @property
    def finished_at(self) -> str | None:
        return self.extra.get("finished_at")

    @property
    def origin(self) -> dict | None:
        """Where an imported run came from (format, file, identity), else None."""
        origin = self.extra.get("origin")
        return origin if isinstance(origin, dict) else None

    @property
    def kernel_release(self) -> str:
        return self.system.get("kernel_release") or self.extra.get("kernel_release") or "?"

    @property
    def label(self) -> str:
        """A short name for the run's system in column headers: host, kernel, run id."""
        return f"{self.hostname} {self.kernel_release} (run {self.id})"
