"""The medium and low cases of the attack as classes: a gate fails closed (exit 5) on an
incomplete run; counts a statistic cannot take are dropped at the reader; a samples file
is a bounded regular file read whole; a foreign database is never written into; SSH
addresses are bounded and round-trip; a lab's name cannot leave its directory."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from rtgauge.analysis.samples import BINARY_DTYPE, BINARY_MAGIC, read_samples
from rtgauge.records import COUNT_MAX, Metric, bounded_count
from rtgauge.errors import EXIT_INCOMPLETE, UserError
from rtgauge.remote import ssh as remote
from conftest import import_engine_latency, rtgauge

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory, engine_bin):
    d = tmp_path_factory.mktemp("gates")
    db = d / "g.db"
    for i in (1, 2):
        import_engine_latency(engine_bin, d / f"lat{i}.json", db)
    return db


def test_a_gate_fails_closed_on_an_interrupted_run(two_runs, tmp_path):
    db = tmp_path / "g.db"
    db.write_bytes(two_runs.read_bytes())
    con = sqlite3.connect(db)
    con.execute("UPDATE runs SET status = 'interrupted' WHERE id = 1")
    con.commit()
    con.close()
    p = rtgauge("compare", "2", "1", "--db", str(db), "--fail-on", "max_latency>+20%", "--fail-on", "misses>0")
    assert p.returncode == EXIT_INCOMPLETE, p.stdout + p.stderr
    assert "run 1, which is interrupted" in p.stderr and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    # without a rule, compare still shows the two runs (exit 0): only a gate refuses to judge
    assert rtgauge("compare", "2", "1", "--db", str(db)).returncode == 0


def test_counts_beyond_any_measurement_are_dropped_at_the_reader():
    m = Metric.from_dict({"count": 2**62, "histogram": {"bins": [[0, 10, 2**62], [10, 20, 5]]}})
    assert m.count is None and m.bins == []
    assert Metric.from_dict({"histogram": {"bins": [[0, 10, 1e14]]}}).bins == []
    assert Metric.from_dict({"value": 1e300}).value is None
    assert bounded_count(1e300) is None and bounded_count(COUNT_MAX) == COUNT_MAX and bounded_count(-1) is None
    ok = Metric.from_dict({"count": 7, "histogram": {"bins": [[0, 10, 7]]}})
    assert ok.count == 7 and ok.bins == [[0, 10, 7]]


def test_compare_of_a_crafted_huge_count_ends(two_runs, tmp_path):
    """A bin count of 2**62 hung compare at 100 % CPU in binom.ppf; now it is dropped and
    compare answers (bounded by a generous watchdog, not a timing assertion)."""
    import json
    db = tmp_path / "g.db"
    db.write_bytes(two_runs.read_bytes())
    con = sqlite3.connect(db)
    doc = json.loads(con.execute("SELECT document FROM measurements WHERE run_id = 2").fetchone()[0])
    doc["metrics"]["ti"]["histogram"]["bins"][0][2] = 2**62
    doc["metrics"]["misses"] = {"kind": "scalar", "value": 1e300}
    con.execute("UPDATE measurements SET document = ? WHERE run_id = 2", (json.dumps(doc),))
    con.commit()
    con.close()
    p = rtgauge("compare", "1", "2", "--db", str(db), timeout=600)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr


def test_pwcet_samples_are_bounded_regular_files(tmp_path):
    with pytest.raises(UserError, match="not a regular file"):
        read_samples("/dev/zero")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    done = []
    t = threading.Thread(target=lambda: done.append(pytest.raises(UserError, read_samples, str(fifo))), daemon=True)
    t.start()
    t.join(60)
    assert done, "reading a FIFO blocked"
    cut = tmp_path / "cut.bin"
    records = np.zeros(3, dtype=BINARY_DTYPE)
    records["cycle"] = [0, 1, 2]
    cut.write_bytes(BINARY_MAGIC + np.uint32(BINARY_DTYPE.itemsize).tobytes() + b"\0" * 4 + records.tobytes()[:-5])
    with pytest.raises(UserError, match="ends inside a record"):
        read_samples(str(cut))


@pytest.mark.parametrize("args,fragment", [
    (["--block-cycles", str(2**70)], "--block-cycles must be"),
    (["--exceedance", "1e-320"], "--exceedance must be a probability from 1e-18"),
])
def test_pwcet_options_are_bounded(tmp_path, args, fragment):
    from rtgauge.cli.pwcet import parse_block, parse_probability
    with pytest.raises(UserError, match=fragment):
        (parse_block if args[0] == "--block-cycles" else parse_probability)(args[1])


def test_a_foreign_database_is_never_written(tmp_path):
    other = tmp_path / "other-app.db"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE contacts (name TEXT)")
    con.execute("INSERT INTO contacts VALUES ('a')")
    con.commit()
    con.close()
    before = other.read_bytes()
    from rtgauge.store import open_store
    with pytest.raises(UserError, match="not an rtgauge database"):
        open_store(str(other))
    assert other.read_bytes() == before
    con = sqlite3.connect(other)
    assert [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")] == ["contacts"]
    con.close()


def test_ssh_addresses_are_bounded_and_round_trip():
    a = remote.parse("ssh://root@[::1]:22")
    assert a.host == "::1" and remote.parse(str(a)) == a
    for bad in ("ssh://root@" + "a" * 300, "ssh://root@\ud800", "ssh://root@" + "b" * 64 + ".example"):
        with pytest.raises(UserError, match="not an SSH address"):
            remote.parse(bad)


def test_a_lab_name_cannot_leave_its_directory(tmp_path):
    from rtgauge.lab.config import parse_lab
    with pytest.raises(UserError, match="it names files"):
        parse_lab({"name": "../../esc", "profile": "quick", "db": "postgresql://u@h/db",
                   "targets": ["ssh://b"]}, tmp_path / "lab.toml", "lab.toml")


def test_sigterm_stops_a_command_and_removes_its_temporaries(tmp_path):
    """SIGTERM ends a command the way Ctrl-C does: its `finally` blocks run (exit 130)."""
    script = ("import sys, tempfile, shutil, time\n"
              "from rtgauge.cli import terminate_like_interrupt\n"
              "from rtgauge.errors import run_reporting_errors\n"
              "def slow():\n"
              f"    d = tempfile.mkdtemp(prefix='rtgauge-target-tree-', dir={str(tmp_path)!r})\n"
              "    try:\n        print('ready', flush=True); time.sleep(600)\n"
              "    finally:\n        shutil.rmtree(d)\n"
              "terminate_like_interrupt()   # as cli.main does before every command\n"
              "sys.exit(run_reporting_errors(slow))\n")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)), text=True)
    assert proc.stdout.readline().strip() == "ready"
    proc.terminate()
    assert proc.wait(60) == 130, proc.stderr.read()
    assert not list(tmp_path.glob("rtgauge-target-tree-*"))
