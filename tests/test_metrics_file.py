"""`run --metrics-file PATH` (trace/metrics_file.py): a Prometheus text exposition that
node_exporter's textfile collector reads, checked with a real parser (prometheus_client).
Ground truth: a FIFO spinner's bursts on the measured CPU show as the max in the file,
which equals the stored measurement's, as do its cycles and misses; the file is
rewritten while the run goes (each version whole); a symbolic link, a directory or a
missing directory is refused before anything is stored, and so is a run on a target."""

from __future__ import annotations

import os
import subprocess
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import needs_root
from rtgauge.store import open_store
from rtgauge.trace.live import LiveTally
from rtgauge.trace.metrics_file import MetricsFile, exposition
from test_loads import rtgauge, rtgauge_popen

PROFILE = """
name = "soak"
[settings]
warmup_s = 0.0
[[jobs]]
name = "latency"
test = "latency"
conditions = ["idle"]
[jobs.options]
cpus = "{cpu}"
interval-us = 1000
duration-s = 1
window-s = 0.5
policy = "fifo"
priority = 50
"""

BURST_US = 15_000


def families(text: str) -> dict:
    return {f.name: f for f in text_string_to_metric_families(text)}


def value(fams: dict, family: str, sample: str, **labels) -> float:
    (v,) = [s.value for s in fams[family].samples if s.name == sample and
            all(s.labels.get(k) == str(x) for k, x in labels.items())]
    return v


@needs_root
@pytest.mark.alone
def test_a_disturbed_soak_shows_in_the_metrics_file(engine_bin, tmp_path):
    cpu = max(os.sched_getaffinity(0))
    prof = tmp_path / "p.toml"
    prof.write_text(PROFILE.format(cpu=cpu))
    db, metrics = tmp_path / "r.db", tmp_path / "rtgauge.prom"
    spin = subprocess.Popen([engine_bin, "spin", "--cpu", str(cpu), "--priority", "90", "--busy-us", str(BURST_US),
                             "--period-us", "400000", "--duration-s", "30"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        p = rtgauge_popen("run", "--profile", str(prof), "--db", str(db), "--no-report", "--duration", "3s",
                          "--live", "--metrics-file", str(metrics))
        versions = set()
        while p.poll() is None:
            if metrics.exists():
                text = metrics.read_text()
                families(text)           # every version read is whole and parses
                versions.add(text)
            time.sleep(0.05)     # how often the file is sampled while the run goes on, not a wait
        out, err = p.communicate(timeout=60)
    finally:
        spin.terminate()
        spin.wait(timeout=30)
    assert p.returncode == 0, out + err
    assert len(versions) >= 2, "the file was not rewritten while the run went on"
    text = metrics.read_text()
    assert text.endswith("# EOF\n")
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".rtgauge.prom")], "a temporary file was left"
    fams = families(text)
    assert fams["rtgauge_latency_max_seconds"].type == "gauge"
    assert fams["rtgauge_cycles"].type == "counter" and fams["rtgauge_misses"].type == "counter"
    assert fams["rtgauge_latency_max_seconds"].documentation
    with open_store(str(db)) as store:
        (m,) = store.get_run(store.latest_run_id()).to_dict()["measurements"]
    labels = {"job": "latency@idle", "condition": "idle", "cpu": cpu}
    top = value(fams, "rtgauge_latency_max_seconds", "rtgauge_latency_max_seconds", **labels)
    # the spinner's bursts (15 ms every 0.4 s) delayed the wake-ups due at their start
    assert top >= (BURST_US - 2000) / 1e6, top
    assert top == pytest.approx(m["document"]["metrics"]["ti"]["max"] / 1e9, abs=1e-9)
    assert value(fams, "rtgauge_cycles", "rtgauge_cycles_total", **labels) == m["metrics"]["cycles"]["value"]
    assert value(fams, "rtgauge_misses", "rtgauge_misses_total", **labels) == m["metrics"]["misses"]["value"]
    assert value(fams, "rtgauge_misses", "rtgauge_misses_total", **labels) >= 1
    assert value(fams, "rtgauge_skipped", "rtgauge_skipped_total", **labels) == m["metrics"]["skipped"]["value"]
    assert value(fams, "rtgauge_windows", "rtgauge_windows_total", **labels) in (6, 7)   # 3 s of 0.5 s windows
    stamp = value(fams, "rtgauge_last_window_end_timestamp_seconds",
                  "rtgauge_last_window_end_timestamp_seconds", **labels)
    assert abs(stamp - time.time()) < 120


