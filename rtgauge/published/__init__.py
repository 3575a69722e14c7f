"""The published figures (published.csv) and the mapping from their test names to rtgauge's
measurements, so a report can put a measured figure beside the published one.

A published value may be a bound ("<0.1", ">1000000"); it is kept as text for
display and as a number (the bound) with `bound` set to "<" or ">"."""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from pathlib import Path

CSV_PATH = Path(__file__).resolve().parent / "published.csv"
UNIT_NS = {"ns": 1.0, "us": 1000.0, "ms": 1e6, "s": 1e9}


@dataclass(frozen=True)
class Published:
    source: str
    platform: str
    system: str
    condition: str        # idle | loaded | cpu-stressed
    test: str             # the publication's test name
    statistic: str        # min | avg | max | stddev | value
    text: str             # the value as published ("<0.1", "14000")
    value: float | None   # the number (the bound for "<x"/">x")
    bound: str            # "", "<" or ">"
    unit: str
    note: str

    @property
    def ns(self) -> float | None:
        """The value in nanoseconds when it is a time, else None."""
        scale = UNIT_NS.get(self.unit)
        return None if scale is None or self.value is None else self.value * scale

    @property
    def label(self) -> str:
        return f"{self.system} ({self.platform.split(' ')[0]} {self.source.split('-')[-1]})"


def parse_value(text: str) -> tuple[float | None, str]:
    text = text.strip()
    bound = text[0] if text[:1] in "<>" else ""
    try:
        return float(text.lstrip("<>")), bound
    except ValueError:
        return None, bound


@functools.lru_cache(maxsize=1)
def load_published(path: str | None = None) -> tuple[Published, ...]:
    rows = []
    with open(path or CSV_PATH, newline="") as f:
        for r in csv.DictReader(f):
            value, bound = parse_value(r["value"])
            rows.append(Published(r["source"], r["platform"], r["system"], r["condition"], r["test"],
                                  r["statistic"], r["value"].strip(), value, bound, r["unit"], r.get("note") or ""))
    return tuple(rows)


# Published test name -> how rtgauge measures the same thing: the method table of
# rtgauge/analysis/studies/published.py (METHODS, and published_for there). docs/report.md
# lists the mapping for readers.


def tire_published() -> list[Published]:
    return [p for p in load_published() if p.test.startswith("tire_")]
