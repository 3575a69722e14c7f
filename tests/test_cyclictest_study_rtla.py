"""The cyclictest study's kernel-mode and timer-IRQ rows (the Xenomai latency tool's
kernel and timer-IRQ modes) sit beside rtla timerlat's kernel thread and timer IRQ,
which the cyclictest-study profiles request where the kernel has the timerlat tracer
(docs/studies.md). This machine's kernel has none, so rtla's output is the recorded
histogram of tests/test_formats_rtla.py (SAMPLE), passed through the same reader a
run's rtla result takes (plan/execute.py checked_document) for the profile's own rtla
job; rtgauge's latency is the real engine at the profile's settings; the run is stored
in real SQLite and read back by `rtgauge show --json` and `rtgauge report`."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import replace

import pytest

from conftest import cli, needs_root
from rtgauge.analysis.run.rows import cross_checks, latency_row, row_metric
from rtgauge.plan import build_plan
from rtgauge.plan.execute import checked_document, job_record
from rtgauge.profiles import load_profile
from rtgauge.store import open_store
from rtgauge.tools import rtla
from test_formats_rtla import SAMPLE

FACTS = os.path.join(os.path.dirname(__file__), "data", "facts", "this-vm.json")
STUDY = "xenomai3-arm-2016"


def profile_jobs(condition: str = "idle"):
    jobs = build_plan(load_profile("cyclictest-study-quick"))
    engine = next(j for j in jobs if j.tool == "engine" and j.test == "latency" and j.condition == condition)
    timerlat = next(j for j in jobs if j.tool == "rtla" and j.condition == condition)
    return engine, timerlat


def test_the_profiles_request_rtla_timerlat_on_the_engines_settings():
    for name in ("cyclictest-study", "cyclictest-study-quick"):
        jobs = build_plan(load_profile(name))
        for condition in ("idle", "cpu"):
            engine = next(j for j in jobs if j.tool == "engine" and j.test == "latency" and j.condition == condition)
            [timerlat] = [j for j in jobs if j.tool == "rtla" and j.condition == condition]
            assert timerlat.name == engine.name + "/rtla" and timerlat.cross_check
            assert timerlat.options == engine.options and timerlat.cpus == engine.cpus
            argv = rtla.command(timerlat.options, timerlat.cpus, "/tmp/out")
            opts = dict(zip(argv[8::2], argv[9::2]))
            assert opts["-p"] == "1000" and opts["-P"] == "f:99"


def test_rtlas_columns_keep_their_own_names():
    doc = rtla.document(rtla.parse(SAMPLE))
    m = doc["metrics"]
    assert "ti" not in m and not any(k.startswith(("ti#", "ti_irq")) for k in m)
    assert (m["timerlat_thread"]["count"], m["timerlat_thread"]["max"]) == (20_000, 95_000)
    assert (m["timerlat_irq"]["max"], m["timerlat_thread#0"]["max"], m["timerlat_irq#1"]["max"]) == (2000, 7000, 2000)
    assert m["cycles"]["value"] == 20_000


def store_run(db: str, docs: list[tuple]) -> int:
    with open(FACTS) as f:
        facts = json.load(f)
    with open_store(db) as store:
        run_id = store.begin_run(facts, [], "cyclictest-study-quick", "builtin:cyclictest-study-quick",
                                 ["rtgauge", "run", "--profile", "cyclictest-study-quick"])
        for job, doc in docs:
            store.add_measurement(run_id, job_record(job, 0, {"condition": job.condition}, "2026-11-28T00:00:00Z",
                                                      1.0, [job.tool]), doc)
        store.finish_run(run_id, "complete", "")
    return run_id


@pytest.fixture(scope="module")
def engine_document(engine_bin, tmp_path_factory):
    """rtgauge's own latency at the profile's settings (1 kHz, SCHED_FIFO 99), short."""
    engine, _ = profile_jobs()
    out = tmp_path_factory.mktemp("engine") / "latency.json"
    job = replace(engine, options=dict(engine.options, **{"duration-s": 0.3}))
    p = subprocess.run([engine_bin, "latency", "--out", str(out), *job.engine_args(), "--cpus", "0"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(out.read_text())


def rows_of(db: str, run_id: int) -> dict:
    run = json.loads(cli(["show", str(run_id), "--json", "--db", db], check=True).stdout)
    [study] = [s for s in run["published"]["studies"] if s["source"] == STUDY]
    return {(r["test"], r["condition"]): r for r in study["rows"]}


@needs_root
@pytest.mark.shared
def test_the_kernel_and_timer_irq_rows_sit_beside_rtla_timerlat(engine_document, tmp_path):
    engine, timerlat = profile_jobs()
    rtla_doc = checked_document(timerlat, SAMPLE.encode(), "rtla's result", 0, False)
    assert rtla_doc["ok"] and rtla_doc["params"]["interval_us"] == 1000 and rtla_doc["params"]["priority"] == 99
    db = f"sqlite:///{tmp_path / 'r.db'}"
    run_id = store_run(db, [(engine, engine_document), (timerlat, rtla_doc)])
    rows = rows_of(db, run_id)

    [kernel] = rows[("xenomai_latency_kernel", "idle")]["measured"].values()
    assert (kernel["status"], kernel["tool"], kernel["metric"]) == ("compared", "rtla", "timerlat_thread")
    assert (kernel["stats"]["max"], kernel["stats"]["avg"], kernel["stats"]["count"]) == (95.0, 2.0, 20_000)
    assert kernel["comparable"] is True       # 1 kHz, SCHED_FIFO 99: the study's settings
    # 10,000 cycles a CPU beside the study's 1,000,000: the maximum is not comparable, and
    # the worst-case model (fitted to ti's window maxima) offers no projection of rtla's
    assert kernel["max_comparable"] is False and kernel["samples_per_cpu"] == 10_000
    assert "projected" not in kernel
    [irq] = rows[("xenomai_latency_timer_irq", "idle")]["measured"].values()
    assert (irq["status"], irq["tool"], irq["metric"], irq["stats"]["max"]) == ("compared", "rtla", "timerlat_irq", 2.0)
    [user] = rows[("xenomai_latency_user", "idle")]["measured"].values()
    assert (user["status"], user["tool"], user["metric"]) == ("compared", "engine", "ti")
    labels = {r["test"]: r["our_method"] for r in rows.values()}
    assert "kernel thread" in labels["xenomai_latency_kernel"] and "interrupt handler" in \
        labels["xenomai_latency_timer_irq"]

    # the cross-check ratio reads rtla's kernel thread, named as such
    with open_store(db) as store:
        run = store.get_run(run_id)
    [pair] = cross_checks(run.measurements)
    [rtla_m] = [m for m in run.measurements if m.tool == "rtla"]
    assert row_metric(rtla_m) == "timerlat_thread" and latency_row(rtla_m)["max_us"] == 95.0
    assert pair["reference"] == "rtla" and pair["reference_metric"] == "timerlat_thread"
    assert pair["max_us"][1] == 95.0 and pair["max_us"][2] == pytest.approx(engine_document["metrics"]["ti"]["max"]
                                                                            / 1000 / 95.0)
    html = tmp_path / "r.html"
    cli(["report", str(run_id), "-o", str(html), "--db", db], check=True)
    page = html.read_text()
    assert "latency@idle/rtla timerlat_thread (rtla)" in page and "latency@idle/rtla timerlat_irq (rtla)" in page
    assert "rtgauge vs rtla (rtla timerlat&#x27;s kernel thread, timerlat_thread)" in page or \
        "rtgauge vs rtla (rtla timerlat's kernel thread, timerlat_thread)" in page
    shown = cli(["show", str(run_id), "--db", db, "--format", "tsv"], check=True).stdout
    assert "rtla (x-check), timerlat_thread" in shown


@needs_root
@pytest.mark.shared
def test_what_rtla_did_not_measure_is_not_set_beside_the_rows(engine_document, tmp_path):
    """Broken methods: rtla's thread stored as `ti` (as before, a user-space wake-up's
    name) is not the kernel-mode row's; rtla at another priority is shown, not
    comparable; without rtla the kernel row names the engine's user-space thread as a
    different method."""
    engine, timerlat = profile_jobs()
    db = f"sqlite:///{tmp_path / 'r.db'}"
    good = checked_document(timerlat, SAMPLE.encode(), "rtla's result", 0, False)
    old = json.loads(json.dumps(good))
    old["metrics"] = {k.replace("timerlat_thread", "ti").replace("timerlat_irq", "ti_irq"): v
                      for k, v in old["metrics"].items()}
    rows = rows_of(db, store_run(db, [(engine, engine_document), (timerlat, old)]))
    [kernel] = rows[("xenomai_latency_kernel", "idle")]["measured"].values()
    assert kernel["status"] == "different method" and kernel["measurement"] == "latency@idle"
    assert "user-space thread" in kernel["note"]
    [irq] = rows[("xenomai_latency_timer_irq", "idle")]["measured"].values()
    assert irq["status"] != "compared"

    low = checked_document(replace(timerlat, options=dict(timerlat.options, priority=80)), SAMPLE.encode(),
                           "rtla's result", 0, False)
    rows = rows_of(db, store_run(db, [(engine, engine_document), (timerlat, low)]))
    [kernel] = rows[("xenomai_latency_kernel", "idle")]["measured"].values()
    assert kernel["status"] == "compared" and kernel["comparable"] is False
    assert "priority 80 beside the study's 99" in kernel["settings_note"]

    rows = rows_of(db, store_run(db, [(engine, engine_document)]))
    [kernel] = rows[("xenomai_latency_kernel", "idle")]["measured"].values()
    assert kernel["status"] == "different method" and "timerlat" in kernel["note"]
