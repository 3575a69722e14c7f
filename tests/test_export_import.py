"""`rtgauge export` and `rtgauge import`: a run goes to another machine and back
unchanged; engine documents from a board without Python become a run."""

from __future__ import annotations

import csv
from functools import partial
import io
import json

from rtgauge.store import open_store
from test_report_builders import HOSTILE, RATED_N, full_run_documents, store_run
from conftest import rtgauge


rtgauge = partial(rtgauge, timeout=600)     # a watchdog: its slowest calls take minutes on a loaded machine


def comparable(run: dict) -> list:
    return [{k: m[k] for k in ("name", "tool", "test", "condition", "reference", "ok", "params", "env", "metrics",
                               "verdicts", "document", "load", "duration_s")} for m in run["measurements"]]


def test_json_export_imports_unchanged_into_another_database(tmp_path):
    src, dst = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    run_id = store_run(src, full_run_documents())
    out = tmp_path / "run.json"
    p = rtgauge("export", str(run_id), "--db", src, "--format", "json", "-o", str(out))
    assert p.returncode == 0, p.stderr
    p = rtgauge("import", str(out), "--db", dst)
    assert p.returncode == 0, p.stderr
    with open_store(src) as a, open_store(dst) as b:
        original, imported = a.get_run(run_id).to_dict(), b.get_run(b.latest_run_id()).to_dict()
    assert comparable(imported) == comparable(original)
    # the machine id leaves the machine hashed (an older run stored it raw)
    from rtgauge.owner import hash_machine_id
    assert imported["system"]["machine_id"] == hash_machine_id(original["system"]["machine_id"]) != \
        original["system"]["machine_id"]
    assert f'"machine_id": "{original["system"]["machine_id"]}"' not in out.read_text()
    assert dict(imported["system"], machine_id=None) == dict(original["system"], machine_id=None)
    assert imported["doctor"] == original["doctor"]
    assert imported["status"] == "complete" and imported["note"] == original["note"]
    # the run keeps its own start and end, and says where it came from (stored and shown)
    assert (imported["started_at"], imported["finished_at"]) == (original["started_at"], original["finished_at"])
    assert imported["origin"]["format"] == "rtgauge export" and imported["origin"]["file"] == "run.json"
    assert imported["origin"]["run"] == run_id
    shown = rtgauge("show", str(imported["id"]), "--db", dst)
    assert "origin: imported from rtgauge export run.json" in shown.stdout, shown.stdout
    # the same export again, or the imported run exported and imported again: no second run
    again = rtgauge("import", str(out), "--db", dst)
    assert again.returncode == 0 and f"imported before as run {imported['id']}" in again.stdout, again.stderr
    out2 = tmp_path / "again.json"
    assert rtgauge("export", str(imported["id"]), "--db", dst, "-o", str(out2)).returncode == 0
    assert rtgauge("import", str(out2), "--db", dst).returncode == 0
    home = rtgauge("import", str(out2), "--db", src)        # back home: it is the original run itself
    assert home.returncode == 0 and f"imported before as run {run_id}" in home.stdout, home.stderr
    with open_store(src) as a, open_store(dst) as b:
        assert len(b.list_runs()) == 1 and len(a.list_runs()) == 1
    third = f"sqlite:///{tmp_path / 'c.db'}"                 # a third machine: the first origin is kept
    assert rtgauge("import", str(out2), "--db", third).returncode == 0
    with open_store(third) as c:
        chained = c.get_run(c.latest_run_id()).to_dict()
    assert chained["origin"]["identity"] == imported["origin"]["identity"]
    assert chained["origin"]["first"]["file"] == "run.json" and chained["started_at"] == original["started_at"]


def test_a_whole_database_imports(tmp_path):
    src, dst = tmp_path / "a.db", f"sqlite:///{tmp_path / 'b.db'}"
    store_run(f"sqlite:///{src}", full_run_documents()[:3])
    store_run(f"sqlite:///{src}", full_run_documents()[3:6])
    p = rtgauge("import", str(src), "--db", dst)
    assert p.returncode == 0, p.stderr
    with open_store(dst) as b:
        assert [r["measurements"] for r in b.list_runs()] == [3, 3]


