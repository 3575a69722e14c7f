"""Ground truth for the attribution of spikes to an interrupt storm (docs/attribution.md):
a process on another CPU (tests/ipi_storm.py, "rtg-ipistorm") floods the measured CPU
with function-call IPIs (the call_function_single vector) in ten bursts of a known
length at known times, while the real engine measures and the real kernel trace runs.
The storm is the test's own: perf events bound to the measured CPU, enabled and
disabled from the other CPU, each change an IPI whose work runs on the measured CPU
in hard-interrupt context. The attribution must name the IPI vector as the cause of
the largest wake-up of at least 9 of the 10 bursts, and name it for no spike outside
the bursts; /proc/interrupts and the trace must show the storm landing on the
measured CPU. Two broken methods run on the same trace and must fail: a scheduler-only
reading (the interrupt events dropped, as a tool that only sees sched_switch would
read it) and the trace of the wrong CPU. Needs root, tracefs, perf events and two
CPUs; runs alone (its pytestmark, tests/conftest.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from readiness import wait_for
from rtgauge.analysis.run import spikes
from rtgauge.analysis.samples import read_samples
from rtgauge.trace import find_tracefs
from rtgauge.trace.wholerun import WholeRunTrace
from test_attribution import burst_spikes, near_a_burst, tracing_ready

HERE = Path(__file__).resolve().parent
BURSTS, BURST_US, PERIOD_MS, DELAY_MS = 10, 5000, 500, 500
THRESHOLD_US = 500          # a wake-up the storm delayed is later than this; the VM's usual ones are not
CAUSE = "vector function-call IPI"     # with ": remote_function" (perf's cross-CPU call) where csd events exist
SCHED_EVENTS = {"sched_switch", "sched_wakeup"}


def storm_ready() -> str | None:
    why = tracing_ready()
    if why:
        return why
    if not Path("/proc/sys/kernel/perf_event_paranoid").exists():
        return "needs perf events (the storm is made with them)"
    if not Path(find_tracefs(), "events/irq_vectors/call_function_single_entry").exists():
        return "needs the x86 irq_vectors trace events"
    return None


pytestmark = [pytest.mark.alone, pytest.mark.skipif(storm_ready() is not None, reason=str(storm_ready()))]


def function_call_interrupts() -> list[int]:
    """The CAL line of /proc/interrupts: function-call IPIs received, per CPU."""
    for line in Path("/proc/interrupts").read_text().splitlines():
        if line.strip().startswith("CAL:"):
            return [int(x) for x in line.split()[1:1 + os.cpu_count()]]
    raise AssertionError("/proc/interrupts has no CAL line")


def start_storm(measured: int, sender: int, burst_us: int, period_ms: int, count: int, delay_ms: int):
    """The storm, its events opened (those opens are IPIs too: done before anything is measured)."""
    storm = subprocess.Popen([sys.executable, str(HERE / "ipi_storm.py"), str(measured), str(sender), str(burst_us),
                              str(period_ms), str(count), str(delay_ms)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = storm.stdout.readline()
    if line.strip() != "ready":
        storm.kill()
        _, err = storm.communicate(timeout=30)
        raise AssertionError(f"the storm did not start: {line!r} {err}")
    return storm


def end_storm(storm) -> None:
    """Closing its stdin lets it close its events and exit; bounded."""
    try:
        storm.stdin.close()
        storm.wait(timeout=60)
    finally:
        if storm.poll() is None:
            storm.kill()
            storm.wait()


@pytest.fixture(scope="module")
def storm_run(engine_bin, tmp_path_factory):
    """One engine run on the last CPU with the storm sent from the first, both CPUs traced."""
    tmp = tmp_path_factory.mktemp("storm")
    cpus = sorted(os.sched_getaffinity(0))
    measured, other = cpus[-1], cpus[0]
    duration = (DELAY_MS + BURSTS * PERIOD_MS) / 1000 + 1.0
    storm = start_storm(measured, other, BURST_US, PERIOD_MS, BURSTS, DELAY_MS)
    trace = WholeRunTrace(find_tracefs(), sorted({measured, other}), tmp / "trace.txt")
    try:
        trace.start()
        engine = subprocess.Popen([engine_bin, "latency", "--cpus", str(measured), "--duration-s", str(duration),
                                   "--samples", str(tmp / "samples.csv"), "--out", str(tmp / "doc.json")],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wait_for(lambda: (tmp / "samples.csv").exists(), "engine's samples file", proc=engine)
        cal_before = function_call_interrupts()
        storm.stdin.write("go\n")
        storm.stdin.flush()
        sent = json.loads(storm.stdout.readline())
        cal_after = function_call_interrupts()
        _, err = engine.communicate(timeout=duration + 60)
    finally:
        note = trace.finish() if trace.instance is not None else None
        trace.remove()
        end_storm(storm)
    assert engine.returncode == 0, err
    doc = json.loads((tmp / "doc.json").read_text())
    threads = {t["index"]: t["cpu"] for t in doc["env"]["threads"]}
    samples = read_samples(str(tmp / "samples.csv"))
    # the events of both CPUs around the bursts (the whole trace is large; the bursts are what is checked)
    near = [(b[0] - 20_000_000, b[1] + 20_000_000) for b in sent["bursts"]]
    per_cpu, lost = spikes.scan_trace(open(tmp / "trace.txt"), {measured: near, other: near})
    # as `run --attribute` does: one pass over the trace, the spikes' windows kept
    result = spikes.attribute(open(tmp / "trace.txt"), samples, threads, {"rtgauge-engine"},
                              threshold_us=THRESHOLD_US, cpus=[measured])
    return {"tmp": tmp, "measured": measured, "other": other, "bursts": sent["bursts"], "ipis": sent["ipis"],
            "cal": [a - b for a, b in zip(cal_after, cal_before)], "threads": threads, "samples": samples,
            "per_cpu": per_cpu, "lost": lost, "note": note, "result": result}


def test_the_storm_lands_on_the_measured_cpu(storm_run):
    """Ground truth of the injection: /proc/interrupts counts the IPIs on the measured CPU,
    the trace shows them there, inside the bursts, and they held the CPU."""
    run = storm_run
    sent = sum(run["ipis"])
    print(f"IPIs sent {sent} ({run['ipis']} per burst); CAL counted per CPU over the bursts: {run['cal']}")
    assert sent >= 5 * BURSTS, run["ipis"]
    # a call queued while another CPU's call is still pending rides on that one's IPI: nearly each sends one
    assert run["cal"][run["measured"]] >= 0.9 * sent, (run["cal"], sent)
    entries = [e.ns for e in run["per_cpu"][run["measured"]] if e.name == "call_function_single_entry"]
    inside = sum(any(b[0] <= t <= b[1] for b in run["bursts"]) for t in entries)
    assert inside >= 0.9 * sent, (inside, sent)
    chosen = burst_spikes(run)
    print(f"the largest wake-up of each burst, µs: {[s.latency_ns // 1000 for s in chosen]}")
    assert sum(s.latency_ns > THRESHOLD_US * 1000 for s in chosen) >= 9, [s.latency_ns for s in chosen]


def test_the_storm_is_named_for_its_bursts(storm_run):
    run = storm_run
    assert run["lost"] == {}, f"the trace lost events: {run['lost']}"
    chosen = burst_spikes(run)
    result = run["result"]
    by_deadline = {s["deadline_ns"]: s["cause"] for s in result["spike_list"]}
    named = [by_deadline.get(s.deadline_ns, "not above the threshold") for s in chosen]
    hits = sum(c.startswith(CAUSE) for c in named)
    print(f"attribution: {hits} of {len(chosen)} bursts named {CAUSE!r}: {named}")
    assert hits >= 9, named
    # the interrupts of the measured CPU show the storm: the IPI vector's worst handler is long
    ipi = [r for r in result["irq_sources"] if r["source"] == CAUSE]
    assert ipi and ipi[0]["worst_us"] > THRESHOLD_US / 2, result["irq_sources"]


def the_storms(cause: str) -> bool:
    """A cause that is the storm's: its IPI vector, with perf's cross-CPU call where the
    trace names the function. The same vector running another function is another cause:
    seen once, a remote wake-up (sched_ttwu_pending) whose handler a host stall the
    observer missed stretched to 1.2 ms, outside every burst."""
    if not cause.startswith(CAUSE):
        return False
    function = cause[len(CAUSE):].lstrip(": ").split()[0] if cause[len(CAUSE):].strip() else ""
    return function in ("", "remote_function")


def test_no_spike_outside_the_bursts_is_blamed_on_the_storm(storm_run):
    run = storm_run
    result = run["result"]
    assert result["spikes"] >= 9
    outside = [s for s in result["spike_list"] if not near_a_burst(s, run["bursts"])]
    blamed = [s for s in outside if the_storms(s["cause"])]
    assert not blamed, blamed
    # near the bursts the storm leads the causes. Over the whole run it need not: the
    # host's stalls are not the test's to control (one run under a stalling host counted
    # 42 of them to the storm's 32), nor are other programs' threads (beside the suite's
    # background pass, a python thread of another test, in the kernel when a wake-up was
    # due, caused 45 to the storm's 26, none of them blamed on the storm)
    near = Counter(s["cause"] for s in result["spike_list"] if near_a_burst(s, run["bursts"]))
    assert near and the_storms(max(near, key=near.get)), near.most_common(3)


def test_the_tracing_adds_no_interrupts_of_its_own(storm_run):
    """A reader waiting in trace_pipe is woken by an irq_work on the traced CPU whenever an
    event arrives after it emptied the buffer: with `cat` as the reader this run's trace
    showed 123,227 irq_work interrupts in 6.5 s on the measured CPU (it fails this test).
    The polling reader (rtgauge/trace/wholerun.py) leaves the CPU's own rate (0 here)."""
    run = storm_run
    result = run["result"]          # its interrupt counts cover the whole trace of the measured CPU
    works = sum(r["count"] for r in result["irq_sources"] if r["source"] == "vector irq_work")
    print(f"irq_work on the measured CPU: {works} in {result['duration_s']:.1f} s")
    assert works < 1000 * result["duration_s"], result["irq_sources"]


