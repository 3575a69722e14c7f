"""`rtgauge hil veth|sustained ...` (a subcommand of rtgauge) and its alias
`python3 -m rtgauge.hil ...`: both reach the same command, with real engine runs; bad
input is one sentence and nothing stored."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import needs_root
from rtgauge.store import open_store

ROOT = Path(__file__).resolve().parent.parent
ENTRIES = {"subcommand": ["-m", "rtgauge", "hil"], "alias": ["-m", "rtgauge.hil"]}


def hil(entry: str, *args: str, engine: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *ENTRIES[entry], *args], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT), "RTGAUGE_ENGINE": engine})


def test_rtgauge_lists_hil_among_its_commands():
    p = subprocess.run([sys.executable, "-m", "rtgauge", "--help"], capture_output=True, text=True,
                       timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 0 and "hil" in p.stdout.split("COMMAND")[-1]


@pytest.mark.parametrize("entry", ENTRIES)
def test_usage_and_an_unknown_mode(entry, engine_bin):
    shown = hil(entry, "--help", engine=engine_bin)
    assert shown.returncode == 0 and "veth" in shown.stdout and "sustained" in shown.stdout
    prog = "rtgauge hil" if entry == "subcommand" else "python3 -m rtgauge.hil"
    assert f"usage: {prog} veth" in shown.stdout
    bare = hil(entry, engine=engine_bin)
    assert bare.returncode == 2 and "sustained" in bare.stderr
    wrong = hil(entry, "sweep", engine=engine_bin)
    assert wrong.returncode == 2 and "unknown hil mode 'sweep'; choose veth or sustained." in wrong.stderr


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("args, words", [
    (["--payload", "magic"], "payload must be none, work or tire"),
    (["--sizes", "1,x"], "--sizes '1,x' is not a comma list of whole numbers"),
    (["--frames", "0"], "frames must be"),
])
def test_bad_sustained_input_is_one_sentence_and_stores_nothing(entry, args, words, engine_bin, tmp_path):
    db = tmp_path / "r.db"
    p = hil(entry, "sustained", *args, "--store", "--db", f"sqlite:///{db}", engine=engine_bin)
    assert p.returncode == 2 and words in p.stderr, p.stderr
    assert "Traceback" not in p.stderr and p.stdout == ""
    assert not db.exists() or open_store(f"sqlite:///{db}").latest_run_id() is None


@needs_root
@pytest.mark.parametrize("entry", ENTRIES)
def test_veth_passes_the_engine_options_untouched(entry, engine_bin):
    """An option argparse would take for its own (--period-us) reaches the engine, whose
    range check answers: the simulation ends before it listens, so the device is not
    started, and the answer is one sentence with a non-zero exit."""
    p = hil(entry, "veth", "--period-us", "1", engine=engine_bin)
    assert p.returncode == 2 and p.stdout == "" and "Traceback" not in p.stderr
    (line,) = p.stderr.strip().splitlines()
    assert "--period-us 1 is out of range" in line and "the device side was not started" in line


@needs_root
@pytest.mark.shared
def test_sustained_subcommand_measures_and_stores(engine_bin, tmp_path):
    """Ground truth: a step of 300 us of work cannot hold at a period shorter than 300 us."""
    db = tmp_path / "r.db"
    p = hil("subcommand", "sustained", "--payload", "work", "--sizes", "300", "--frames", "200",
            "--start-us", "2000", "--max-us", "8000", "--precision", "0.2", "--store", "--db", f"sqlite:///{db}",
            engine=engine_bin)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    (row,) = doc["sustained"]
    assert row["payload"] == "work" and row["size"] == 300
    assert row["shortest_period_us"] is not None and row["shortest_period_us"] >= 300
    assert "hil work 300:" in p.stderr
    store = open_store(f"sqlite:///{db}")
    try:
        run = store.get_run(store.latest_run_id()).to_dict()
    finally:
        store.close()
    (m,) = run["measurements"]
    assert m["test"] == "hil-sustained"
    assert run["status"] == "complete"
