"""The results store, run against SQLite and a real PostgreSQL server (the same
tests, parametrized), with documents shaped like the engine's JSON contract."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import create_engine, func, inspect, select, text

from pgserver import postgres_server  # noqa: F401  (session fixture)
from rtgauge.errors import UserError
from rtgauge.store import SCHEMA_VERSION, open_store
from rtgauge.store import schema as tables
from rtgauge.store import store as store_module
from rtgauge.store.urls import normalise_url

REPO = Path(__file__).resolve().parent.parent

SYSTEM = {
    "hostname": "rig-1", "machine_id": "0f3c", "kernel_release": "6.1.0-27-rt-amd64",
    "kernel_version": "#1 SMP PREEMPT_RT Debian 6.1.115-1", "arch": "x86_64",
    "cpu_model": "Intel(R) Xeon(R) CPU E5-2680 v4", "cpus": 2, "preempt_model": "PREEMPT_RT",
    "governor": "performance",
}
DOCTOR = [
    {"name": "rt_throttling", "status": "ok", "value": "950000/1000000", "advice": ""},
    {"name": "smt", "status": "warn", "value": "on", "advice": "Turn SMT off in firmware or with nosmt."},
]


def distribution(values: list[int], linear: bool = False) -> dict:
    """A distribution metric computed from values, with one log-linear bin per distinct value."""
    ordered = sorted(values)
    n = len(ordered)
    avg = sum(ordered) / n
    bins = [[v, v, ordered.count(v)] for v in sorted(set(ordered))]
    metric = {
        "unit": "ns", "count": n, "min": ordered[0], "avg": avg,
        "stddev": (sum((v - avg) ** 2 for v in ordered) / n) ** 0.5,
        "p50": ordered[n // 2], "p90": ordered[int(n * 0.9)], "p99": ordered[int(n * 0.99)],
        "p999": ordered[-1], "p9999": ordered[-1], "max": ordered[-1],
        "histogram": {"scheme": "log-linear", "sub_buckets": 128, "bins": bins},
    }
    if linear:
        counts = [0] * 10
        overflow = 0
        for v in ordered:
            if v // 1000 < len(counts):
                counts[v // 1000] += 1
            else:
                overflow += 1
        metric["linear"] = {"bucket_ns": 1000, "counts": counts, "overflow": overflow}
    return metric


def realistic_document(misses: int = 1, ok: bool = True) -> dict:
    """A two-thread latency document as the contract describes it."""
    t0 = [1800, 2100, 2100, 2500, 3300, 9100, 251_000]
    t1 = [1700, 1900, 2200, 2200, 2400, 4100]
    doc = {
        "schema": 1, "test": "latency", "ok": ok, "interrupted": False,
        "params": {"interval_us": 1000, "duration_s": 2.0, "cycles": 0, "threads": 2, "cpus": "0-1",
                   "policy": "fifo", "priority": 80, "clock": "monotonic", "histogram": True,
                   "samples": None, "max_latency_us": 0, "window_ms": 1000},
        "env": {"policy": "fifo", "priority": 80, "fallback": False, "cpus": [0, 1], "mlocked": True,
                "clock": "monotonic", "timestamp_cost_ns": 19.5, "dma_latency": "held at 0",
                "kernel": "Linux 6.1.0-27-rt-amd64",
                "threads": [{"index": 0, "cpu": 0, "tid": 4101, "policy": "fifo", "priority": 80,
                             "fallback": False, "nvcsw": 2001, "nivcsw": 3},
                            {"index": 1, "cpu": 1, "tid": 4102, "policy": "fifo", "priority": 80,
                             "fallback": False, "nvcsw": 2000, "nivcsw": 0}]},
        "metrics": {
            "ti": distribution(t0 + t1, linear=True),
            "ts": distribution([40, 41, 41, 55]),
            "tw": distribution([996_000, 997_500, 998_000]),
            "misses": {"unit": "count", "value": misses},
            "cycles": {"unit": "count", "value": 4000},
            "dropped": {"unit": "count", "value": 0},
            "ti_window_max": {"unit": "ns", "window_ns": 1_000_000_000, "start_ns": 123_456_789_012,
                              "max": [9100, None, 251_000]},
            "ti#0": distribution(t0),
            "ti#1": distribution(t1),
            "misses#0": {"unit": "count", "value": misses},
            "misses#1": {"unit": "count", "value": 0},
            # Fields the columns cannot hold must still come back: a null, an unknown key,
            # an integer beyond a double's exact range.
            "odd": {"unit": "ns", "count": 0, "min": None, "avg": None, "p95": 7,
                    "max": None, "histogram": {"scheme": "log-linear", "sub_buckets": 128, "bins": []}},
            "huge": {"unit": "count", "value": 2**60 + 1},
            "ratio": {"unit": "ratio", "value": 0.25},
        },
        "verdicts": {"max_latency": {"pass": False, "detail": "251.0 us > limit 200 us on cpu 0"},
                     "no_fallback": {"pass": True, "detail": "fifo 80 on every thread"}},
        "events": [{"cycle": 17, "cpu": 0, "ti_ns": 251_000}],
    }
    if not ok:
        doc["error"] = "the measuring thread on cpu 1 could not be started; free the CPU and retry."
    return doc


def realistic_job(name: str = "latency-cpu", condition: str = "cpu", reference: bool = False,
                  tool: str = "engine") -> dict:
    return {"name": name, "tool": tool, "test": "latency", "condition": condition,
            "reference": reference, "load": {"tool": "stress-ng", "workers": 2, "bogo_ops": 123456},
            "started_at": "2025-11-22T02:06:00.000001+00:00", "duration_s": 2.013, "exit_status": 0,
            "command": ["rtgauge-engine", "latency", "--duration-s", "2"]}


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path) -> str:
    """An empty database on each backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'results.db'}"
    return request.getfixturevalue("postgres_server").new_database()


