"""stress-ng's --cyclic results in rtgauge, against real stress-ng runs made here: its log
imports as a run whose sample count, min, mean, max and percentiles are stress-ng's own
lines, whose histogram is its distribution (samples beyond the last bucket counted as
overflows), and whose note says when stress-ng kept only the first samples of the cycles
it ran. A log that contradicts itself is refused in one sentence, nothing stored."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.shared, pytest.mark.skipif(shutil.which("stress-ng") is None, reason="stress-ng not installed"),
              pytest.mark.skipif(os.geteuid() != 0, reason="stress-ng's cyclic stressor needs root")]


def rtgauge(*args, db: str) -> subprocess.CompletedProcess:
    from conftest import rtgauge as cli
    return cli(*args, env_full=dict(os.environ, RTGAUGE_DB=db), cwd=os.getcwd(), timeout=300)


def cyclic(log, *extra) -> str:
    """One real run: a low FIFO priority, 2 s, 200 µs sleeps (about 9,000 cycles)."""
    cmd = ["stress-ng", "--cyclic", "1", "--cyclic-policy", "fifo", "--cyclic-prio", "10", "--cyclic-sleep",
           "200000", "-t", "2", "--log-file", str(log), *extra]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return log.read_text()


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    d = tmp_path_factory.mktemp("stressng")
    return {"full": cyclic(d / "full.log", "--cyclic-dist", "5000", "--cyclic-samples", "100000"),
            "kept": cyclic(d / "kept.log", "--cyclic-dist", "2000", "--cyclic-samples", "1000"),
            "dir": d}


def figure(text: str, pattern: str) -> int:
    m = re.search(pattern, text)
    assert m, pattern
    return int(float(m.group(1)))


def only_measurement(db: str) -> tuple[dict, dict]:
    p = rtgauge("show", "1", "--json", db=db)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert len(doc["measurements"]) == 1
    return doc, doc["measurements"][0]


def test_its_own_figures_come_through(logs, tmp_path):
    text = logs["full"]
    db = f"sqlite:///{tmp_path / 'r.db'}"
    p = rtgauge("import", str(logs["dir"] / "full.log"), db=db)
    assert p.returncode == 0, p.stderr
    run, m = only_measurement(db)
    assert m["tool"] == "stress-ng" and m["test"] == "latency" and m["reference"] is True
    ti = m["document"]["metrics"]["ti"]
    samples = figure(text, r"ns delay, (\d+) samples")
    assert ti["count"] == samples > 1000
    assert ti["min"] == figure(text, r"min: (\d+) ns")
    assert ti["max"] == figure(text, r"max: (\d+) ns")
    assert ti["avg"] == pytest.approx(float(re.search(r"mean: ([\d.]+) ns", text).group(1)))
    assert ti["p50"] == figure(text, r"50\.00%:\s+(\d+) ns")
    assert ti["p99"] == figure(text, r"99\.00%:\s+(\d+) ns")
    assert ti["p9999"] == figure(text, r"99\.99%:\s+(\d+) ns")
    rows = [(int(a), int(b)) for a, b in re.findall(r"cyclic:\s+(\d+)\s+(\d+)\s*$", text, re.M)]
    bins = ti["histogram"]["bins"]
    assert sum(c for _, _, c in bins) == sum(c for _, c in rows)
    assert ti["histogram"].get("overflow", 0) == samples - sum(c for _, c in rows)
    assert all(hi - lo + 1 == 5000 for lo, hi, _ in bins)
    assert "all" in run["note"] and "cycles" in run["note"]


def test_a_log_of_kept_samples_says_so(logs, tmp_path):
    text = logs["kept"]
    needed = figure(text, r"needed to be (\d+) to capture")
    db = f"sqlite:///{tmp_path / 'r.db'}"
    assert rtgauge("import", str(logs["dir"] / "kept.log"), db=db).returncode == 0
    run, m = only_measurement(db)
    assert m["document"]["metrics"]["ti"]["count"] == 1000
    assert f"first 1,000 of {needed:,} cycles" in run["note"]
    assert m["params"]["cycles_run"] == needed and m["params"]["samples_kept"] == 1000


@pytest.mark.parametrize("mend, said", [
    (lambda t: re.sub(r"99\.00%:\s+\d+ ns", "99.00%:      1 ns", t), "percentiles are not ordered"),
    (lambda t: re.sub(r"ns delay, \d+ samples", "ns delay, 3 samples", t), "distribution holds"),
    (lambda t: t + t, "a second cyclic report"),
    (lambda t: re.sub(r"mean: [\d.]+ ns", "mean: 99999999999 ns", t), "outside min"),
    (lambda t: "\n".join(l for l in t.splitlines() if "ns delay" not in l), "not a stress-ng --cyclic log"),
])
def test_a_log_that_contradicts_itself_is_refused(logs, tmp_path, mend, said):
    bad = tmp_path / "bad.log"
    bad.write_text(mend(logs["full"]))
    db = f"sqlite:///{tmp_path / 'r.db'}"
    p = rtgauge("import", str(bad), db=db)
    assert p.returncode == 2, p.stdout
    assert said in p.stderr and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "r.db").exists() or "no run 1" in rtgauge("show", "1", db=db).stderr