def test_broken_methods_fail(storm_run):
    """The same spikes, attributed wrongly: the test above would catch each."""
    run = storm_run
    chosen = burst_spikes(run)
    events = run["per_cpu"][run["measured"]]
    sched_only = [spikes.Spike(s.cpu, s.thread, s.cycle, s.deadline_ns, s.latency_ns) for s in chosen]
    spikes.attribute_cpu([e for e in events if e.name in SCHED_EVENTS], sched_only, {"rtgauge-engine"})
    print(f"scheduler events only: {sum(s.cause().startswith(CAUSE) for s in sched_only)} of {len(chosen)} named {CAUSE!r}: "
          f"{[s.cause() for s in sched_only]}")
    assert sum(s.cause().startswith(CAUSE) for s in sched_only) < 9, [s.cause() for s in sched_only]
    wrong = [spikes.Spike(run["other"], s.thread, s.cycle, s.deadline_ns, s.latency_ns) for s in chosen]
    spikes.attribute_cpu(run["per_cpu"].get(run["other"], []), wrong, {"rtgauge-engine"})
    print(f"wrong CPU: {sum(s.cause().startswith(CAUSE) for s in wrong)} of {len(wrong)} named {CAUSE!r}: "
          f"{[s.cause() for s in wrong]}")
    assert sum(s.cause().startswith(CAUSE) for s in wrong) < 9, [s.cause() for s in wrong]
    # the naive reading of a trace tail (the last interrupt before the wake-up) is not a
    # broken method for a storm this dense: the last interrupt is the storm's own
    naive = [spikes.last_interrupt_before(events, s) for s in chosen]
    print(f"last interrupt before the wake-up: {sum(c.startswith(CAUSE) for c in naive)} of {len(chosen)} named {CAUSE!r}")


