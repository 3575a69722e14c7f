"""A database password never shows: not in a stored run's argv, a report, an export, a
lab child's argv, nor a message. URLs are masked by their structure (SQLAlchemy's
parser: the userinfo password and secret query parameters), never by replacing a
substring (which leaked ?password= and turned "port" into "***ort"). Over a real
PostgreSQL (tests/pgserver.py, trust authentication: any password is accepted, so the
password is only ever a thing to hide)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from pgserver import postgres_server  # noqa: F401  (session fixture)
from rtgauge.errors import UserError
from rtgauge.redact import mask_text, mask_url, redact_argv
from rtgauge.store import open_store
from rtgauge.store.store import short_reason
from conftest import rtgauge

REPO = Path(__file__).resolve().parents[2]
SECRET = "Zq7secretPW"


def test_masking_by_structure():
    assert mask_url(f"postgresql://u:{SECRET}@h/db") == "postgresql://u:***@h/db"
    masked = mask_url(f"postgresql://u@h/db?password={SECRET}&sslpassword={SECRET}&sslmode=require")
    assert SECRET not in masked and "sslmode=require" in masked
    assert mask_url("postgresql://u@h:5432/db") == "postgresql://u@h:5432/db"      # nothing to hide: unchanged
    assert SECRET not in mask_url(f"postgresql://u:{SECRET}@[::1:5432/db")      # unparseable: still by position
    # a short password that is part of other words does not mangle them
    assert mask_text('invalid port number "x" at server 127.0.0.1', ("p",)) == \
        'invalid port number "x" at server 127.0.0.1'
    assert mask_text(f"failed: password={SECRET} host=h") == "failed: password=*** host=h"
    argv = ["rtgauge", "run", "--db", f"postgresql://u:{SECRET}@h/db", f"--db=postgresql://u@h/db?password={SECRET}"]
    assert SECRET not in json.dumps(redact_argv(argv))


def test_driver_messages_are_masked_without_mangling():
    class Orig(Exception):
        pass
    e = Orig(f'connection to server at "127.0.0.1", port 1 failed: password={SECRET} rejected')
    reason = short_reason(e, "1")
    assert SECRET not in reason and 'at "127.0.0.1", port' in reason


@pytest.fixture
def stored(postgres_server, tmp_path, engine_bin):
    """A run stored over a URL with the password in it, by a command line that holds it."""
    base = postgres_server.new_database()
    url = base.replace("@127.0.0.1", f":{SECRET}@127.0.0.1")
    url_q = base + f"?password={SECRET}"
    doc = tmp_path / "lat.json"
    subprocess.run([engine_bin, "latency", "--duration-s", "0.2", "--policy", "other", "--out", str(doc)],
                   check=True, capture_output=True, timeout=120)
    from rtgauge.sysinfo.facts import collect_facts
    with open_store(url) as store:
        rid = store.begin_run(collect_facts(), [], "quick", "builtin",
                              ["rtgauge", "run", "--db", url, f"--db={url_q}", "--note", SECRET])
        store.add_measurement(rid, {"name": "lat", "tool": "engine", "test": "latency", "condition": "idle"},
                              json.loads(doc.read_text()))
        store.finish_run(rid, "complete", "1 of 1 jobs measured")
    return url, url_q, rid, postgres_server.port


def test_no_secret_in_stored_run_report_export_or_message(stored, tmp_path):
    url, url_q, rid, port = stored
    with open_store(url_q) as store:
        run = store.get_run(rid).to_dict()
    assert "***" in " ".join(run["argv"]) and SECRET in run["argv"]        # the --note argument itself is kept
    assert all(SECRET not in a for a in run["argv"] if "://" in a)
    env = {"RTGAUGE_DB": url}                    # the password through the environment, not argv
    report = tmp_path / "r.html"
    p = rtgauge("report", str(rid), "-o", str(report), env=env)
    assert p.returncode == 0, p.stderr
    page = report.read_text()
    assert "postgresql://" in page and f":{SECRET}@" not in page and f"password={SECRET}" not in page
    p = rtgauge("export", str(rid), "--format", "json", env=env)
    assert p.returncode == 0, p.stderr
    assert f":{SECRET}@" not in p.stdout and f"password={SECRET}" not in p.stdout
    # a failing connection says why without the password, through either way of giving it
    for bad in (url.replace(f":{port}/", ":1/"), url_q.replace(f":{port}/", ":1/")):
        p = rtgauge("show", "--db", bad)
        assert p.returncode != 0 and "Traceback" not in p.stderr
        assert SECRET not in p.stderr, p.stderr
        assert len(p.stderr.strip().splitlines()) == 1


def test_lab_children_get_the_database_through_the_environment(tmp_path):
    from rtgauge.lab.config import Lab, Target
    from rtgauge.lab.runner import child_command
    import dataclasses
    fields = {f.name: None for f in dataclasses.fields(Lab)}
    fields.update(name="l", profile="quick", db=f"postgresql://u:{SECRET}@h/db", targets=[Target("t", "ssh://t")],
                  path=tmp_path / "lab.toml")
    lab = Lab(**fields)
    cmd = child_command(lab, "ssh://t", tmp_path / "01-t.run-id")
    assert "--db" not in cmd and SECRET not in " ".join(cmd)


def test_in_memory_sqlite_is_refused():
    from rtgauge.store.urls import normalise_url
    for url in ("sqlite://", "sqlite:///:memory:"):
        with pytest.raises(UserError, match="in-memory"):
            normalise_url(url)
