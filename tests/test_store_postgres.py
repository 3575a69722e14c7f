"""PostgreSQL-only behaviour of the store: many machines reporting into one
database at once, and what a user sees when the server or database is wrong.
(The round-trip tests in test_store.py run against PostgreSQL as well.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pgserver import postgres_server  # noqa: F401  (session fixture)
from rtgauge.errors import UserError
from rtgauge.store import open_store
from test_store import SYSTEM, realistic_document, realistic_job

REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.postgres

RIG = textwrap.dedent("""
    import json, sys
    from rtgauge.store import open_store
    url, system, doc, job = sys.argv[1], *map(json.loads, sys.argv[2:5])
    with open_store(url) as store:
        run_id = store.begin_run(system, [], "quick", "builtin:quick", ["rtgauge", "run"])
        store.add_measurement(run_id, job, doc)
        store.finish_run(run_id, "complete")
    print(run_id)
""")


def test_rigs_reporting_at_once_into_a_new_database(postgres_server):
    """Several processes create the schema and the same system row at the same
    moment: every run is stored, the schema once, the system once."""
    url = postgres_server.new_database()
    args = [json.dumps(SYSTEM), json.dumps(realistic_document()), json.dumps(realistic_job())]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    rigs = [subprocess.Popen([sys.executable, "-c", RIG, url, *args], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, cwd=REPO, env=env) for _ in range(6)]
    results = [(rig.wait(timeout=120), *rig.communicate()) for rig in rigs]
    assert all(status == 0 for status, _, _ in results), [err for _, _, err in results]
    run_ids = sorted(int(out) for _, out, _ in results)
    with open_store(url) as store:
        runs = store.list_runs()
        assert sorted(r["id"] for r in runs) == run_ids
        assert all(r["status"] == "complete" and r["measurements"] == 1 for r in runs)
        assert len({store.get_run(i).to_dict()["system_id"] for i in run_ids}) == 1


def test_a_missing_database_is_named(postgres_server):
    url = postgres_server.url("no_such_results")
    with pytest.raises(UserError) as e:
        open_store(url)
    message = str(e.value)
    assert "no_such_results" in message and "does not exist" in message
    assert "\n" not in message


def test_store_url_reads_as_given(postgres_server):
    url = postgres_server.new_database()
    with open_store(url) as store:
        assert store.url == url