@pytest.fixture
def store(store_url):
    with open_store(store_url) as s:
        yield s


def without_kind(metrics: dict) -> dict:
    return {name: {k: v for k, v in m.items() if k != "kind"} for name, m in metrics.items()}


def assert_round_trip(store, job: dict, doc: dict) -> dict:
    original = copy.deepcopy(doc)
    run_id = store.begin_run(SYSTEM, DOCTOR, "quick", "builtin:quick", ["rtgauge", "run"])
    mid = store.add_measurement(run_id, job, doc)
    run = store.get_run(run_id).to_dict()
    assert doc == original, "add_measurement must not change the caller's document"
    [m] = run["measurements"]
    assert m["id"] == mid
    for key in ("name", "tool", "test", "condition", "reference", "load", "started_at",
                "duration_s", "exit_status", "command"):
        assert m[key] == job[key], key
    assert m["ok"] is doc["ok"]
    assert m["interrupted"] is doc["interrupted"]
    assert m["error"] == doc.get("error")
    assert m["params"] == doc["params"]
    assert m["env"] == doc["env"]
    assert m["document"] == doc
    assert json.dumps(m["document"], sort_keys=True) == json.dumps(doc, sort_keys=True)
    assert list(m["metrics"]) == list(doc["metrics"]), "metric order is kept"
    for name, metric in doc["metrics"].items():
        assert without_kind(m["metrics"])[name] == metric, name
    assert m["verdicts"] == doc.get("verdicts", {})
    return m


def test_handmade_document_round_trips_field_by_field(store):
    doc = realistic_document()
    m = assert_round_trip(store, realistic_job(), doc)
    kinds = {name: metric["kind"] for name, metric in m["metrics"].items()}
    assert kinds["ti"] == kinds["ti#1"] == "distribution"
    assert kinds["misses"] == kinds["ratio"] == "scalar"
    assert kinds["ti_window_max"] == "series"
    assert m["metrics"]["ti_window_max"]["max"] == [9100, None, 251_000]
    assert m["metrics"]["huge"]["value"] == 2**60 + 1
    assert m["metrics"]["ti"]["linear"]["overflow"] == 1
    assert m["verdicts"]["max_latency"] == {"pass": False, "detail": "251.0 us > limit 200 us on cpu 0"}


