"""The typed records (rtgauge/records.py) read a stored run and give it back
unchanged, and say what the dicts said: on real engine runs (latency with its window
series, a behaviour microbenchmark with verdicts) and on the report's hand-made runs."""

from __future__ import annotations

import json

import pytest

from rtgauge.analysis.run.rows import latency_row, system_label
from rtgauge.records import NO_METRIC, Measurement, Metric, Run
from rtgauge.store import open_store
from test_report_builders import full_run_documents, store_run


def stored_run(tmp_path, docs) -> dict:
    url = f"sqlite:///{tmp_path / 'r.db'}"
    run_id = store_run(url, docs)
    with open_store(url) as s:
        return s.get_run(run_id).to_dict()


def job(name, test, condition="idle", tool="engine"):
    return {"name": name, "tool": tool, "test": test, "condition": condition, "reference": tool != "engine",
            "load": {}, "started_at": None, "duration_s": 0.5, "exit_status": 0, "command": []}


@pytest.mark.shared
def test_a_real_run_round_trips_and_reads_the_same(tmp_path, run_engine):
    lat = run_engine("latency", "--duration-s", "0.5", "--allow-fallback", timeout=60)
    beh = run_engine("pi", "--allow-fallback", timeout=60, check_json=True)
    assert lat.doc and beh.doc
    run = stored_run(tmp_path, [(job("latency@idle", "latency"), lat.doc), (job("pi@idle", "pi"), beh.doc)])
    rec = Run.from_dict(run)
    # back to exactly the stored dict: nothing lost, nothing added
    assert json.dumps(rec.to_dict(), sort_keys=True, default=str) == json.dumps(run, sort_keys=True, default=str)
    m = rec.measurements[0]
    ti = lat.doc["metrics"]["ti"]
    assert m.metric("ti").max == ti["max"] and m.metric("ti").count == ti["count"]
    assert m.metric("ti").bins == ti["histogram"]["bins"]
    assert m.metric("no such metric") is NO_METRIC and m.scalar("no such metric") is None
    assert m.fallback == latency_row(m)["fallback"]
    assert rec.label == system_label(rec)
    # the window series keeps its values apart from the statistics
    series = [k for k, v in lat.doc["metrics"].items() if isinstance(v.get("max"), list)]
    for k in series:
        assert m.metric(k).series == lat.doc["metrics"][k]["max"] and m.metric(k).max is None
    # a behaviour test's verdicts
    b = rec.measurements[1]
    assert b.verdicts and {k: v.passed for k, v in b.verdicts.items()} == \
        {k: v["pass"] for k, v in beh.doc["verdicts"].items()}


def test_hand_made_runs_round_trip(tmp_path):
    run = stored_run(tmp_path, full_run_documents(misses=3))
    assert json.dumps(Run.from_dict(run).to_dict(), sort_keys=True, default=str) == json.dumps(run, sort_keys=True,
                                                                                               default=str)
    assert Run.from_dict(Run.from_dict(run).to_dict()) == Run.from_dict(run)


def test_records_are_frozen_and_defaults_say_not_measured():
    m = Measurement.from_dict({"name": "x"})
    assert m.tool == "engine" and m.ok is None and m.metrics == {} and m.round is None
    try:
        m.name = "y"
    except AttributeError:
        pass
    else:
        raise AssertionError("a record must not change")
    assert Metric.from_dict({"kind": "scalar", "value": 3, "unit": "ns"}).to_dict() == \
        {"kind": "scalar", "value": 3, "unit": "ns"}
    r2 = Measurement.from_dict({"name": "r", "round": 2})
    assert (r2.round, r2.segment, r2.label, r2.key) == (2, None, "r (round 2)", ("r", 2, None))
    assert r2.to_dict()["round"] == 2 and "round" not in Measurement.from_dict({"name": "r"}).to_dict()
    assert Measurement.from_dict({"name": "r", "segment": 3}).pooled_name == "r (segment 3)"


def test_a_key_stored_as_null_is_kept_apart_from_an_absent_one():
    """The report lists a fitted cost term stored with a null value (as `"value" in
    metric` did) and leaves out one never stored; the round trip keeps the null."""
    given = {"kind": "scalar", "unit": "ns", "value": None}
    m = Metric.from_dict(given)
    assert m.has("value") and m.value is None and m.to_dict() == given
    assert not Metric.from_dict({"kind": "scalar", "unit": "ns"}).has("value")
