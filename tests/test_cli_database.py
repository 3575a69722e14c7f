"""A reading command (show, compare, report, export, pwcet) given a database that is not
there says so in one sentence and exits 2, instead of "no runs yet"; it creates nothing.
The database is --db, else $RTGAUGE_DB, else the config file's db (docs/config.md)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rtgauge.store import open_store
from test_store import DOCTOR, SYSTEM, realistic_document, realistic_job

ROOT = Path(__file__).resolve().parent.parent
READERS = [["show"], ["show", "latest"], ["compare", "1", "2"], ["report", "1"], ["export", "1"], ["pwcet", "1"]]


def rtgauge(*args: str, cwd: Path, **env_extra: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), XDG_DATA_HOME=str(cwd / "data"),
               XDG_CONFIG_HOME=str(cwd / "config"))
    for name in ("RTGAUGE_DB", "RTGAUGE_CONFIG"):
        env.pop(name, None)
    env.update(env_extra)
    from conftest import rtgauge as cli
    return cli(*args, env_full=env, cwd=cwd, timeout=120)


def one_sentence(p: subprocess.CompletedProcess) -> str:
    assert p.returncode == 2 and p.stdout == "" and "Traceback" not in p.stderr, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    return lines[0]


@pytest.mark.parametrize("reader", READERS, ids=" ".join)
def test_a_missing_database_is_an_error(tmp_path, reader):
    missing = tmp_path / "nowhere" / "x.db"
    line = one_sentence(rtgauge(*reader, "--db", str(missing), cwd=tmp_path))
    assert f"no results database at {missing}" in line and "sqlite:////" in line
    assert not (tmp_path / "nowhere").exists(), "looking created something"


def test_a_relative_sqlite_url_is_named_as_such(tmp_path):
    line = one_sentence(rtgauge("show", "--db", "sqlite:///runs/x.db", cwd=tmp_path))
    assert str(tmp_path / "runs" / "x.db") in line and "relative to this directory" in line
    # the same URL where the file is there relative to the working directory: it is read
    (tmp_path / "runs").mkdir()
    with open_store(str(tmp_path / "runs" / "x.db")) as store:
        run = store.begin_run(SYSTEM, DOCTOR, "quick", "builtin:quick", ["rtgauge", "run"])
        store.add_measurement(run, realistic_job("latency-idle", "idle"), realistic_document())
        store.finish_run(run, "complete", "")
    p = rtgauge("show", "--db", "sqlite:///runs/x.db", "--format", "tsv", cwd=tmp_path)
    assert p.returncode == 0 and "\nrun\t" in p.stdout


def test_the_help_gives_the_url_form_that_works(tmp_path):
    p = rtgauge("show", "--help", cwd=tmp_path)
    assert "sqlite:////ABSOLUTE/PATH" in " ".join(p.stdout.split())


def test_the_default_database_not_yet_made_is_no_runs(tmp_path):
    p = rtgauge("show", cwd=tmp_path)
    assert p.returncode == 0 and "no runs" in p.stdout
    assert not (tmp_path / "data").exists() or not any((tmp_path / "data").rglob("*.db"))


def test_rtgauge_db_and_the_config_file_choose_the_database(tmp_path):
    db = tmp_path / "chosen.db"
    with open_store(str(db)) as store:
        run = store.begin_run(dict(SYSTEM, hostname="from-env"), DOCTOR, "quick", "builtin:quick", [])
        store.finish_run(run, "complete", "")
    assert "from-env" in rtgauge("show", "--format", "tsv", cwd=tmp_path, RTGAUGE_DB=str(db)).stdout
    (tmp_path / "config" / "rtgauge").mkdir(parents=True)
    (tmp_path / "config" / "rtgauge" / "config.toml").write_text('db = "../../chosen.db"\n')
    assert "from-env" in rtgauge("show", "--format", "tsv", cwd=tmp_path).stdout    # relative to the file
    # a named database that is missing is an error whichever way it was named
    line = one_sentence(rtgauge("show", cwd=tmp_path, RTGAUGE_DB=str(tmp_path / "gone.db")))
    assert "RTGAUGE_DB" in line
