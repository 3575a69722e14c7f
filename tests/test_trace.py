"""Counters of what happened on the measured CPUs, and threshold tracing: a breach
stores a trace that contains rtgauge's marker."""

import os
from pathlib import Path

import pytest

from conftest import needs_mount_namespace
from readiness import wait_for
from rtgauge.store import open_store
from rtgauge.trace import breach_of, cpu_mask, find_tracefs
from rtgauge.trace.counters import counters, parse_table, per_cpu_deltas, read_smi_counts, take_snapshot
from test_loads import rtgauge

pytestmark = pytest.mark.alone

BEFORE = """           CPU0       CPU1
 24:          1          0  IO-APIC   5-edge      ACPI:Ged
 36:          0        100  PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0
LOC:        500       1000   Local timer interrupts
ERR:          0
"""
AFTER = """           CPU0       CPU1
 24:          1          0  IO-APIC   5-edge      ACPI:Ged
 36:          0        130  PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0
LOC:        600       1900   Local timer interrupts
ERR:          0
"""


def test_interrupt_deltas_per_cpu_and_source():
    assert set(parse_table(AFTER)) == {"24 ACPI:Ged", "36 virtio1-req.0", "LOC Local timer interrupts"}
    d = per_cpu_deltas(BEFORE, AFTER, [1])
    assert d == {"1": {"LOC Local timer interrupts": 900, "36 virtio1-req.0": 30}}


def test_cpu_mask():
    assert cpu_mask([0]) == "1" and cpu_mask([1, 3]) == "a" and cpu_mask([32]) == "1,0"


def test_live_counters_see_the_timer_tick():
    cpus = sorted(os.sched_getaffinity(0))
    before = take_snapshot(cpus)
    doc = {"env": {"threads": [{"index": 0, "cpu": cpus[0], "nvcsw": 5, "nivcsw": 1}]}}
    # the first snapshot whose counters show an interrupt on these CPUs since `before`
    # (a tick comes within milliseconds); counters that never see one fail at the watchdog
    c = wait_for(lambda: (lambda c: c if sum(c["interrupts_total"].values()) > 0 else None)(
        counters(before, take_snapshot(cpus), cpus, doc)), "an interrupt counted on this process's CPUs")
    assert c["context_switches"] == {"0": {"cpu": cpus[0], "voluntary": 5, "involuntary": 1}}
    smi, note = read_smi_counts(cpus)
    assert (c["smi"] == note) if smi is None else isinstance(c["smi"], dict)


def test_breach_is_found_per_thread():
    doc = {"metrics": {"ti": {"max": 90000}, "ti#0": {"max": 20000}, "ti#1": {"max": 90000}},
           "env": {"threads": [{"index": 0, "cpu": 2}, {"index": 1, "cpu": 3}]}}
    assert breach_of(doc, 50) == {"thread": 1, "cpu": 3, "max_us": 90.0}
    assert breach_of(doc, 100) is None


@needs_mount_namespace
def test_breach_stores_trace_with_marker_mounting_tracefs_where_missing(tmp_path):
    """A fresh machine (tracefs not mounted; a private mount namespace without it, so
    the host's mounts are untouched): the run mounts tracefs, as rtla does, says so,
    and traces."""
    mounted_before = find_tracefs()
    prof = tmp_path / "p.toml"
    prof.write_text("""
name = "trace"
[settings]
warmup_s = 0
[[jobs]]
name = "latency"
test = "latency"
conditions = ["idle"]
[jobs.options]
duration-s = 5
""")
    db = tmp_path / "r.db"
    # 1 µs is always exceeded: the first wake-up breaches it
    p = rtgauge("run", "--profile", str(prof), "--db", str(db), "--no-report",
                "--trace-threshold-us", "1", fresh=True)
    assert p.returncode in (0, 1), p.stderr
    assert "tracefs was not mounted: mounted it at /sys/kernel/tracing" in " ".join(p.stdout.split())
    assert find_tracefs() == mounted_before, "the host's tracefs mount state changed"
    if mounted_before:
        assert not any(Path(mounted_before, "instances").glob("rtgauge-*"))
    with open_store(str(db)) as store:
        (m,) = store.get_run(store.latest_run_id()).to_dict()["measurements"]
    trace = m["document"]["env"]["trace"]
    if "unavailable" in trace:
        pytest.skip(trace["unavailable"])
    assert trace["breached"] and trace["marker"].startswith("rtgauge: latency")
    assert any(trace["marker"] in line and "tracing_mark_write" in line for line in trace["tail"])
    assert any("sched_switch" in line for line in trace["tail"])
    # the engine stopped at the breach instead of running 5 s
    assert m["metrics"]["cycles"]["value"] < 1000
    assert m["verdicts"]["max_latency"]["pass"] is False if isinstance(m["verdicts"], dict) else True
    # the tail is shown where the run is read, not only in --json (issue 32): the run's end says
    # where, `show` prints its last lines with the marker, the report has all of them
    said = " ".join(p.stdout.split())
    assert "Trace (--trace-threshold-us, latency@idle)" in said and "traced" in said
    shown = rtgauge("show", "latest", "--db", str(db))
    assert shown.returncode == 0, shown.stderr
    text = " ".join(shown.stdout.split())
    assert "Trace kept by --trace-threshold-us (latency@idle)" in text and "the job stopped there" in text
    assert f"marker: {trace['marker']}" in text and "tracing's own cost" in text
    assert trace["tail"][-1].split()[-1] in shown.stdout          # its last line, as kept
    report = tmp_path / "r.html"
    r = rtgauge("report", "latest", "--db", str(db), "-o", str(report))
    assert r.returncode == 0, r.stderr
    import html
    page = html.unescape(report.read_text())
    assert "the trace kept by --trace-threshold-us" in page
    assert all(line in page for line in trace["tail"])      # every line kept is in the report


@needs_mount_namespace
def test_with_no_mount_tracefs_where_missing_says_so_and_measures(tmp_path):
    prof = tmp_path / "p.toml"
    prof.write_text("""
[[jobs]]
name = "latency"
test = "latency"
conditions = ["idle"]
[jobs.options]
duration-s = 1
""")
    db = tmp_path / "r.db"
    p = rtgauge("run", "--profile", str(prof), "--db", str(db), "--no-report", "--trace-threshold-us", "1",
                "--no-mount-tracefs", fresh=True)
    assert p.returncode in (0, 1), p.stderr
    assert " ".join(p.stdout.split()).count("tracing is skipped") == 1   # once, however wrapped
    with open_store(str(db)) as store:
        (m,) = store.get_run(store.latest_run_id()).to_dict()["measurements"]
    assert "unavailable" in m["document"]["env"]["trace"]
    assert m["metrics"]["cycles"]["value"] > 500     # measured in full, no --break without a trace
