"""The live view follows the engine's status (trace/live.py): it reads the windows as
the engine writes them (not only at the end), and what it shows adds up to the run's
own figures: per CPU the cycles, the misses and the max."""

from __future__ import annotations

import json
import os
import subprocess

from rich.console import Console

from rtgauge.trace.live import LiveView, StatusFollower


def test_the_view_follows_a_running_engine(engine_bin, tmp_path):
    status = tmp_path / "status.jsonl"
    shown = []
    view = LiveView(show=shown.append, period_s=0.05)
    view.follow(status, "latency@idle", "idle")
    proc = subprocess.Popen([engine_bin, "latency", "--policy", "other", "--duration-s", "3", "--window-s", "0.1",
                             "--status", str(status), "--out", str(tmp_path / "o.json")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.wait(timeout=120) == 0, proc.stderr.read()
        seen_while_running = len(shown)
    finally:
        view.close()
    # 30 windows of 0.1 s: the view had tables to show before the engine ended (beside
    # `stress-ng --cpu 2` its thread, looking every 50 ms, showed 2 in 1.5 s)
    assert seen_while_running >= 2, seen_while_running
    doc = json.loads((tmp_path / "o.json").read_text())
    figures = view.tally.cpus
    assert {cpu for (_, _, cpu) in figures} == {t["cpu"] for t in doc["env"]["threads"]}
    for i, t in enumerate(doc["env"]["threads"]):
        f = figures[("latency@idle", "idle", t["cpu"])]
        if sum(1 for u in doc["env"]["threads"] if u["cpu"] == t["cpu"]) == 1:
            assert f.cycles == doc["metrics"][f"cycles#{i}"]["value"]
            assert f.misses == doc["metrics"][f"misses#{i}"]["value"]
            assert f.skipped == doc["metrics"][f"skipped#{i}"]["value"]
            assert f.max_ns == doc["metrics"][f"ti#{i}"]["max"]
    assert sum(f.cycles for f in figures.values()) == doc["metrics"]["cycles"]["value"]
    console = Console(width=100, record=True, file=open(os.devnull, "w"))
    console.print(shown[-1])
    text = console.export_text()
    assert "window p99" in text and "latency@idle" in text
    assert f"{doc['metrics']['cycles#0']['value']:,}" in text


def test_the_follower_reads_complete_lines_only(tmp_path):
    path = tmp_path / "s.jsonl"
    follower = StatusFollower(path)
    assert follower.poll() == []               # not written yet
    line = json.dumps({"window": 0, "threads": [{"thread": 0, "cpu": 1, "cycles": 3}]})
    path.write_text(line[:20])
    assert follower.poll() == []               # half a line: the engine is writing it
    with open(path, "a") as f:
        f.write(line[20:] + "\n" + line[:5])
    assert [w["window"] for w in follower.poll()] == [0]
    assert follower.poll() == []


def test_a_metrics_file_that_cannot_be_written_is_said_once_and_the_view_goes_on(tmp_path):
    from rtgauge.trace.metrics_file import MetricsFile
    out = tmp_path / "out"
    out.mkdir()
    metrics = MetricsFile(str(out / "m.prom"))
    out.rmdir()                                  # gone under the run's feet
    said, shown = [], []
    view = LiveView(show=shown.append, metrics=metrics, say=said.append)
    status = tmp_path / "s.jsonl"
    line = {"window": 0, "start_ns": 0, "window_s": 1.0,
            "threads": [{"thread": 0, "cpu": 0, "cycles": 5, "max": 900, "p99": 800, "misses": 0}]}
    status.write_text(json.dumps(line) + "\n")
    view.follow(status, "latency@idle", "idle")
    assert view.poll() == 1
    with open(status, "a") as f:
        f.write(json.dumps(dict(line, window=1)) + "\n")
    assert view.poll() == 1
    view.close()
    assert len(said) == 1 and "could not be written" in said[0] and len(shown) == 2
    assert view.tally.cpus[("latency@idle", "idle", 0)].cycles == 10