def test_csv_and_markdown(tmp_path):
    url = f"sqlite:///{tmp_path / 'a.db'}"
    run_id = store_run(url, full_run_documents(n=RATED_N))   # long enough to be rated
    p = rtgauge("export", str(run_id), "--db", url, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(p.stdout)))
    mx = [r for r in rows if r["measurement"] == "latency@idle" and r["metric"] == "ti" and r["statistic"] == "max"]
    assert [r["value"] for r in mx] == ["40000"]
    assert any(r["kind"] == "verdict" and r["value"] == "0" for r in rows)
    p = rtgauge("export", str(run_id), "--db", url, "--format", "md")
    assert p.returncode == 0 and "## Wake-up latency (µs)" in p.stdout and "| latency@idle | engine | idle |" in p.stdout
    assert "★★★★★" in p.stdout


def test_engine_documents_from_a_board_become_a_run(tmp_path, run_engine):
    board = tmp_path / "board"
    board.mkdir()
    for cond in ("idle", "cpu"):
        r = run_engine("latency", "--duration-s", "0.3", "--allow-fallback", "--out", str(board / f"latency@{cond}.json"),
                       check_json=False)
        assert r.status == 0, r.stderr
    dst = f"sqlite:///{tmp_path / 'b.db'}"
    p = rtgauge("import", str(board), "--db", dst)
    assert p.returncode == 0, p.stderr
    with open_store(dst) as b:
        run = b.get_run(b.latest_run_id()).to_dict()
    doc = json.loads((board / "latency@idle.json").read_text())
    assert run["system"]["hostname"] == doc["env"]["hostname"]
    assert run["system"]["kernel_release"] == doc["env"]["kernel"]
    assert [(m["name"], m["condition"]) for m in run["measurements"]] == [("latency@cpu", "cpu"), ("latency@idle", "idle")]
    assert run["measurements"][1]["metrics"]["ti"]["max"] == doc["metrics"]["ti"]["max"]
    p = rtgauge("report", "--db", dst, "-o", str(tmp_path / "r.html"))
    assert p.returncode == 0 and "Wake-up latency" in (tmp_path / "r.html").read_text()


def test_bad_input_stores_nothing(tmp_path):
    dst = tmp_path / "b.db"
    url = f"sqlite:///{dst}"
    store_run(url, full_run_documents()[:1])
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "a@idle.json").write_text(json.dumps(full_run_documents()[0][1]))
    (bad / "b@idle.json").write_text("{not json")
    notdoc = tmp_path / "x.json"
    notdoc.write_text(json.dumps({"hello": HOSTILE}))
    for source, message in ((bad, "is not valid JSON"), (notdoc, "neither an rtgauge export"),
                            (tmp_path / "missing", "does not exist")):
        p = rtgauge("import", str(source), "--db", url)
        assert p.returncode == 2 and message in p.stderr and "Traceback" not in p.stderr, p.stderr
    with open_store(url) as s:
        assert len(s.list_runs()) == 1


def test_every_export_validates_against_the_versioned_schema(tmp_path):
    """The export's JSON schema (rtgauge/store/validate.py EXPORT_SCHEMA, versioned by
    "rtgauge_export" and its $id) is a valid 2020-12 schema; the export of a full run,
    and of that run imported elsewhere, validate with the jsonschema library itself;
    a file that does not is refused with one sentence that names the place."""
    import jsonschema

    from rtgauge.store.validate import EXPORT_FORMAT, EXPORT_SCHEMA
    jsonschema.Draft202012Validator.check_schema(EXPORT_SCHEMA)
    assert EXPORT_SCHEMA["$id"].endswith(f":{EXPORT_FORMAT}")
    src, dst = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    run_id = store_run(src, full_run_documents())
    first = json.loads(rtgauge("export", str(run_id), "--db", src).stdout)
    assert first["rtgauge_export"] == EXPORT_FORMAT
    jsonschema.validate(first, EXPORT_SCHEMA, cls=jsonschema.Draft202012Validator)
    (tmp_path / "a.json").write_text(json.dumps(first))
    assert rtgauge("import", str(tmp_path / "a.json"), "--db", dst).returncode == 0
    second = json.loads(rtgauge("export", "latest", "--db", dst).stdout)
    jsonschema.validate(second, EXPORT_SCHEMA, cls=jsonschema.Draft202012Validator)
    assert second["run"]["origin"]["format"] == "rtgauge export"
    second["run"]["origin"]["identity"] = ""
    (tmp_path / "b.json").write_text(json.dumps(second))
    p = rtgauge("import", str(tmp_path / "b.json"), "--db", dst)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "run/origin/identity" in p.stderr and "Traceback" not in p.stderr


