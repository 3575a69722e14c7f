"""The report's plots drawn from real engine documents (tests/data/report, a latency job
with a 2 s host stall and a window without a wake-up; tests/data/golden): count axes
labelled at whole numbers, a line broken where a window holds no value, the trend's time
unit chosen by its span, the deadline's label inside the bar chart, and every plot drawn
for a wide and a narrow screen. Each check is first shown to fail on the way it was
drawn before (the broken method)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from rtgauge.report.html.latency import equation_bar, histogram_plot, window_plot
from rtgauge.report.html.trend import render_trend, time_unit
from rtgauge.report.svg import NARROW, Axis, Plot, Series
from rtgauge.store import open_store
from test_report_builders import job, store_run

DATA = Path(__file__).parent / "data"


def stored(tmp_path: Path, *names: str):
    """Runs of the real documents named (path under tests/data), one run per name."""
    url = f"sqlite:///{tmp_path / 'r.db'}"
    facts = json.loads((DATA / "facts" / "this-vm.json").read_text())
    ids = []
    for name in names:
        path = DATA / name
        doc = json.loads(path.read_text())
        ids.append(store_run(url, [(job(path.stem, doc["test"], path.stem.split("@", 1)[1]), doc)], system=facts))
    with open_store(url) as s:
        return [s.get_run(i) for i in ids]


@pytest.fixture
def stall(tmp_path):
    (run,) = stored(tmp_path, "report/latency-stall@idle.json")
    return run.measurements[0]


def wide(svg: str) -> str:
    return re.search(r"<span class='pw'>(.*?)</span>", svg, re.S).group(1)


def narrow(svg: str) -> str:
    return re.search(r"<span class='pn'>(.*?)</span>", svg, re.S).group(1)


def y_tick_labels(svg: str) -> list[str]:
    return re.findall(r"<text x='57' y='[\d.]+' text-anchor='end' font-size='11'>([^<]+)</text>", svg)


def test_count_axis_labels_whole_numbers_only(stall):
    labels = y_tick_labels(wide(histogram_plot(stall)))
    assert labels and labels[0] == "1" and all(re.fullmatch(r"\d+k?|\d+M", t) for t in labels), labels
    # the same counts on an axis that is not told they are counts: fractions of a wake-up
    counts = [(x, c) for x, c in ((1, 0.003), (2, 5), (3, 2000))]
    broken = Plot("t", Axis("x"), Axis("count", log=True), [Series("s", counts)]).draw()
    assert "0.001" in y_tick_labels(broken)
    fixed = Plot("t", Axis("x"), Axis("count", log=True, integer=True), [Series("s", counts)]).draw()
    assert y_tick_labels(fixed)[0] == "1" and "0.001" not in fixed
    # a linear count axis steps by whole numbers
    small = Plot("t", Axis("x"), Axis("count", integer=True), [Series("s", [(0, 0), (1, 3)])]).draw()
    assert all(float(t) == int(float(t)) for t in y_tick_labels(small)), y_tick_labels(small)


def test_the_window_line_breaks_where_a_window_holds_no_wake_up(stall):
    series = stall.metrics["ti_window_max#1"].series
    assert series[14] is None and series[13] > 1.9e9           # the stall, then a window without a wake-up
    svg = wide(window_plot(stall))
    cpu1 = [p for p in re.findall(r"<polyline[^>]*stroke='#0d47a1'[^>]*points='([^']*)'", svg)]
    assert len(cpu1) == 2, "CPU 1's line is two pieces, either side of the empty window"
    xs = [[float(pt.split(",")[0]) for pt in part.split()] for part in cpu1]
    assert len(xs[0]) == 14 and len(xs[1]) == 5
    # drawn as before (no gap given), the line crosses the empty window
    s = Series("CPU 1", [((i + 1) * 1.0, v / 1000) for i, v in enumerate(series) if v is not None])
    joined = Plot("t", Axis("s"), Axis("µs", log=True), [s]).draw()
    assert joined.count("<polyline") == 1


def test_time_unit_by_span():
    assert time_unit(45) == ("seconds", 1)
    assert time_unit(50 * 60) == ("minutes", 60)
    assert time_unit(5 * 3600) == ("hours", 3600)
    assert time_unit(12 * 86400) == ("days", 86400)


def test_trend_of_runs_ninety_minutes_apart_reads_minutes(tmp_path):
    runs = stored(tmp_path, "golden/run-a/latency@idle.json", "golden/run-b/latency@idle.json")
    t0 = datetime(2026, 11, 28, 1, 0, tzinfo=timezone.utc)
    runs = [replace(runs[0], started_at=t0.isoformat()),
            replace(runs[1], started_at=(t0 + timedelta(minutes=90)).isoformat())]
    html = render_trend(runs)
    assert "minutes since the first run" in html and "days since" not in html
    ticks = re.findall(r"text-anchor='middle' font-size='11'>([^<]+)</text>", wide(html))
    assert "90" in ticks or "100" in ticks, ticks


def test_the_deadline_label_is_never_cut(stall):
    """The stall's worst cycle is 2,000 times the period: the deadline line sits at the
    bar chart's left edge, and its label reads rightwards from it."""
    for svg in (wide(equation_bar(stall)), narrow(equation_bar(stall))):
        m = re.search(r"<text x='([\d.]+)' y='[\d.]+' text-anchor='(\w+)' font-size='11' fill='#b71c1c'>"
                      r"(deadline T = [^<]+)</text>", svg)
        x, anchor, text = float(m.group(1)), m.group(2), m.group(3)
        width = float(re.search(r"width='(\d+)'", svg).group(1))
        left, right = (x - 6.2 * len(text), x) if anchor == "end" else (x, x + 6.2 * len(text))
        assert left >= 0 and right <= width, (anchor, x, text)


def test_every_plot_has_a_narrow_drawing_with_its_legend_below(stall):
    svg = histogram_plot(stall)
    n = narrow(svg)
    assert f"width='{NARROW}'" in n and "viewBox='0 0 340 " in n
    # every label of the wide drawing is in the narrow one: the legend moved, nothing was dropped
    def texts(s: str) -> set[str]:
        return set(re.findall(r"font-size='1[12]'[^>]*>([^<>]+)</text>", s))     # all but the title
    assert texts(wide(svg)) and texts(wide(svg)) <= texts(n)
    legend_y = [float(y) for y in re.findall(r"<text x='\d+' y='([\d.]+)' font-size='11' fill=", n)]
    axis_y = float(re.search(r"<text x='[\d.]+' y='([\d.]+)' text-anchor='middle' font-size='12'>latency Ti", n).group(1))
    assert legend_y and min(legend_y) > axis_y, "the legend sits below the x axis' label"