def test_failed_document_round_trips(store):
    doc = realistic_document(ok=False)
    job = realistic_job(name="latency-idle", condition="idle")
    job["exit_status"] = 1
    m = assert_round_trip(store, job, doc)
    assert m["ok"] is False and "could not be started" in m["error"]


def test_cyclictest_reference_measurement_keeps_its_flag(store):
    m = assert_round_trip(store, realistic_job(name="cyclictest-cpu", tool="cyclictest", reference=True),
                          realistic_document())
    assert m["reference"] is True and m["tool"] == "cyclictest"


def engine_for_tests() -> str | None:
    path = os.environ.get("RTGAUGE_ENGINE")
    return path if path and os.access(path, os.X_OK) else None


@pytest.mark.skipif(engine_for_tests() is None, reason="set RTGAUGE_ENGINE to a built engine to store a real document")
def test_real_engine_document_round_trips(store):
    cmd = [engine_for_tests(), "latency", "--duration-s", "0.3"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert p.stdout.strip(), f"engine printed no JSON (status {p.returncode}): {p.stderr}"
    doc = json.loads(p.stdout)
    job = {"name": "latency-idle", "tool": "engine", "test": "latency", "condition": "idle",
           "reference": False, "load": {}, "started_at": "2025-11-22T00:00:00+00:00",
           "duration_s": 0.3, "exit_status": p.returncode, "command": cmd}
    m = assert_round_trip(store, job, doc)
    if doc.get("ok"):
        assert m["metrics"]["ti"]["kind"] == "distribution"
        assert m["metrics"]["ti"]["count"] > 0


def test_the_kind_of_an_engine_metric_is_the_catalogues(store):
    """An engine measurement's metrics are filed by the kind the engine's catalogue
    declares, not by their keys: a declared scalar (misses) that also carries a count is
    still a scalar (its count kept in the extra column); the same document from another
    tool, which no catalogue describes, is filed by its keys (a count: a distribution).
    Either way it reads back as written."""
    from rtgauge.catalogue import catalogue
    assert catalogue().tests["latency"].metric_for("misses").kind == "scalar"
    assert catalogue().tests["latency"].metric_for("ti#1").kind == "distribution"
    doc = realistic_document()
    doc["metrics"]["misses"] = {"unit": "count", "value": 1, "count": 7}
    engine = assert_round_trip(store, realistic_job("latency-idle", "idle"), doc)
    foreign = assert_round_trip(store, realistic_job("latency-idle/cyclictest", "idle", reference=True,
                                                     tool="cyclictest"), doc)
    assert engine["metrics"]["misses"]["kind"] == "scalar"
    assert foreign["metrics"]["misses"]["kind"] == "distribution"
    assert engine["metrics"]["ti#1"]["kind"] == foreign["metrics"]["ti#1"]["kind"] == "distribution"


def test_histogram_bins_and_statistics_are_relational(store, store_url):
    """The bins are rows one can aggregate in SQL, not only JSON text."""
    doc = realistic_document()
    run_id = store.begin_run(SYSTEM, DOCTOR, "quick", "builtin:quick", [])
    mid = store.add_measurement(run_id, realistic_job(), doc)
    engine = create_engine(normalise_url(store_url))
    try:
        with engine.connect() as conn:
            ti = conn.execute(select(tables.metrics).where(tables.metrics.c.measurement_id == mid,
                                                           tables.metrics.c.name == "ti")).one()
            binned = conn.execute(
                select(func.sum(tables.histogram_bins.c.count), func.max(tables.histogram_bins.c.hi_ns))
                .join(tables.histograms, tables.histograms.c.id == tables.histogram_bins.c.histogram_id)
                .where(tables.histograms.c.metric_id == ti.id)).one()
            failed = conn.execute(select(tables.verdicts.c.name).where(
                tables.verdicts.c.measurement_id == mid, tables.verdicts.c["pass"].is_(False))).scalars().all()
    finally:
        engine.dispose()
    assert ti.kind == "distribution" and ti.count == doc["metrics"]["ti"]["count"]
    assert ti.p99 == doc["metrics"]["ti"]["p99"] and ti.max == 251_000
    assert binned[0] == doc["metrics"]["ti"]["count"] and binned[1] == 251_000
    assert failed == ["max_latency"]


def test_system_record_is_reused_only_for_the_same_identity(store):
    first = store.begin_run(SYSTEM, DOCTOR, "quick", "builtin:quick", [])
    retuned = dict(SYSTEM, governor="powersave")  # not part of the identity
    second = store.begin_run(retuned, [], "quick", "builtin:quick", [])
    new_kernel = dict(SYSTEM, kernel_release="6.12.0-rt")
    third = store.begin_run(new_kernel, [], "quick", "builtin:quick", [])
    runs = {r: store.get_run(r).to_dict() for r in (first, second, third)}
    assert runs[first]["system_id"] == runs[second]["system_id"] != runs[third]["system_id"]
    assert runs[second]["system"]["governor"] == "powersave"
    assert runs[first]["system"] == SYSTEM
    assert runs[first]["doctor"] == DOCTOR
    assert runs[third]["kernel_release"] == "6.12.0-rt"


def test_system_without_identity_facts_is_stored(store):
    run_id = store.begin_run({"hostname": "bare"}, [], "quick", "builtin:quick", [])
    assert store.get_run(run_id).to_dict()["hostname"] == "bare"


def test_run_lifecycle_and_statuses(store):
    assert store.latest_run_id() is None
    assert store.list_runs() == []
    ids = []
    for status, note in (("complete", ""), ("interrupted", "SIGINT during latency-cpu"), ("failed", "engine missing")):
        run_id = store.begin_run(SYSTEM, DOCTOR, "quick", "builtin:quick", ["rtgauge", "run"])
        running = store.get_run(run_id).to_dict()
        assert running["status"] == "running" and running["finished_at"] is None
        assert running["started_at"].endswith("+00:00")
        store.finish_run(run_id, status, note)
        done = store.get_run(run_id).to_dict()
        assert (done["status"], done["note"]) == (status, note)
        assert done["finished_at"] >= done["started_at"]
        ids.append(run_id)
    assert store.latest_run_id() == ids[-1]
    with pytest.raises(ValueError):
        store.finish_run(ids[0], "done")
    with pytest.raises(ValueError):
        store.finish_run(ids[-1] + 100, "complete")
    assert store.get_run(ids[-1] + 100) is None
    with pytest.raises(ValueError):
        store.add_measurement(ids[-1] + 100, realistic_job(), realistic_document())


def test_list_runs_is_newest_first_with_measurement_counts(store):
    older = store.begin_run(SYSTEM, DOCTOR, "quick", "builtin:quick", [])
    store.add_measurement(older, realistic_job("latency-idle", "idle"), realistic_document())
    store.add_measurement(older, realistic_job("latency-cpu", "cpu"), realistic_document())
    store.finish_run(older, "complete")
    newer = store.begin_run(SYSTEM, DOCTOR, "standard", "/tmp/standard.toml", [])
    runs = store.list_runs()
    assert [r["id"] for r in runs] == [newer, older]
    assert [r["measurements"] for r in runs] == [0, 2]
    assert runs[1]["status"] == "complete" and runs[0]["status"] == "running"
    assert runs[0]["profile"] == "standard" and runs[0]["hostname"] == "rig-1"
    assert runs[0]["kernel_release"] == SYSTEM["kernel_release"]
    assert [r["id"] for r in store.list_runs(limit=1)] == [newer]


def test_a_measurement_is_atomic(store, monkeypatch):
    """If storing fails half-way, nothing of that measurement is left behind."""
    run_id = store.begin_run(SYSTEM, DOCTOR, "quick", "builtin:quick", [])
    store.add_measurement(run_id, realistic_job("latency-idle", "idle"), realistic_document())
    real_insert = store_module.insert_metric
    calls = []

    def failing_insert(conn, measurement_id, name, metric, kind):
        calls.append(name)
        if len(calls) == 3:
            raise RuntimeError("simulated crash while storing")
        real_insert(conn, measurement_id, name, metric, kind)

    monkeypatch.setattr(store_module, "insert_metric", failing_insert)
    with pytest.raises(RuntimeError):
        store.add_measurement(run_id, realistic_job("latency-cpu", "cpu"), realistic_document())
    monkeypatch.undo()
    run = store.get_run(run_id).to_dict()
    assert [m["name"] for m in run["measurements"]] == ["latency-idle"]
    assert store.list_runs()[0]["measurements"] == 1


CRASHING_WRITER = textwrap.dedent("""
    import json, os, sys
    from rtgauge.store import open_store
    url, system, doc, job = sys.argv[1], *map(json.loads, sys.argv[2:5])
    store = open_store(url)
    run_id = store.begin_run(system, [], "quick", "builtin:quick", ["rtgauge", "run"])
    store.add_measurement(run_id, job, doc)
    print(run_id, flush=True)
    os._exit(9)  # die without finishing the run or closing anything
""")


def test_measurement_survives_a_writer_that_dies_mid_run(store, store_url):
    doc, job = realistic_document(), realistic_job()
    p = subprocess.run([sys.executable, "-c", CRASHING_WRITER, store_url, json.dumps(SYSTEM),
                        json.dumps(doc), json.dumps(job)], capture_output=True, text=True, timeout=60,
                       cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert p.returncode == 9, p.stderr
    run_id = int(p.stdout.strip())
    run = store.get_run(run_id).to_dict()
    assert run["status"] == "running" and run["finished_at"] is None
    [m] = run["measurements"]
    assert m["document"] == doc
    assert without_kind(m["metrics"]) == doc["metrics"]


def test_measurement_is_visible_to_another_reader_while_the_run_is_running(store, store_url):
    run_id = store.begin_run(SYSTEM, DOCTOR, "quick", "builtin:quick", [])
    store.add_measurement(run_id, realistic_job(), realistic_document())
    reader = textwrap.dedent("""
        import json, sys
        from rtgauge.store import open_store
        with open_store(sys.argv[1]) as s:
            run = s.get_run(int(sys.argv[2])).to_dict()
            print(json.dumps([run["status"], [m["name"] for m in run["measurements"]]]))
    """)
    p = subprocess.run([sys.executable, "-c", reader, store_url, str(run_id)], capture_output=True,
                       text=True, timeout=60, cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == ["running", ["latency-cpu"]]


def set_stored_version(url: str, version: int) -> None:
    engine = create_engine(normalise_url(url))
    try:
        with engine.begin() as conn:
            conn.execute(tables.schema_version.delete())
            conn.execute(tables.schema_version.insert().values(version=version, applied_at="x"))
    finally:
        engine.dispose()


def test_a_newer_schema_is_refused(store_url):
    open_store(store_url).close()
    set_stored_version(store_url, SCHEMA_VERSION + 1)
    with pytest.raises(UserError) as e:
        open_store(store_url)
    message = str(e.value)
    assert f"schema version {SCHEMA_VERSION + 1}" in message and "upgrade rtgauge" in message
    assert "\n" not in message


def test_an_older_schema_is_migrated(store_url, monkeypatch):
    with open_store(store_url) as s:
        run_id = s.begin_run(SYSTEM, DOCTOR, "quick", "builtin:quick", [])
    applied = []

    def add_tag_column(conn):
        applied.append(True)
        conn.execute(text("ALTER TABLE runs ADD COLUMN tag TEXT"))

    monkeypatch.setattr(store_module, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    monkeypatch.setattr(store_module, "MIGRATIONS", {SCHEMA_VERSION: add_tag_column})
    with open_store(store_url) as s:
        assert s.get_run(run_id).to_dict()["profile"] == "quick"  # the old run survived the migration
    with open_store(store_url) as s:
        pass  # already migrated: the step does not run twice
    assert applied == [True]
    engine = create_engine(normalise_url(store_url))
    with engine.connect() as conn:
        versions = conn.execute(select(tables.schema_version.c.version)).scalars().all()
        columns = [c["name"] for c in inspect(conn).get_columns("runs")]
    engine.dispose()
    assert "tag" in columns
    assert sorted(versions) == [SCHEMA_VERSION, SCHEMA_VERSION + 1]


def test_round_and_segment_leave_the_names_of_a_schema_3_database(store_url):
    """Before schema 4 a round and a segment were coded into the name (`NAME#rK`,
    `NAME#segN`, beside load.round / load.segment); the migration makes them fields and
    gives the name back to the job, where the load record says the same index (a name
    that only looks like a tag is left as it is)."""
    old = [("lat@idle#r2", {"round": {"index": 2, "of": 2}}, ("lat@idle", 2, None)),
           ("lat@idle#r2/cyclictest", {"round": {"index": 2, "of": 2}}, ("lat@idle/cyclictest", 2, None)),
           ("lat@cpu#seg3", {"segment": {"index": 3, "of": 5}}, ("lat@cpu", None, 3)),
           ("lat@cpu#r1#seg2", {"round": {"index": 1, "of": 2}, "segment": {"index": 2, "of": 5}}, ("lat@cpu", 1, 2)),
           ("odd#r9", {}, ("odd#r9", None, None)),
           ("plain@idle", {}, ("plain@idle", None, None))]
    with open_store(store_url) as s:
        run_id = s.begin_run(SYSTEM, DOCTOR, "quick", "builtin:quick", [])
        for name, load, _ in old:
            s.add_measurement(run_id, dict(realistic_job(name, "idle"), load=load), realistic_document())
    engine = create_engine(normalise_url(store_url))
    with engine.begin() as conn:       # the database as schema 3 left it
        conn.execute(text("ALTER TABLE measurements DROP COLUMN round"))
        conn.execute(text("ALTER TABLE measurements DROP COLUMN segment"))
        conn.execute(text("UPDATE schema_version SET version = 3 WHERE version = 4"))
    engine.dispose()
    with open_store(store_url) as s:
        run = s.get_run(run_id)
    assert [(m.name, m.round, m.segment) for m in run.measurements] == [want for _, _, want in old]
    assert [m.label for m in run.measurements][:3] == ["lat@idle (round 2)", "lat@idle/cyclictest (round 2)",
                                                       "lat@cpu (segment 3)"]


def test_an_older_schema_without_a_migration_is_refused(store_url, monkeypatch):
    open_store(store_url).close()
    monkeypatch.setattr(store_module, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    with pytest.raises(UserError, match="cannot upgrade"):
        open_store(store_url)


@pytest.mark.parametrize("url, says", [
    ("mysql://root@localhost/results", "SQLite or PostgreSQL"),
    ("postgresql://lab:s3cret@127.0.0.1:1/results", "cannot open the results database"),
    ("postgresql://lab:s3cret@[::1/results", "not a database URL"),
    ("   ", "empty"),
    ("/proc/no-such-dir/rtgauge.db", "cannot create the directory"),
])
def test_a_bad_url_is_one_sentence_without_the_password(url, says):
    with pytest.raises(UserError) as e:
        open_store(url)
    message = str(e.value)
    assert says in message
    assert "s3cret" not in message
    assert "\n" not in message and "Traceback" not in message
    assert message.endswith(".")


def test_a_file_that_is_not_a_database_is_refused(tmp_path):
    bogus = tmp_path / "notes.txt"
    bogus.write_text("this is not an SQLite database, just some text " * 100)
    with pytest.raises(UserError, match="cannot open the results database .*notes.txt"):
        open_store(str(bogus))


def test_default_location_follows_xdg_data_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    with open_store(None) as s:
        s.begin_run(SYSTEM, [], "quick", "builtin:quick", [])
        assert s.url == f"sqlite:///{tmp_path / 'data' / 'rtgauge' / 'rtgauge.db'}"
    assert (tmp_path / "data" / "rtgauge" / "rtgauge.db").stat().st_size > 0
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_DATA_HOME")
    open_store(None).close()
    assert (tmp_path / "home" / ".local" / "share" / "rtgauge" / "rtgauge.db").exists()


def test_a_plain_path_and_a_sqlite_url_open_the_same_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with open_store("results.db") as s:
        run_id = s.begin_run(SYSTEM, [], "quick", "builtin:quick", [])
    with open_store(f"sqlite:///{tmp_path / 'results.db'}") as s:
        assert s.latest_run_id() == run_id


def test_the_password_is_masked_in_store_url(postgres_server):
    url = postgres_server.new_database().replace("postgres@", "postgres:hunter2@")
    with open_store(url) as s:  # trust auth ignores the password
        assert "hunter2" not in s.url and "***" in s.url


finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
ns = st.integers(min_value=0, max_value=2**62)
metric_strategy = st.one_of(
    st.fixed_dictionaries({"unit": st.sampled_from(["count", "ns", "ratio"]),
                           "value": st.one_of(ns, finite, st.none())}),
    st.fixed_dictionaries(
        {"unit": st.just("ns"), "count": ns, "min": ns, "avg": finite, "stddev": finite,
         "p50": ns, "p99": ns, "p9999": st.one_of(ns, st.none()), "max": ns,
         "histogram": st.fixed_dictionaries({"scheme": st.just("log-linear"), "sub_buckets": st.just(128),
                                             "bins": st.lists(st.tuples(ns, ns, ns).map(list), max_size=20)})}),
    st.fixed_dictionaries({"unit": st.just("ns"), "window_ns": ns, "start_ns": ns,
                           "max": st.lists(st.one_of(ns, st.none()), max_size=30)}),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.text(min_size=1, max_size=12), metric_strategy, max_size=6))
def test_any_contract_metrics_round_trip(tmp_path, metric_docs):
    doc = {"schema": 1, "test": "latency", "ok": True, "interrupted": False, "params": {}, "env": {},
           "metrics": metric_docs, "verdicts": {}}
    with open_store(f"sqlite:///{tmp_path / 'prop.db'}") as s:
        run_id = s.begin_run(SYSTEM, [], "quick", "builtin:quick", [])
        s.add_measurement(run_id, realistic_job(), doc)
        [m] = s.get_run(run_id).to_dict()["measurements"]
    assert without_kind(m["metrics"]) == metric_docs


def test_a_tool_that_printed_nothing_keeps_the_jobs_error(store):
    run_id = store.begin_run(SYSTEM, [], "quick", "builtin:quick", [])
    job = dict(realistic_job(), exit_status=-11, error="rtgauge-engine was killed by signal 11 (SIGSEGV)")
    store.add_measurement(run_id, job, None)
    [m] = store.get_run(run_id).to_dict()["measurements"]
    assert (m["ok"], m["error"], m["exit_status"], m["metrics"], m["document"]) == (
        False, job["error"], -11, {}, {})


def _open_and_list(path: str, results) -> None:
    try:
        with open_store(path) as store:
            store.list_runs()
        results.put("ok")
    except Exception as e:  # noqa: BLE001 - the test reports whatever went wrong
        results.put(repr(e))


def test_processes_opening_a_new_sqlite_file_at_once_all_succeed(tmp_path):
    """rtgauge run creating its database while `rtgauge show` (or a second run) opens
    it: each process must find one complete schema, never half of one."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    for i in range(8):
        path = str(tmp_path / f"race{i}.db")
        results = ctx.Queue()
        procs = [ctx.Process(target=_open_and_list, args=(path, results)) for _ in range(4)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(30)
        assert [results.get(timeout=5) for _ in procs] == ["ok"] * 4
