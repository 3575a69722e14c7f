"""Skipped deadlines are periods not served on time (docs/verdict.md): a FIFO hog of a
known length (tests/disturber.py, priority 90 above the measuring thread's 80, 20 ms
bursts on the measured CPU at a 1 ms interval) makes the real engine skip about 19
deadlines per burst; the run's summary, `show`, `show --json`'s verdict, the report,
the Markdown export, the JUnit file and the `--fail-on 'misses>…'` gate all count them,
and a `--miss-rate` verdict counts them in its rate. Needs root; runs alone (it makes
its own disturbance on the measured CPU)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import disturber
from conftest import is_root, rtgauge, rtgauge_popen

HERE = Path(__file__).resolve().parent
BURST_US, PERIOD_MS, BURSTS = 20_000, 250, 120          # bounded: 120 bursts, 30 s at most
pytestmark = [pytest.mark.alone, pytest.mark.skipif(not is_root(), reason="needs root for SCHED_FIFO")]

PROFILE = """
name = "skipping"
[settings]
warmup_s = 0
[[jobs]]
name = "latency"
test = "latency"
conditions = ["idle"]
[jobs.options]
duration-s = 4
cpus = "{cpu}"
"""


@pytest.fixture(scope="module")
def skipped_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("skip")
    cpu = sorted(os.sched_getaffinity(0))[-1]
    (tmp / "p.toml").write_text(PROFILE.format(cpu=cpu))
    db, junit = tmp / "r.db", tmp / "j.xml"
    run = rtgauge_popen("run", "--profile", str(tmp / "p.toml"), "--db", str(db), "--no-report",
                        "--budget-us", "100", "--miss-rate", "1e-3", "--junit", str(junit),
                        "--fail-on", "misses>0", env_full=dict(os.environ, PYTHONPATH=str(HERE.parent)))
    # the hog from now until the run has ended (stopped then; bounded by its count)
    out, err, bursts = disturber.beside(run, cpu, 90, BURST_US, PERIOD_MS, BURSTS)
    doc = json.loads(rtgauge("show", "latest", "--db", str(db), "--json", "--budget-us", "100",
                             "--miss-rate", "1e-3").stdout)
    m = doc["measurements"][0]
    return {"tmp": tmp, "db": db, "status": run.returncode, "out": out, "err": err, "doc": doc,
            "skipped": m["metrics"]["skipped"]["value"], "misses": m["metrics"]["misses"]["value"],
            "cycles": m["metrics"]["cycles"]["value"], "junit": junit.read_text(),
            "bursts": bursts}


def test_the_hog_made_the_engine_skip(skipped_run):
    r = skipped_run
    # each 20 ms burst inside the 4 s measurement holds the thread off ~20 deadlines
    assert r["skipped"] >= 5 * (BURST_US // 1000 - 2), (r["skipped"], len(r["bursts"]))


def test_the_verdict_counts_the_skipped_periods(skipped_run):
    r = skipped_run
    v = r["doc"]["verdict"]
    job = v["jobs"][0]
    assert job["skipped"] == r["skipped"] and job["wakeups"] == r["cycles"]
    assert job["cycles"] == r["cycles"] + r["skipped"]            # periods
    assert job["exceedances"] >= r["skipped"] + 1                 # each burst's late wake-up too
    # a 20 ms hold every 250 ms is far above 1e-3 of periods: the verdict says no
    assert v["answer"] == "no" and job["rate_low"] > 1e-3, job
    assert f"of {job['cycles']:,} periods ({r['cycles']:,} wake-ups, {r['skipped']:,} skipped)" in job["why"]
    assert r["status"] == 3, r["err"]


def test_every_output_shows_the_skipped_count(skipped_run):
    r = skipped_run
    shown_skipped = f"({r['skipped']:,} skipped)"
    late = f"{r['misses'] + r['skipped']:,} {shown_skipped}"
    assert f"{r['skipped']:,} skipped)" in r["out"] and late in r["out"], r["out"]       # run's summary
    shown = rtgauge("show", "latest", "--db", str(r["db"]), "--format", "tsv")
    assert late in shown.stdout, shown.stdout
    md = rtgauge("export", "latest", "--db", str(r["db"]), "--format", "md", "-o", "-")
    assert md.returncode == 0 and late in md.stdout, md.stdout
    html_path = r["tmp"] / "r.html"
    rep = rtgauge("report", "latest", "--db", str(r["db"]), "-o", str(html_path), "--budget-us", "100",
                  "--miss-rate", "1e-3")
    assert rep.returncode == 0, rep.stderr
    html = html_path.read_text()
    assert late in html and f"{r['skipped']:,} skipped)" in html
    assert f"{r['skipped']:,} skipped" in r["junit"], r["junit"]
    # the gate's misses figure counts them too (a broken rule: its message is in the JUnit file)
    gate = f"missed deadlines {shown_skipped} = {r['misses'] + r['skipped']:g} breaks the rule"
    assert gate in r["junit"] and gate in r["out"], r["out"]
