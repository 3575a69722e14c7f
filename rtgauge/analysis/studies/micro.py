"""Microbenchmarks of one or more runs as one table: a row per measured figure
(test, metric, variant, condition), avg and max per system, and the published
figures for the same test beside them; and the behaviour verdicts."""

from __future__ import annotations

from dataclasses import dataclass, field

from rtgauge.records import Measurement, Run
from rtgauge.catalogue import MICRO_KINDS, catalogue
from rtgauge.analysis.studies.published import published_for
from rtgauge.analysis.studies.rhealstone import rhealstone_figures
from rtgauge.published import Published

# Options that make two runs of one test measure different things: they name the row.
VARIANT_PARAMS = ("threads", "primitive", "transport", "scenario", "waiters", "lock", "mode", "contention", "event")


@dataclass
class MicroRow:
    key: tuple
    test: str
    metric: str
    variant: str
    condition: str
    params: dict
    cells: dict = field(default_factory=dict)        # run id -> {"avg", "max", "count", "unit", "p99"}
    published: list[Published] = field(default_factory=list)

    @property
    def label(self) -> str:
        name = self.test if self.metric in (self.test, "") else f"{self.test} {self.metric}"
        return f"{name} [{self.variant}]" if self.variant else name


def is_micro(m: Measurement) -> bool:
    """A microbenchmark of the engine (kind micro-performance or micro-behaviour) that ran."""
    return m.tool == "engine" and bool(m.ok) and catalogue().kind_of(m.test) in MICRO_KINDS


def variant_of(params: dict) -> str:
    return ", ".join(f"{k}={params[k]}" for k in VARIANT_PARAMS if params.get(k) not in (None, "", False))


def micro_rows(runs: list[Run]) -> list[MicroRow]:
    rows: dict[tuple, MicroRow] = {}
    for run in runs:
        for m in run.measurements:
            if not is_micro(m):
                continue
            variant = variant_of(m.params)
            for name, metric in m.metrics.items():
                if "#" in name or not metric.is_distribution or not metric.count:
                    continue
                condition = m.condition or ""
                key = (m.test, name, variant, condition)
                row = rows.get(key)
                if row is None:
                    row = rows[key] = MicroRow(key, m.test, name, variant, condition, m.params,
                                               published=published_for(m.test, name, m.params, m.condition or "idle"))
                cell = {"avg": metric.avg, "max": metric.max, "p99": metric.p99,
                        "count": metric.count, "unit": metric.unit or "ns", "rounds": 1}
                row.cells[run.id] = pool_rounds(row.cells.get(run.id), cell)
    return sorted(rows.values(), key=lambda r: r.key)


def pool_rounds(old: dict | None, new: dict) -> dict:
    """The rounds of one figure (a job with rounds = N) as one cell: the average over all
    samples, the true maximum, the mean of the rounds' p99."""
    if old is None:
        return new
    try:
        n = old["count"] + new["count"]
        k = old["rounds"] + 1
        return {"avg": (old["avg"] * old["count"] + new["avg"] * new["count"]) / n,
                "max": max(old["max"], new["max"]), "p99": (old["p99"] * old["rounds"] + new["p99"]) / k,
                "count": n, "unit": old["unit"], "rounds": k}
    except (TypeError, ZeroDivisionError):
        return new


def micro_scalars(run: Run) -> list[tuple[str, str, object, str]]:
    """(measurement, metric, value, unit) of the microbenchmarks' scalar figures
    (breakdown utilisation, counts), excluding per-thread ones."""
    out = []
    for m in run.measurements:
        if not is_micro(m):
            continue
        for name, metric in m.metrics.items():
            if "#" not in name and metric.has("value") and (metric.kind or "scalar") == "scalar":
                out.append((m.label, name, metric.value, metric.unit or ""))
    return out


def verdict_rows(runs: list[Run]) -> list[dict]:
    """Behaviour verdicts: one row per (test, verdict, variant), a cell per run. The tire
    sweep's probes are left out: their verdicts are the maps' cells, and a row would
    show whichever probe came last."""
    rows: dict[tuple, dict] = {}
    for run in runs:
        for m in run.measurements:
            if m.is_sweep_probe:
                continue
            for name, v in m.verdicts.items():
                key = (m.test or m.name, name, variant_of(m.params), m.condition or "")
                row = rows.setdefault(key, {"test": key[0], "verdict": name, "variant": key[2],
                                            "condition": key[3], "cells": {}})
                row["cells"][run.id] = {"pass": v.passed, "detail": v.detail or ""}
    return [rows[k] for k in sorted(rows)]


def rhealstone(run: Run) -> list[str]:
    """One line per load condition with the Rhealstone figures, from
    rtgauge.analysis.studies.rhealstone (empty when its figures are missing). Another
    module's failure must not take the whole report down: it becomes a line."""
    try:
        figures = rhealstone_figures(run)
    except Exception as e:  # noqa: BLE001 - reported in the report, not raised
        return [f"could not be computed ({type(e).__name__}: {e})"]
    lines = []
    for f in figures:
        if len(f.get("components") or {}) < 2:
            continue   # one component (the latency test alone) is not a Rhealstone figure
        def fig(v):
            return "–" if v is None else f"{v:,.0f}"
        missing = f.get("missing") or []
        lines.append(f"{f.get('condition') or 'all'}: {fig(f.get('rhealstones_avg'))} Rhealstones/s from averages, "
                     f"{fig(f.get('rhealstones_worst'))} from worst cases"
                     + (f" (incomplete: no {', '.join(missing)})" if missing else " (all six components)"))
    return lines