def test_the_exposition_of_known_windows(tmp_path):
    tally = LiveTally()
    job = 'lat"ency@idle\\x'                 # a quote and a backslash, escaped in the label
    for w, (mx, p99, misses) in enumerate([(5_000, 2_000, 0), (90_000, 40_000, 2), (7_000, 3_000, 1)]):
        tally.add(job, "idle", {"window": w, "start_ns": 10**9 * w, "window_s": 1.0, "threads": [
            {"thread": 0, "cpu": 3, "cycles": 1000, "min": 1000, "avg": 1500.0, "max": mx, "p99": p99,
             "misses": misses, "overflows": None},
            {"thread": 1, "cpu": 5, "cycles": 0, "min": None, "avg": None, "max": None, "p99": None,
             "misses": 0, "overflows": None}]})
    target = tmp_path / "m.prom"
    MetricsFile(str(target)).write(tally)
    assert oct(target.stat().st_mode & 0o777) == "0o644"
    fams = families(target.read_text())
    labels = {"job": job, "condition": "idle", "cpu": 3}
    assert value(fams, "rtgauge_latency_max_seconds", "rtgauge_latency_max_seconds", **labels) == 90e-6
    assert value(fams, "rtgauge_latency_window_max_seconds", "rtgauge_latency_window_max_seconds", **labels) == 7e-6
    assert value(fams, "rtgauge_latency_window_p99_seconds", "rtgauge_latency_window_p99_seconds", **labels) == 3e-6
    assert value(fams, "rtgauge_cycles", "rtgauge_cycles_total", **labels) == 3000
    assert value(fams, "rtgauge_misses", "rtgauge_misses_total", **labels) == 3
    # CPU 5 had no wake-up: counted, but no latency to show
    assert value(fams, "rtgauge_cycles", "rtgauge_cycles_total", job=job, condition="idle", cpu=5) == 0
    assert not [s for s in fams["rtgauge_latency_max_seconds"].samples if s.labels["cpu"] == "5"]
    # the parser does reject a file cut short, which is why the file is replaced whole
    text = exposition(tally)
    with pytest.raises(ValueError):
        list(text_string_to_metric_families(text[:text.index("{") + 6] + "\n"))


def test_bad_metrics_paths_are_refused_before_anything_is_stored(tmp_path):
    prof = tmp_path / "p.toml"
    prof.write_text(PROFILE.format(cpu=0))
    (tmp_path / "real.prom").write_text("")
    os.symlink(tmp_path / "real.prom", tmp_path / "link.prom")
    for path, says in ((tmp_path / "link.prom", "symbolic link"), (tmp_path, "directory"),
                       (tmp_path / "none" / "m.prom", "its directory does not exist")):
        db = tmp_path / "r.db"
        p = rtgauge("run", "--profile", str(prof), "--db", str(db), "--no-report", "--metrics-file", str(path))
        assert p.returncode == 2 and says in p.stderr and "Traceback" not in p.stderr, p.stderr
        assert len(p.stderr.strip().splitlines()) == 1, p.stderr
        assert not db.exists() or open_store(str(db)).latest_run_id() is None
    assert (tmp_path / "real.prom").read_text() == ""
    # on a target the engine's status is not brought back yet: refused before connecting
    p = rtgauge("run", "--profile", str(prof), "--db", str(tmp_path / "t.db"), "--target", "ssh://board.invalid",
                "--metrics-file", str(tmp_path / "m.prom"))
    assert p.returncode == 2 and "--metrics-file cannot run on ssh://board.invalid yet" in p.stderr, p.stderr
    assert not (tmp_path / "t.db").exists() and not (tmp_path / "m.prom").exists()