def test_run_show_and_report_name_the_storm(tmp_path):
    """End to end: `rtgauge run --attribute` with the storm beside it; `show`,
    `show --json` and the report name the IPI vector as the first cause the machine made."""
    from attribution_e2e import attributed_run, named_over_bursts
    cpus = sorted(os.sched_getaffinity(0))
    measured, other = cpus[-1], cpus[0]
    # bursts from the run's start until it is over (at most 120 of them, 30 s); bounded
    storm = start_storm(measured, other, BURST_US, 250, 120, 0)

    def started():
        storm.stdin.write("go\n")
        storm.stdin.flush()

    def ended():
        storm.stdin.write("stop\n")
        storm.stdin.flush()
        return json.loads(storm.stdout.readline())["bursts"]
    try:
        a, bursts = attributed_run(tmp_path, measured, 4, 1000, started, ended)
    finally:
        end_storm(storm)
    assert CAUSE in a["_shown"] and CAUSE in a["_html"]
    # the injected spikes (those over a burst) are named for it; host stalls of this VM may
    # be larger than the bursts, so "the largest" is taken among the injected ones
    named, injected = named_over_bursts(a, bursts, CAUSE, near_a_burst)
    print(f"end to end: {named} of {injected} spikes over the bursts named {CAUSE!r}")
    assert injected >= 10 and named >= 0.9 * injected, a["spike_list"]
    # the first interrupt among the sources is the storm's. A thread may rank above it:
    # on a kernel that does not preempt in kernel mode (this VM boots preempt=none), the
    # suite's background pass, in a system call on the measured CPU, delays wake-ups
    # outside the bursts too, and that is a finding, not a mistake (35 once, .ci/run)
    interrupts = [r for r in a["sources"] if r["kind"] == "interrupt"]
    assert interrupts and interrupts[0]["source"].startswith(CAUSE) and interrupts[0]["caused"] >= 9, a["sources"][:3]
