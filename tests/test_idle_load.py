"""Is idle idle? (docs/loads.md, issue 31): an idle job beside a CPU hog of another
program is marked "not idle" in every output; a quiet one stays idle. The real engine,
a real stress-ng, real SQLite; the stored figure (env.others_load) is checked against
what the test itself reads of the hog (/proc/PID/stat) and of the machine (/proc/stat)."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, is_root
from readiness import wait_for
from rtgauge.trace.counters import NOT_IDLE_SHARE, cpu_times

pytestmark = [pytest.mark.shared, pytest.mark.skipif(not is_root(), reason="needs root for SCHED_FIFO")]

PROFILE = """
name = "idle-check"
[settings]
warmup_s = 0
[[jobs]]
name = "latency"
test = "latency"
conditions = ["idle"]
[jobs.options]
interval-us = 1000
duration-s = 3
window-s = 0.1
policy = "fifo"
priority = 80
histogram = 2000
"""
TICK = os.sysconf("SC_CLK_TCK")


def rtgauge(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "rtgauge", *args], capture_output=True, text=True, timeout=300,
                          env=env, cwd=tmp_path)


def measure(tmp_path: Path, db: Path) -> subprocess.CompletedProcess:
    profile = tmp_path / "idle.toml"
    profile.write_text(PROFILE)
    return rtgauge(tmp_path, "run", "--profile", str(profile), "--db", f"sqlite:///{db}",
                   "--report", str(tmp_path / "r.html"))


def stored(tmp_path: Path, db: Path) -> dict:
    p = rtgauge(tmp_path, "show", "latest", "--db", f"sqlite:///{db}", "--json")
    assert p.returncode == 0, p.stderr
    (m,) = json.loads(p.stdout)["measurements"]
    return m


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return int(fields[11]) + int(fields[12])          # utime + stime


def workers(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def test_an_idle_job_beside_a_cpu_hog_is_not_idle(tmp_path):
    if not shutil.which("stress-ng"):
        pytest.skip("stress-ng is not installed")
    db = tmp_path / "hog.db"
    hog = subprocess.Popen(["stress-ng", "--cpu", "1", "--timeout", "30s", "-q"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        # ready: its worker exists and has run
        worker = wait_for(lambda: next((w for w in workers(hog.pid) if cpu_ticks(w) > 0), None),
                          "stress-ng's worker, running", proc=hog)
        t0, c0 = time.monotonic(), cpu_ticks(worker)
        p = measure(tmp_path, db)
        t1, c1 = time.monotonic(), cpu_ticks(worker)
    finally:
        os.killpg(hog.pid, 15)
        hog.wait(timeout=30)
    assert p.returncode == 0, p.stderr
    m = stored(tmp_path, db)
    load = m["env"]["others_load"]
    assert m["idle"] is False and load["idle"] is False and load["threshold_share"] == NOT_IDLE_SHARE
    assert load["share"] >= NOT_IDLE_SHARE
    # the hog ran at this rate (CPU seconds a second) throughout; at least most of it is
    # in what others ran over the measurement (rtgauge's own time taken out, not the hog's)
    rate = (c1 - c0) / TICK / (t1 - t0)
    window_s = load["capacity_s"] / len(load["cpus"])
    assert load["others_s"] >= 0.7 * rate * window_s, (load, rate)
    said = " ".join(p.stdout.split())
    assert "not idle: others used" in said                              # the run's summary
    show = rtgauge(tmp_path, "show", "latest", "--db", f"sqlite:///{db}").stdout
    assert "not idle: others used" in " ".join(show.split())
    assert "not idle: others used" in (tmp_path / "r.html").read_text()
    md = rtgauge(tmp_path, "export", "latest", "--db", f"sqlite:///{db}", "--format", "md").stdout
    assert "not idle: others used" in md
    csv = rtgauge(tmp_path, "export", "latest", "--db", f"sqlite:///{db}", "--format", "csv").stdout
    assert ",not_idle,mark,share,value," in csv
    exported = json.loads(rtgauge(tmp_path, "export", "latest", "--db", f"sqlite:///{db}").stdout)
    assert exported["run"]["measurements"][0]["env"]["others_load"]["idle"] is False


def machine_not_busy_s() -> tuple[float, float]:
    """(idle, iowait and steal seconds of every CPU so far, CPU seconds of this test's
    waited children): the busy time of a span is its wall time on every CPU less the
    difference of the first, as rtgauge reads it (docs/loads.md: the busy columns are
    sampled at the tick)."""
    times = cpu_times(Path("/proc/stat").read_text())
    not_busy = sum(sum(t[i] for i in (3, 4, 7)) for t in times.values()) / TICK
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return not_busy, kids.ru_utime + kids.ru_stime


# the claim needs a quiet machine: in the last pass, with nothing beside it (beside the
# other shared tests it was never quiet and was skipped after three runs)
@pytest.mark.sole
def test_a_quiet_idle_job_stays_idle(tmp_path):
    """The test reads the machine itself around the run (every CPU's busy time minus the
    run's own, the rtgauge process it waited for); only when that says the machine was
    quiet (others below half the threshold) is the stored answer asked to be idle. Tried
    three times on a machine busy with other work; skipped if it never was quiet."""
    seen = []
    for attempt in range(3):
        db = tmp_path / f"quiet-{attempt}.db"
        n0, k0 = machine_not_busy_s()
        t0 = time.monotonic()
        p = measure(tmp_path, db)
        t1 = time.monotonic()
        n1, k1 = machine_not_busy_s()
        assert p.returncode == 0, p.stderr
        capacity = (t1 - t0) * len(cpu_times(Path("/proc/stat").read_text()))
        others = max(0.0, capacity - (n1 - n0) - (k1 - k0)) / capacity
        m = stored(tmp_path, db)
        load = m["env"]["others_load"]
        seen.append((round(others, 3), load["share"]))
        if others < NOT_IDLE_SHARE / 2:
            assert m["idle"] is True and load["idle"] is True and load["share"] < NOT_IDLE_SHARE, (others, load)
            assert "not idle" not in " ".join(p.stdout.split())
            return
    pytest.skip(f"the machine was never quiet (others' share as this test read it, and as stored: {seen})")
