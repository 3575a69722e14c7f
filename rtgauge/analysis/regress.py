"""Regressions between runs: every comparable figure of a baseline run and a
candidate, and whether the candidate is worse beyond noise.

Noise thresholds (docs/report.md explains them):
- averages (latency avg, microbenchmark avg, timestamp cost): worse when the
  candidate is more than 10 % higher AND the difference exceeds 3 combined standard
  errors (stddev/√count of each side) — a shift a repeated run would not produce;
- p99: more than 20 % higher; worst cases (max): more than 25 % higher, because a
  single worst sample of a short run varies a lot between runs;
- latency figures also need an absolute change above a floor (avg 1 µs, p99 5 µs,
  max 10 µs), below which timer and clock granularity dominate;
- missed deadlines: any increase from zero, or more than double;
- tire: a smaller largest-hard-real-time n is worse (grid values: any step down);
  a real-fast wall time more than 5 % longer is worse;
- verdicts: pass -> fail is worse.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from rtgauge.analysis import latency_row, latency_measurements, scalar
from rtgauge.analysis.micro import micro_rows, verdict_rows
from rtgauge.analysis.tire import headline_limits, tire_points

AVG_REL, AVG_SE = 0.10, 3.0
P99_REL, MAX_REL = 0.20, 0.25
FLOOR_NS = {"avg": 1000.0, "p99": 5000.0, "max": 10000.0}
WALL_REL = 0.05
UNITS = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9, "": 1.0, "%": 1.0}


@dataclass
class Figure:
    key: str          # stable id across runs
    family: str       # avg_latency, p99_latency, max_latency, misses, micro_avg, micro_max,
                      # tire_max_masses, wall_time, timestamp_cost, failed_verdicts
    label: str
    value: float | None
    unit: str
    higher_is_worse: bool = True
    stddev: float | None = None
    count: int | None = None


@dataclass
class Change:
    figure: Figure
    base: float | None
    value: float | None
    verdict: str      # "worse", "better", "same", "new", "gone"
    why: str

    @property
    def relative(self) -> float | None:
        if self.base in (None, 0) or self.value is None:
            return None
        return (self.value - self.base) / abs(self.base)


def figures(run: dict) -> dict[str, Figure]:
    out: dict[str, Figure] = {}

    def add(f: Figure):
        out[f.key] = f

    for m in latency_measurements(run):
        row = latency_row(m)
        ti = m["metrics"]["ti"]
        tag = f"{m['name']}"
        add(Figure(f"lat:{tag}:avg", "avg_latency", f"{tag} avg latency", ti.get("avg"), "ns",
                   stddev=ti.get("stddev"), count=ti.get("count")))
        add(Figure(f"lat:{tag}:p99", "p99_latency", f"{tag} p99 latency", ti.get("p99"), "ns"))
        add(Figure(f"lat:{tag}:max", "max_latency", f"{tag} max latency", ti.get("max"), "ns"))
        if row["misses"] is not None:
            add(Figure(f"lat:{tag}:misses", "misses", f"{tag} missed deadlines", row["misses"], "count"))
    for r in micro_rows([run]):
        cell = r.cells.get(run.get("id"))
        if not cell:
            continue
        tag = f"{r.label} ({r.condition})"
        dist = next((m["metrics"][r.metric] for m in run["measurements"] if m.get("test") == r.test
                     and r.metric in (m.get("metrics") or {})), {})
        add(Figure(f"micro:{tag}:avg", "micro_avg", f"{tag} avg", cell["avg"], cell["unit"],
                   stddev=dist.get("stddev"), count=cell["count"]))
        add(Figure(f"micro:{tag}:max", "micro_max", f"{tag} max", cell["max"], cell["unit"]))
    for lim in headline_limits(run):
        tag = f"tire {lim['solver']} {lim['policy']} threads={lim['threads']}"
        add(Figure(f"tire:{tag}", "tire_max_masses", f"{tag}: largest n at 100 Hz, zero misses",
                   lim["max_masses"] or 0, "masses", higher_is_worse=False))
    for p in tire_points(run):
        if p.mode == "realfast" and p.wall_s is not None:
            tag = f"tire real-fast {p.solver} {p.policy} threads={p.threads} n={p.masses}"
            add(Figure(f"wall:{tag}", "wall_time", f"{tag} wall time", p.wall_s, "s"))
    for m in run.get("measurements", []):
        v = scalar(m, "timestamp_monotonic")
        if v is not None:
            add(Figure("timestamp:monotonic", "timestamp_cost", "timestamp cost (CLOCK_MONOTONIC)", v, "ns"))
    failed = sum(1 for row in verdict_rows([run]) for c in row["cells"].values() if not c["pass"])
    for row in verdict_rows([run]):
        c = row["cells"].get(run.get("id"))
        tag = f"{row['test']} {row['verdict']}" + (f" [{row['variant']}]" if row["variant"] else "")
        add(Figure(f"verdict:{tag}:{row['condition']}", "verdict", f"verdict {tag} ({row['condition']})",
                   0.0 if c["pass"] else 1.0, "fail"))
    add(Figure("verdicts:failed", "failed_verdicts", "failed verdicts", failed, "count"))
    return out


def judge(f: Figure, base: Figure) -> tuple[str, str]:
    a, b = base.value, f.value
    if a is None or b is None:
        return "same", "not measured on both"
    sign = 1 if f.higher_is_worse else -1
    d = (b - a) * sign
    rel = d / abs(a) if a else (math.inf if d > 0 else 0.0)
    fam = f.family
    if fam == "verdict":
        return ("worse", "passed before, fails now") if b > a else (("better", "failed before, passes now") if b < a else ("same", ""))
    if fam in ("misses", "failed_verdicts"):
        if b > a and (a == 0 or b > 2 * a):
            return "worse", f"{a:g} → {b:g}"
        return ("better", f"{a:g} → {b:g}") if b < a else ("same", "")
    if fam == "tire_max_masses":
        return ("worse", f"{a:,.0f} → {b:,.0f} masses") if b < a else (("better", "") if b > a else ("same", ""))
    if fam == "wall_time":
        limit = WALL_REL
        return classify(rel, limit, f"±{limit:.0%}")
    if fam in ("avg_latency", "micro_avg", "timestamp_cost"):
        se = None
        if f.stddev is not None and base.stddev is not None and f.count and base.count:
            se = math.sqrt(f.stddev ** 2 / f.count + base.stddev ** 2 / base.count)
        floor = FLOOR_NS["avg"] if fam == "avg_latency" else 0.0
        noise = max(AVG_SE * se if se else 0.0, floor)
        if abs(d) <= noise:
            return "same", f"within noise ({noise:,.0f} ns)"
        return classify(rel, AVG_REL, f"±{AVG_REL:.0%} and > {AVG_SE:g} s.e.")
    if fam in ("p99_latency", "max_latency", "micro_max"):
        limit = P99_REL if fam == "p99_latency" else MAX_REL
        floor = FLOOR_NS["p99" if fam == "p99_latency" else "max"] if fam != "micro_max" else 0.0
        if abs(d) <= floor:
            return "same", f"within {floor / 1000:g} µs"
        return classify(rel, limit, f"±{limit:.0%}")
    return classify(rel, 0.10, "±10%")


def classify(rel: float, limit: float, text: str) -> tuple[str, str]:
    if rel > limit:
        return "worse", f"{rel:+.0%} (threshold {text})"
    if rel < -limit:
        return "better", f"{rel:+.0%}"
    return "same", f"{rel:+.0%} (threshold {text})"


def compare_runs(base: dict, cand: dict) -> list[Change]:
    fa, fb = figures(base), figures(cand)
    out = []
    for key, f in fb.items():
        if key not in fa:
            out.append(Change(f, None, f.value, "new", "only in the candidate"))
            continue
        verdict, why = judge(f, fa[key])
        out.append(Change(f, fa[key].value, f.value, verdict, why))
    for key, f in fa.items():
        if key not in fb:
            out.append(Change(f, f.value, None, "gone", "only in the baseline"))
    return out


# ---- --fail-on rules -------------------------------------------------------

FAMILIES = ("avg_latency", "p99_latency", "max_latency", "misses", "micro_avg", "micro_max",
            "tire_max_masses", "wall_time", "timestamp_cost", "failed_verdicts")
RULE = re.compile(r"^\s*([a-z_0-9]+)\s*([<>])\s*([+-]?)(\d+(?:\.\d+)?)\s*(%|ns|us|µs|ms|s)?\s*$")


@dataclass
class Rule:
    text: str
    family: str
    op: str
    signed: bool      # "+20%" / "-10%": a change from the baseline; "0": an absolute value
    amount: float
    unit: str

    def trips(self, c: Change) -> str | None:
        if c.figure.family != self.family or c.value is None:
            return None
        if not self.signed:
            v = c.value / (UNITS.get(self.unit, 1.0) if c.figure.unit == "ns" else 1.0)
            hit = v > self.amount if self.op == ">" else v < self.amount
            return f"{c.figure.label} = {c.value:g} {c.figure.unit}" if hit else None
        if c.base is None:
            return None
        if self.unit == "%":
            if c.base == 0:
                change = math.inf if c.value > 0 else (-math.inf if c.value < 0 else 0.0)
            else:
                change = (c.value - c.base) / abs(c.base) * 100
        else:
            scale = UNITS.get(self.unit, 1.0) if c.figure.unit == "ns" else 1.0
            change = (c.value - c.base) / scale
        hit = change > self.amount if self.op == ">" else change < self.amount
        return (f"{c.figure.label}: {c.base:g} → {c.value:g} {c.figure.unit} ({change:+.1f}"
                f"{self.unit or ''})") if hit else None


def parse_rule(text: str) -> Rule:
    from rtgauge.errors import UserError

    m = RULE.match(text)
    if not m or m.group(1) not in FAMILIES:
        raise UserError(f"--fail-on '{text}' is not a rule; write FIGURE>CHANGE such as 'max_latency>+20%', "
                        f"'avg_latency>+5us', 'misses>0' or 'tire_max_masses<-10%', with FIGURE one of "
                        f"{', '.join(FAMILIES)}.")
    family, op, sign, amount, unit = m.groups()
    amount = float(amount) * (-1 if sign == "-" else 1)
    unit = "us" if unit == "µs" else (unit or "")
    if unit == "%" and not sign:
        raise UserError(f"--fail-on '{text}': a percentage is a change from the baseline; write it with a sign, "
                        f"e.g. '{family}{op}+{m.group(4)}%'.")
    return Rule(text, family, op, bool(sign), amount, unit)
