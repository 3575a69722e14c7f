"""`rtgauge show` of a run with a tire sweep, as a full study stores it: a small real
sweep (the engine at SCHED_FIFO, 10 ms, 1 thread, three sizes, real-fast curves) and a
microbenchmark. The probes (hundreds in the full study, each 8 stacked lines at 80
columns before) are counted in one line, never listed; the hard real-time limits sit
beside the published ones, the real-fast wall times and the microbenchmarks' figures
are shown; the probes' host stalls are summed up in one line, not one a probe."""

from __future__ import annotations

import json

import pytest

from conftest import cli, needs_root

pytestmark = pytest.mark.shared

PROFILE = """name = "tiny-study"
[settings]
warmup_s = 0.0
[[jobs]]
name = "preemption"
test = "preempt"
[jobs.options]
event = "timer"
iterations = 200
[tire]
threads = [1]
policies = ["fifo"]
period_ms = 10.0
steps = 30
masses_min = 100
masses_max = 400
grid_ratio = 2.0
precision = 0.25
retries = 0
realfast = true
realfast_steps = 30
pretest = false
"""


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("study")
    (tmp / "p.toml").write_text(PROFILE)
    db = tmp / "r.db"
    p = cli(["run", "--profile", str(tmp / "p.toml"), "--db", str(db), "--no-report"], timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    doc = json.loads(cli(["show", "1", "--db", str(db), "--json"], check=True).stdout)
    return db, doc


@needs_root
def test_the_probes_are_counted_not_listed(study):
    db, doc = study
    probes = [m for m in doc["measurements"] if m["name"].startswith("tire-sweep/")]
    modes = {m["name"].split("/")[1] for m in probes}
    assert len(probes) >= 4 and modes == {"realtime", "realfast"}, [m["name"] for m in probes]
    out = cli(["show", "1", "--db", str(db), "--format", "tsv"], check=True).stdout
    rows = [line for line in out.splitlines() if line.startswith("tire-sweep/")]
    assert not rows, rows                            # no probe has a row of its own
    counted = next(line for line in out.splitlines() if line.startswith("Sweep probes:"))
    assert f"Sweep probes: {len(probes):,} stored (" in counted
    assert "Host stalls in tire-sweep/" not in out   # summed up, if any probe saw one
    if any(((m.get("env") or {}).get("stalls") or {}).get("count") for m in probes):
        assert "Host stalls in the tire sweep's probes: seen in " in out
    assert "preemption@idle" in out                 # the microbenchmark keeps its row
    # a probe's verdicts are its map cell: a verdict row would show whichever came last
    assert not [line for line in out.splitlines() if line.startswith("tire [")]
    md = cli(["export", "1", "--db", str(db), "--format", "md"], check=True).stdout
    assert "| tire [" not in md
    # the report: the sweep's one fit, not a fit table for every probe
    html = db.parent / "r.html"
    cli(["report", "1", "--db", str(db), "-o", str(html)], check=True)
    page = html.read_text()
    assert "Cost equation fit (tire-sweep/" not in page and page.count("<h4>Cost equation fit (") <= 1


@needs_root
def test_the_limits_curves_and_figures_are_shown(study):
    db, doc = study
    out = cli(["show", "1", "--db", str(db), "--format", "tsv"], check=True).stdout
    lines = out.splitlines()
    assert "# Tire model: hard real-time limits at 10 ms (100 Hz), in masses" in lines
    ours = next(line.split("\t") for line in lines if line.startswith("this run: fifo, "))
    sweep = next(m for m in doc["measurements"] if m["name"] == "tire-sweep")
    held = sweep["metrics"].get("largest_masses#threads=1,policy=fifo", {}).get("value")
    assert ours[1] == "1" and ours[2] == (f"{held:,}" if held else "none"), ours
    assert any(line.startswith("published: Xenomai") for line in lines)       # beside the study's
    assert any(line.startswith("# Tire model: real-fast wall time (s), fifo") for line in lines)
    walls = [line.split("\t") for line in lines if line.split("\t")[0] in ("100", "200", "400")]
    assert walls and all(float(w[1]) > 0 for w in walls), walls
    assert "# Microbenchmarks (µs): avg / max, published figures beside" in lines
    assert any(line.startswith("preempt [event=timer]") for line in lines)
    assert "# Other figures of the microbenchmarks" in lines
    low = next(line.split("\t") for line in lines if line.startswith("preemption@idle\tlow_not_running"))
    assert low[3] == "count"


@needs_root
def test_hundreds_of_predictions_are_summed_up_per_thread_count(study, monkeypatch):
    """The cost equation predicts every probe (449 in the full tire study: 900 lines of
    `show` before). Up to PREDICTIONS_LISTED each probe has its row; beyond it, one row a
    thread count with the same probes: their number, sizes, median and largest error."""
    from rtgauge.report import runtext
    db, _ = study

    def tables() -> dict[str, list[list[str]]]:
        out = cli(["show", "1", "--db", str(db), "--format", "tsv"], check=True).stdout
        found, rows = {}, None
        for line in out.splitlines():
            if line.startswith("# "):
                rows = found.setdefault(line[2:], []) if line.startswith("# Ts predicted") else None
            elif rows is not None and line:
                rows.append(line.split("\t"))
        return found
    [(title, listed)] = tables().items()
    assert listed[0][:2] == ["masses", "threads"] and len(listed) > 2, listed
    probes = listed[1:]
    monkeypatch.setattr(runtext, "PREDICTIONS_LISTED", len(probes) - 1)
    [(summed_title, summed)] = tables().items()
    assert summed_title == f"{title}: {len(probes)} probes, each in `rtgauge report` and `show --json`"
    assert summed[0] == ["threads", "probes", "masses", "median error", "largest error"]
    errors = sorted(int(p[6].rstrip("%")) for p in probes)
    sizes = [int(p[0].replace(",", "")) for p in probes]
    [row] = summed[1:]
    assert row[:3] == ["1", str(len(probes)), f"{min(sizes):,}–{max(sizes):,}"], row
    assert row[4] == f"{errors[-1]}%"
