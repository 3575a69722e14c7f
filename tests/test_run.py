"""`rtgauge run` end to end: a small profile measured, stored, summarised, reported;
interrupted runs keep what they measured; bad input stores nothing."""

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import needs_root, rtgauge
from readiness import engine_measuring, wait_for
from rtgauge.lab.runner import read_run_id
from rtgauge.store import open_store

ROOT = Path(__file__).resolve().parent.parent

SMALL = """
name = "small"
[settings]
warmup_s = 0.5
[[jobs]]
name = "latency"
test = "latency"
conditions = ["idle", "cpu"]
cross_check = {cross}
[jobs.options]
interval-us = 1000
duration-s = {seconds}
priority = 80
histogram = 5000
"""


def stress_ng_pids() -> set[int]:
    p = subprocess.run(["pgrep", "-x", "stress-ng"], capture_output=True, text=True)
    return {int(x) for x in p.stdout.split()}


@needs_root
@pytest.mark.alone     # no stress-ng may start beside it: it counts them by name
def test_small_profile_is_measured_stored_and_reported(tmp_path):
    cross = '["cyclictest"]' if shutil.which("cyclictest") else "[]"
    prof = tmp_path / "small.toml"
    seconds = 1
    prof.write_text(SMALL.format(cross=cross, seconds=seconds))
    db, report = tmp_path / "r.db", tmp_path / "r.html"
    before = stress_ng_pids()
    ids = tmp_path / "run-id"
    p = rtgauge("run", "--profile", str(prof), "--db", str(db), "--report", str(report), "--run-id-file", str(ids))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Wake-up latency" in p.stdout and "max" in p.stdout
    assert stress_ng_pids() <= before, "a load process was left behind"
    with open_store(str(db)) as store:
        run = store.get_run(store.latest_run_id()).to_dict()
    assert run["status"] == "complete" and run["profile"] == "small"
    # the machine-readable channel a program that starts the run reads (rtgauge lab)
    assert ids.read_text() == f"{run['id']}\n" and read_run_id(ids) == run["id"]
    assert run["doctor"] and run["system"]["kernel_release"] == os.uname().release
    by_name = {m["name"]: m for m in run["measurements"]}
    ncpu = len(os.sched_getaffinity(0))
    for cond in ("idle", "cpu"):
        m = by_name[f"latency@{cond}"]
        assert m["ok"] and m["condition"] == cond and not m["reference"]
        ti = m["metrics"]["ti"]
        # 1 s at 1 kHz on every CPU: each deadline measured or skipped after an overrun
        assert ti["count"] + m["metrics"]["skipped"]["value"] == 1000 * seconds * ncpu
        assert 0 < ti["min"] <= ti["avg"] <= ti["max"]
        if cross != "[]":
            ref = by_name[f"latency@{cond}/cyclictest"]
            assert ref["reference"] and ref["tool"] == "cyclictest" and ref["ok"]
            # cyclictest also skips deadlines after an overrun but does not count them;
            # a busy machine costs it a few hundred
            assert 500 * seconds * ncpu <= ref["metrics"]["ti"]["count"] <= 1000 * seconds * ncpu
    load = by_name["latency@cpu"]["load"]
    assert load["tool"] == "stress-ng" and load["workers"] == os.cpu_count()
    # the load really ran: its workers used CPU time for most of the job
    assert load["cpu_s"] > 0.5 and load["bogo_ops"] > 0
    html = report.read_text()
    assert html.startswith("<!DOCTYPE html>") and "<svg" in html and "latency@cpu" in html


def test_the_run_id_file_is_read_strictly(tmp_path):
    """A child that failed before its run wrote no id, or a damaged file: no run, not a guess."""
    f = tmp_path / "01-board.run-id"
    assert read_run_id(f) is None and read_run_id(None) is None
    for text, expected in (("7\n", 7), ("7\n8\n", 7), ("", None), ("x\n", None), ("-3\n", None),
                           ("0\n", None), (f"{2**63}\n", None), ("\xff", None)):
        f.write_text(text, encoding="latin-1")
        assert read_run_id(f) == expected, text


@needs_root
@pytest.mark.alone     # no stress-ng may start beside it: it counts them by name
def test_sigterm_keeps_what_was_measured(tmp_path):
    prof = tmp_path / "long.toml"
    prof.write_text(SMALL.format(cross="[]", seconds=60))
    db = tmp_path / "r.db"
    before = stress_ng_pids()
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "rtgauge", "run", "--profile", str(prof), "--db", str(db),
                             "--no-report"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    wait_for(lambda: engine_measuring(proc.pid), "the run's engine measuring", proc=proc)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, out + err
    assert "Traceback" not in err
    assert stress_ng_pids() <= before
    with open_store(str(db)) as store:
        run = store.get_run(store.latest_run_id()).to_dict()
    assert run["status"] == "interrupted"
    (m,) = run["measurements"]
    assert m["interrupted"] and m["ok"]
    assert 0 < m["metrics"]["ti"]["count"] < 60_000 * len(os.sched_getaffinity(0))


@pytest.mark.parametrize("profile_text, words", [
    ("[[jobs]]\nname='a'\ntest='latency'\nconditions=['moon']", "unknown condition"),
    ("[[jobs]]\nname='a'\ntest='latency'\n[jobs.options]\ninterval-us=5", "interval-us"),
    ("[[jobs]]\nname='a'\ntest='nosuchtest'", "nosuchtest"),
    ("[[jobs]]\nname='a'\ntest='latency'\n[jobs.options]\nwobble=1", "wobble"),
])
def test_bad_profile_is_one_sentence_and_stores_nothing(tmp_path, profile_text, words):
    prof = tmp_path / "bad.toml"
    prof.write_text(profile_text)
    db = tmp_path / "r.db"
    p = rtgauge("run", "--profile", str(prof), "--db", str(db), timeout=60)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0] and "Traceback" not in p.stderr
    if db.exists():
        with open_store(str(db)) as store:
            assert store.list_runs() == []


def test_unknown_profile_name(tmp_path):
    p = rtgauge("run", "--profile", "nosuch", "--db", str(tmp_path / "r.db"), timeout=60)
    assert p.returncode == 2 and "neither a built-in profile" in p.stderr


def test_report_escapes_text_from_the_measured_system():
    from rtgauge.records import Run
    from rtgauge.report.html import render

    run = {"id": 1, "status": "complete", "profile": "p", "system": {"hostname": "<script>alert(1)</script>"},
           "measurements": [], "doctor": [{"name": "x", "status": "warn", "value": "<b>", "advice": "a&b"}]}
    html = render([Run.from_dict(run)])
    assert "<script>" not in html and "&lt;script&gt;" in html and "a&amp;b" in html
