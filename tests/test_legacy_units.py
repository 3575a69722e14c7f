"""A metric an older engine mislabelled is read, not refused (rtgauge/store/validate.py
RELABELLED). The engine before 2026-12-02 wrote the tire solvers' nswitch_per_step, a
mean of unplanned switches per thread and step, under unit "count"; the readers' counter
rule (a count is a non-negative integer, issue 34) then refused every real tire probe
of the full study, as an import, as an export imported elsewhere, and as a board's
document. The fixture is such a probe, recorded (tests/data/tire/README.md)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from conftest import cli
from rtgauge.errors import UserError
from rtgauge.store.validate import check_engine_document, check_export

PROBE = Path(__file__).resolve().parent / "data" / "tire" / "probe-16000-other-1t.json"


def probe() -> dict:
    return json.loads(PROBE.read_text())


def test_the_recorded_probe_holds_the_old_label():
    m = probe()["metrics"]["nswitch_per_step"]
    assert m["unit"] == "count" and not float(m["value"]).is_integer()


def test_a_board_document_is_read_with_the_unit_of_now():
    doc = check_engine_document(probe(), "board")
    assert doc["metrics"]["nswitch_per_step"]["unit"] == "count/step"
    assert doc["metrics"]["late_steps"] == {"unit": "count", "value": 33}


def test_a_real_counter_stays_strict():
    """The broken method would be to let every "count" be fractional: a fractional or
    negative misses count is still refused."""
    for bad in (2.5, -5):
        doc = probe()
        doc["metrics"]["misses"]["value"] = bad
        with pytest.raises(UserError):
            check_engine_document(doc, "board")


def test_the_export_of_a_study_run_imports_again(tmp_path):
    src = tmp_path / "a.db"
    p = cli(["import", str(PROBE), "--db", str(src)])
    assert p.returncode == 0, p.stderr
    out = tmp_path / "run.json"
    cli(["export", "1", "--db", str(src), "-o", str(out)], check=True)
    data = json.loads(out.read_text())
    # as a database of the old engine holds it: the stored metric with the old label too
    old = copy.deepcopy(data)
    for m in old["run"]["measurements"]:
        for metrics in (m["metrics"], m["document"]["metrics"]):
            if "nswitch_per_step" in metrics:
                metrics["nswitch_per_step"]["unit"] = "count"
    out.write_text(json.dumps(old))
    back = cli(["import", str(out), "--db", str(tmp_path / "b.db")])
    assert back.returncode == 0, back.stderr
    shown = json.loads(cli(["show", "1", "--db", str(tmp_path / "b.db"), "--json"], check=True).stdout)
    metric = shown["measurements"][0]["metrics"]["nswitch_per_step"]
    assert metric["unit"] == "count/step" and metric["value"] == pytest.approx(0.004)
    assert check_export(old, "x")["measurements"][0]["metrics"]["nswitch_per_step"]["unit"] == "count/step"
