"""Import and export faults the table cannot hold: a database named through a hard link,
a half-stored run on PostgreSQL, a failed export over a previous file, a symlink planted
where an export goes, formula cells in CSV, an import under a memory limit."""

from __future__ import annotations

import csv
from functools import partial
import io
import json
import os
import resource
import signal
import sqlite3
import sys
from pathlib import Path

import pytest

from rtgauge.store import open_store

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from pgserver import postgres_server  # noqa: E402,F401  (session fixture)
from conftest import import_engine_latency, one_sentence, rtgauge


rtgauge = partial(rtgauge, timeout=900)     # a watchdog: its slowest calls take minutes on a loaded machine


@pytest.fixture(scope="module")
def one_run(tmp_path_factory, engine_bin):
    """A database with one real run (an engine latency document imported)."""
    d = tmp_path_factory.mktemp("one-run")
    doc = import_engine_latency(engine_bin, d / "lat.json", d / "base.db")
    return {"db": d / "base.db", "doc": doc}


def contents(db: Path) -> list:
    con = sqlite3.connect(db)
    try:
        return [con.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall() for t in ("runs", "measurements", "metrics")]
    finally:
        con.close()


def test_importing_a_database_into_itself_through_a_hard_link(one_run, tmp_path):
    db = tmp_path / "db.sqlite"
    db.write_bytes(one_run["db"].read_bytes())
    link = tmp_path / "other-name.db"
    os.link(db, link)
    before = contents(db)
    for name in (link, f"{tmp_path}/./db.sqlite", f"{tmp_path}/../{tmp_path.name}/db.sqlite"):
        assert "being imported into" in one_sentence(rtgauge("import", str(name), "--db", str(db)))
    assert contents(db) == before


@pytest.mark.postgres
def test_an_import_failing_half_way_on_postgresql_leaves_nothing(postgres_server, one_run):
    """One transaction: the second measurement cannot be stored (PostgreSQL refuses a NUL
    in text), so neither the run nor the first measurement stays. And through the
    command, a NUL is one sentence before anything is stored."""
    url = postgres_server.new_database()
    doc = json.loads(one_run["doc"].read_text())
    job = {"name": "lat@idle", "tool": "engine", "test": "latency", "condition": "idle", "reference": False,
           "load": {}, "command": []}
    run = {"system": {"hostname": "h"}, "status": "complete", "started_at": "2026-01-01T00:00:00+00:00"}
    with open_store(url) as store:
        with pytest.raises(Exception):
            store.import_run(run, [(job, doc), (dict(job, name="bad\x00name"), doc)],
                             {"format": "test", "identity": "x"})
        assert store.list_runs() == []
    data = json.loads(rtgauge("export", "1", "--db", str(one_run["db"])).stdout)
    data["run"]["note"] = "a\x00b"
    bad = Path(one_run["db"]).parent / "nul.json"
    bad.write_text(json.dumps(data))
    assert "NUL character" in one_sentence(rtgauge("import", str(bad), "--db", url))
    with open_store(url) as store:
        assert store.list_runs() == []


def test_a_failed_export_leaves_the_previous_file(one_run, tmp_path):
    out = tmp_path / "run.json"
    assert rtgauge("export", "1", "--db", str(one_run["db"]), "-o", str(out)).returncode == 0
    previous = out.read_bytes()

    def small_files():   # the export is bigger than this: the write fails part-way (EFBIG)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (2000, 2000))
    p = rtgauge("export", "1", "--db", str(one_run["db"]), "--format", "csv", "-o", str(out), preexec_fn=small_files)
    assert "cannot write" in one_sentence(p, 2)
    assert out.read_bytes() == previous
    assert sorted(x.name for x in tmp_path.iterdir()) == ["run.json"]      # no temporary file left


def test_an_export_refuses_a_planted_symlink_and_never_writes_its_target(one_run, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("untouched")
    link = tmp_path / "out.md"
    link.symlink_to(victim)
    p = rtgauge("export", "1", "--db", str(one_run["db"]), "--format", "md", "-o", str(link))
    assert "symbolic link" in one_sentence(p, 2)
    assert victim.read_text() == "untouched"
    assert link.is_symlink()


def test_csv_cells_that_a_spreadsheet_would_run_are_text(one_run, tmp_path):
    doc = json.loads(one_run["doc"].read_text())
    doc["env"]["hostname"] = "=HYPERLINK(\"http://x\",\"y\")"
    doc["env"]["kernel"] = "@SUM(1+1)"
    path = tmp_path / "-cmd@idle.json"
    path.write_text(json.dumps(doc))
    db = tmp_path / "f.db"
    assert rtgauge("import", str(path), "--db", str(db)).returncode == 0
    p = rtgauge("export", "1", "--db", str(db), "--format", "csv")
    assert p.returncode == 0, p.stderr
    rows = list(csv.reader(io.StringIO(p.stdout)))
    text_cells = [c for r in rows for c in r if c and not _number(c)]
    assert all(not c.startswith(("=", "+", "-", "@")) for c in text_cells), text_cells
    assert "'=HYPERLINK(\"http://x\",\"y\")" in {r[1] for r in rows} and "'-cmd@idle" in {r[3] for r in rows}


def _number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def test_an_import_under_a_memory_limit_is_one_sentence(one_run, tmp_path):
    """A valid export of ~40 MB (a long series) imported with 600 MB of address space:
    the parse runs out of memory; the user gets a sentence, not a MemoryError traceback,
    and nothing is stored."""
    export = json.loads(rtgauge("export", "1", "--db", str(one_run["db"])).stdout)
    m = export["run"]["measurements"][0]
    m["document"]["params"]["padding"] = [[i, i + 1, i + 2] for i in range(1_500_000)]
    big = tmp_path / "big.json"
    big.write_text(json.dumps(export))
    db = tmp_path / "m.db"
    db.write_bytes(one_run["db"].read_bytes())
    before = contents(db)

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (600 * 1024**2, 600 * 1024**2))
    p = rtgauge("import", str(big), "--db", str(db), preexec_fn=limit)
    assert "memory" in one_sentence(p, 2)
    assert contents(db) == before
