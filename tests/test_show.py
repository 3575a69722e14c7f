"""`rtgauge show` on a populated results database, through the real CLI."""

from __future__ import annotations

from conftest import cli as run_rtgauge
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rtgauge.cli import main
from rtgauge.store import open_store
from test_store import DOCTOR, SYSTEM, realistic_document, realistic_job

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def populated(tmp_path) -> tuple[str, list[int]]:
    """Two runs: one interrupted with four measurements, one still running."""
    db = str(tmp_path / "results.db")
    with open_store(db) as store:
        first = store.begin_run(SYSTEM, DOCTOR, "quick", "builtin:quick", ["rtgauge", "run"])
        store.add_measurement(first, realistic_job("latency-idle", "idle"), realistic_document(misses=0))
        store.add_measurement(first, realistic_job("latency-cpu", "cpu"), realistic_document(misses=3))
        store.add_measurement(first, realistic_job("cyclictest-cpu", "cpu", reference=True, tool="cyclictest"),
                              realistic_document(misses=0))
        failed = realistic_job("latency-io", "io")
        failed["exit_status"] = 1
        store.add_measurement(first, failed, realistic_document(ok=False))
        store.finish_run(first, "interrupted", "SIGINT during latency-io")
        second = store.begin_run(dict(SYSTEM, hostname="bench-7"), [], "standard", "/etc/rt.toml", [])
    return db, [first, second]


def cli(capsys, *args: str) -> tuple[int, str, str]:
    status = main(["show", *args])
    out, err = capsys.readouterr()
    return status, out, err


def test_lists_the_runs_newest_first(populated, capsys):
    db, (first, second) = populated
    status, out, err = cli(capsys, "--db", db)
    assert status == 0 and err == ""
    # off a terminal the table is TSV: its title, a header line, one line a run
    lines = out.splitlines()
    assert lines[0].startswith("# Runs in ") and lines[1].split("\t")[0] == "run"
    cells = [line.split("\t") for line in lines[2:] if "\t" in line]
    assert len(cells) == 2
    assert [c[0] for c in cells] == [str(second), str(first)]
    assert cells[0][2:5] == ["running", "standard", "bench-7"]
    assert cells[1][2:] == ["interrupted", "quick", "rig-1", SYSTEM["kernel_release"], "4"]


def test_shows_one_run(populated, capsys):
    db, (first, _) = populated
    status, out, err = cli(capsys, str(first), "--db", db)
    assert status == 0 and err == ""
    assert f"Run {first}" in out and "interrupted" in out and "SIGINT during latency-io" in out
    assert "rig-1 · 6.1.0-27-rt-amd64 x86_64 · preempt PREEMPT_RT" in out
    # Doctor checks that are not ok are shown with their advice; ok ones are not.
    assert "smt = on — Turn SMT off" in out and "rt_throttling" not in out
    rows = {cells[0]: cells for cells in (line.split("\t") for line in out.splitlines() if "\t" in line)}
    ti = realistic_document()["metrics"]["ti"]
    expected_us = [f"{ti[k] / 1000:.1f}" for k in ("min", "avg", "p99", "max")]
    assert rows["latency-cpu"][1:8] == ["engine", "cpu", "ok", *expected_us]
    assert rows["latency-cpu"][8] == "3" and rows["latency-idle"][8] == "0"
    assert rows["latency-cpu"][9] == "-"        # steal: not recorded by this hand-made run
    assert "max_latency FAIL" in rows["latency-cpu"][10]
    assert rows["cyclictest-cpu"][1] == "cyclictest (x-check)"
    assert rows["latency-io"][3] == "failed"
    assert "latency-io: the measuring thread on cpu 1 could not be started" in out


def test_latest_is_the_newest_run(populated, capsys):
    db, (_, second) = populated
    status, out, _ = cli(capsys, "latest", "--db", db)
    assert status == 0 and f"Run {second}" in out and "No measurements were stored" in out


def test_json_matches_the_store(populated, capsys):
    db, (first, _) = populated
    with open_store(db) as store:
        runs, run = store.list_runs(), store.get_run(first).to_dict()
    status, out, _ = cli(capsys, "--db", db, "--json")
    assert status == 0 and json.loads(out) == runs
    status, out, _ = cli(capsys, str(first), "--db", db, "--json")
    shown = json.loads(out)
    shown.pop("analysis", None)           # derived figures (tests/test_tire_study.py), not the store's
    # besides the stored run: what the report shows of the published evaluations
    published = shown.pop("published")
    assert set(published) == {"studies", "verdicts", "conclusions"}   # conclusions: bebb739
    # and the rating, with why it is withheld (docs/verdict.md)
    rating = shown.pop("rating")
    assert set(rating) == {"stars", "class", "rated", "flags", "reasons", "unrated_class"}
    assert rating["rated"] is (not rating["flags"])
    # show adds the probable worst case (docs/pwcet.md) to each latency measurement with
    # per-window maxima; everything else is the store's
    pwcet = {m["name"]: m.pop("pwcet", None) for m in shown["measurements"]}
    stored = json.loads(json.dumps(run))
    for m, s in zip(shown["measurements"], stored["measurements"]):
        extra = set(m) - set(s)
        assert extra <= {"fallback", "idle"}, extra      # the marks show derives (analysis/run/marks.py)
        for key in extra:
            m.pop(key)
    assert status == 0 and shown == stored
    assert pwcet["latency-idle"][0]["label"] == "all threads"
    assert "only 2 block maxima" in pwcet["latency-idle"][0]["reason"]   # [9100, None, 251000]
    assert pwcet["latency-io"] is None   # a failed job
    assert shown["measurements"][1]["metrics"]["misses"]["value"] == 3
    assert shown["measurements"][1]["document"] == realistic_document(misses=3)


def test_an_empty_database_says_how_to_make_a_run(tmp_path, capsys, monkeypatch):
    # the default database, not made yet: no runs (a database named with --db that is
    # missing is an error, tests/test_cli_database.py)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    for name in ("RTGAUGE_DB", "RTGAUGE_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    status, out, _ = cli(capsys)
    assert status == 0 and "no runs" in out and "`rtgauge run`" in out
    assert list(tmp_path.iterdir()) == [], "looking must not create a database"
    db = tmp_path / "fresh.db"
    open_store(str(db)).close()
    status, out, _ = cli(capsys, "--db", str(db), "--json")
    assert status == 0 and json.loads(out) == []
    status, out, _ = cli(capsys, "latest", "--db", str(db))
    assert status == 0 and "no runs" in out


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return run_rtgauge(["show", *args], timeout=60, cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)))


@pytest.mark.parametrize("args, says", [
    (["42"], "no run 42 in sqlite:///"),
    (["abc"], "'abc' is not a run"),
    (["0"], "'0' is not a run"),
])
def test_a_bad_run_is_one_line_and_status_2(populated, args, says):
    db, _ = populated
    p = run_cli(*args, "--db", db)
    assert p.returncode == 2
    assert p.stdout == ""
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and says in lines[0] and "Traceback" not in p.stderr
    assert "`rtgauge show` lists the runs." in lines[0]


def test_a_bad_database_url_is_one_line(tmp_path):
    p = run_cli("--db", "postgresql://lab:s3cret@127.0.0.1:1/results")
    assert p.returncode == 2 and p.stdout == ""
    assert len(p.stderr.splitlines()) == 1 and "s3cret" not in p.stderr and "Traceback" not in p.stderr