def test_rounds_go_to_another_machine_and_an_older_export_loses_its_name_tags(tmp_path):
    """A job's rounds travel in the export as fields; an export written before store
    schema 4 (the round coded into the name, `NAME#rK`, beside load.round) imports
    with the job's name and its round."""
    src = f"sqlite:///{tmp_path / 'a.db'}"
    docs = [(dict(j, round=k, load=dict(j.get("load") or {}, round={"index": k, "of": 2})), d)
            for k in (1, 2) for j, d in full_run_documents()[:2]]
    run_id = store_run(src, docs)
    text = rtgauge("export", str(run_id), "--db", src).stdout
    old = json.loads(text)
    for m in old["run"]["measurements"]:
        base, slash, tool = m["name"].partition("/")
        m["name"] = f"{base}#r{m.pop('round')}{slash}{tool}"
    (tmp_path / "new.json").write_text(text)
    (tmp_path / "old.json").write_text(json.dumps(old))
    got = []
    for name in ("new", "old"):          # each into a database of its own: it is the same run
        dst = f"sqlite:///{tmp_path / name}.db"
        p = rtgauge("import", str(tmp_path / f"{name}.json"), "--db", dst)
        assert p.returncode == 0, p.stderr
        with open_store(dst) as b:
            got.append([(m.name, m.round) for m in b.get_run(b.latest_run_id()).measurements])
    with open_store(src) as a:
        want = [(m.name, m.round) for m in a.get_run(run_id).measurements]
    assert all("#" not in n for n, _ in want) and {r for _, r in want} == {1, 2}
    assert got == [want, want]


def test_a_version_2_database_is_migrated_to_keep_origins(tmp_path):
    """Store version 3 adds runs.origin and runs.origin_key: a version 2 database (as the
    previous rtgauge left it) is migrated on open, its runs read back with no origin,
    and an import into it is recognised the second time (the steps after 3 run too)."""
    import sqlite3

    from rtgauge.store import SCHEMA_VERSION
    assert SCHEMA_VERSION == 4
    path = tmp_path / "v2.db"
    old = store_run(f"sqlite:///{path}", full_run_documents()[:2])
    con = sqlite3.connect(path)
    con.execute("DROP INDEX ix_runs_origin_key")
    con.execute("ALTER TABLE runs DROP COLUMN origin_key")
    con.execute("ALTER TABLE runs DROP COLUMN origin")
    con.execute("ALTER TABLE measurements DROP COLUMN round")      # schema 4's
    con.execute("ALTER TABLE measurements DROP COLUMN segment")
    con.execute("UPDATE schema_version SET version = 2")    # a new database holds one row, its version
    con.commit()
    con.close()
    export = tmp_path / "x.json"
    export.write_text(rtgauge("export", str(old), "--db", str(path)).stdout.replace(
        '"started_at": "', '"started_at": "2020-01-01T00:00:00+00:00", "was": "', 1))
    for _ in range(2):
        assert rtgauge("import", str(export), "--db", str(path)).returncode == 0
    with open_store(f"sqlite:///{path}") as store:
        assert store.get_run(old).to_dict()["origin"] is None
        runs = store.list_runs()
    assert len(runs) == 2 and runs[0]["started_at"] == "2020-01-01T00:00:00+00:00"
    con = sqlite3.connect(path)
    assert con.execute("SELECT max(version) FROM schema_version").fetchone()[0] == SCHEMA_VERSION
    con.close()
