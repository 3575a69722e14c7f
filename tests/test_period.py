"""A job's period is decided once and travels as a field (issue 33): the cycle driver
writes it (env.period_ns, engine/src/periodic/), `Measurement.period_ns` reads it, and
a document stored before the engine said it gives the same period through the one
fallback (`records.stored_period_ns`). The latency interval a Python reader needs (a
cross-check tool's command, its document) is parsed once (`defaults.interval_us`), its
default written once and the same as the engine's.

Every engine run here is a real one, short, at the engine's own period options; the
tests assert counts and the documents' own fields only, so a loaded machine passes."""

from __future__ import annotations

import pytest

from rtgauge.catalogue import catalogue
from rtgauge.defaults import LATENCY_INTERVAL_US, interval_us
from rtgauge.records import Measurement, stored_period_ns
from rtgauge.tools import cyclictest, rtla

pytestmark = pytest.mark.shared

# (engine arguments, the period the job asked for in ns, or None: the test runs no one period)
RUNS = [
    (("latency", "--cycles", "40", "--interval-us", "700"), 700_000),
    (("latency", "--cycles", "20"), LATENCY_INTERVAL_US * 1000),
    (("spin", "--duration-s", "0.1", "--period-us", "20000", "--busy-us", "100"), 20_000_000),
    (("preempt", "--event", "timer", "--iterations", "20", "--period-us", "900"), 900_000),
    (("tire", "--mode", "pretest", "--steps", "20", "--masses", "100"), 500_000),
    (("tire", "--steps", "10", "--period-ms", "2", "--masses", "100"), 2_000_000),
    (("tire", "--mode", "realfast", "--steps", "10", "--masses", "100"), None),
    (("preempt", "--iterations", "20"), None),
]


def measurement(doc: dict) -> Measurement:
    return Measurement.from_dict({**doc, "name": doc["test"], "tool": "engine"})


@pytest.mark.parametrize("args,period_ns", RUNS, ids=[" ".join(a) for a, _ in RUNS])
def test_the_engine_says_the_period_and_an_older_document_gives_the_same(run_engine, args, period_ns):
    r = run_engine(*args, "--allow-fallback", timeout=60)
    assert r.status == 0, r.stderr
    assert r.doc["env"].get("period_ns") == period_ns
    m = measurement(r.doc)
    assert m.period_ns == period_ns
    assert m.period_us == (None if period_ns is None else period_ns // 1000 if period_ns % 1000 == 0
                           else period_ns / 1000)
    # the same document as stored before the engine wrote env.period_ns: the fallback
    # rebuilds the same period from the test's own parameter
    older = {**r.doc, "env": {k: v for k, v in r.doc["env"].items() if k != "period_ns"}}
    assert measurement(older).period_ns == period_ns


def test_the_field_wins_over_the_parameters():
    """What the driver said is read, not what the parameters would give (a broken
    reader that rebuilt the period from the parameters first fails here)."""
    m = Measurement.from_dict({"name": "x", "test": "latency", "params": {"interval_us": 1000},
                               "env": {"period_ns": 999_999}})
    assert m.period_ns == 999_999
    for bad in (0, -5, True, "1000", float("nan"), float("inf")):
        m = Measurement.from_dict({"name": "x", "test": "latency", "params": {"interval_us": 250},
                                   "env": {"period_ns": bad}})
        assert m.period_ns == 250_000, bad


def test_the_fallback_reads_each_tests_parameter():
    assert stored_period_ns("latency", {"interval_us": 250}) == 250_000
    assert stored_period_ns("latency", {"interval_us": 62.5}) == 62_500          # stress-ng's cyclic, ns / 1000
    assert stored_period_ns("hil", {"period_us": 1000}) == 1_000_000
    assert stored_period_ns("preempt", {"period_us": 1000, "event": "sem"}) is None
    assert stored_period_ns("hartstone", {"period_us": 1000}) is None
    assert stored_period_ns("tire", {"mode": "realtime", "period_ms": None}, {"period_ms": 4}) == 4_000_000
    assert stored_period_ns("tire", {"mode": "realtime"}) == 10_000_000
    assert stored_period_ns("pi", {}) is None


def test_the_interval_is_parsed_once_with_the_engines_default(engine_bin):
    assert LATENCY_INTERVAL_US == int(catalogue(engine_bin).test("latency").option("interval-us").default)
    assert interval_us({}) == LATENCY_INTERVAL_US
    assert interval_us({"interval-us": 250}) == interval_us({"interval-us": "250"}) == 250
    assert interval_us({"interval-us": "1ms"}) == 1000
    for bad in ("fast", "0.5", True):
        with pytest.raises(ValueError):
            interval_us({"interval-us": bad})
    # the cross-check tools' commands and documents use it
    assert "--interval=250" in cyclictest.command({"interval-us": "250us", "duration-s": 1}, [0], "/x.json",
                                                  exe="cyclictest")
    words = rtla.command({}, [0], "/x")
    assert words[words.index("-p") + 1] == str(LATENCY_INTERVAL_US)


def test_documents_written_in_python_have_the_engines_format(run_engine):
    """One constructor (records.engine_document) writes the engine's shape and its format
    number, the one the engine writes; the import's own check takes what it writes."""
    from rtgauge.records import DOCUMENT_SCHEMA, engine_document
    from rtgauge.store.validate import check_engine_document
    r = run_engine("latency", "--cycles", "10", "--allow-fallback", timeout=60)
    assert r.doc["schema"] == DOCUMENT_SCHEMA
    doc = engine_document("latency", tool="cyclictest", ok=False, error="none measured")
    assert list(doc) == ["schema", "test", "tool", "ok", "interrupted", "error", "params", "env", "metrics",
                         "verdicts"]
    check_engine_document(doc, "a Python-written document")
    assert "error" not in engine_document("pi", ok=True) and "tool" not in engine_document("pi", ok=True)
