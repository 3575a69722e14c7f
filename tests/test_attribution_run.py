"""`rtgauge run --attribute` says why it spiked at the end of the run (issue 32): the
top causes and the worst wake-up's cause in the run's own summary; with a budget
the threshold is the budget (and the rate a figure of the machine); the job is marked
as traced (its figures include the tracing's cost); the threads are named by their
command line; a starved job (maxima of 100 ms and more, periods skipped) gets a hint
of what to look at, not only "no". Real engine, real trace, a real disturber
(tests/disturber.py, FIFO 90 on the measured CPU) whose long bursts starve the
measuring thread (FIFO 80). Needs root, tracefs and two CPUs; runs alone
(its pytestmark, tests/conftest.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import disturber
from readiness import wait_for
from rtgauge.trace import tasks
from test_attribution import NAME, near_a_burst, tracing_ready

pytestmark = pytest.mark.alone

HERE = Path(__file__).resolve().parent
BUDGET_US = 1500
BURST_US = 150_000          # each burst keeps the measuring thread off its CPU for 150 ms: starved


def test_a_look_at_proc_names_threads_and_marks_rtgauge_s_own():
    """rtgauge.trace.tasks on real processes: a descendant is a load helper, a known
    pid keeps its role, a kernel thread has no command line, init is nobody's."""
    child = subprocess.Popen([sys.executable, "-c", "import subprocess, sys; p = subprocess.Popen(['sleep', '60']); "
                              "print(p.pid, flush=True); sys.stdin.read(); p.kill()", "rtg-look-marker"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        grandchild = int(child.stdout.readline())        # the sleep has been started, and once its
        # command line reads (a vfork'd child lets its parent go on before exec has set its
        # arguments up: an empty cmdline for a moment) it is ready to be looked at
        wait_for(lambda: Path(f"/proc/{grandchild}/cmdline").read_bytes() != b"", "the sleep's command line")
        seen = tasks.look({child.pid: tasks.ENGINE})
        assert seen[child.pid]["own"] == tasks.ENGINE and "rtg-look-marker" in seen[child.pid]["cmdline"]
        assert seen[grandchild]["own"] == tasks.ENGINE and seen[grandchild]["cmdline"] == "sleep 60"
        plain = tasks.look()
        assert plain[child.pid]["own"] == tasks.HELPER and plain[grandchild]["own"] == tasks.HELPER
        assert plain[os.getpid()]["own"] == tasks.ITSELF
        assert plain[1]["own"] is None
        kthreadd = Path("/proc/2/comm")
        if kthreadd.exists() and kthreadd.read_text().strip() == "kthreadd":
            assert plain[2]["cmdline"] is None        # a kernel thread
        # a thread id reads as its process
        tid = next(int(t.name) for t in Path(f"/proc/{os.getpid()}/task").iterdir())
        assert plain[tid]["own"] == tasks.ITSELF
    finally:
        child.stdin.close()
        child.wait(timeout=30)


@pytest.mark.skipif(tracing_ready() is not None, reason=str(tracing_ready()))
def test_run_attribute_with_a_budget_says_why_at_the_end(tmp_path):
    from attribution_e2e import PROFILE, read_back
    from test_loads import rtgauge, rtgauge_popen
    measured = sorted(os.sched_getaffinity(0))[-1]
    prof = tmp_path / "p.toml"
    prof.write_text(PROFILE.format(seconds=7, cpu=measured))
    db = tmp_path / "r.db"
    run = rtgauge_popen("run", "--profile", str(prof), "--db", str(db), "--no-report", "--budget-us", str(BUDGET_US))
    # bursts from now until the run has ended (40 at most, 20 s: bounded; terminated at the end)
    out, err, bursts = disturber.beside(run, measured, 90, BURST_US, 500, 40)
    assert run.returncode == 3, err          # the verdict: no (a hard budget, exceeded); not a failure
    print(out)
    # the run's own summary, at its end: the attribution with the budget as its threshold
    end = out[out.index("Why it spiked"):]
    assert f"above {BUDGET_US:,.1f} µs (the job's budget)" in end
    top = next(ln for ln in end.splitlines() if "top causes:" in ln)
    assert NAME in top.split(";")[0], top              # the first cause is the disturber
    worst = next(ln for ln in end.splitlines() if "worst wake-up:" in ln)
    assert "cause " in worst
    assert "rate: " in end and "per hour" in end       # a rate above the budget is a figure of the machine
    assert "tracing's own cost" in end and "traced" in out[:out.index("Why it spiked")]   # the table's mark
    # the starved job gets a hint, in the verdict: what to look at
    verdict = out[out.index("Can it carry the job?"):out.index("Why it spiked")]
    assert "was starved" in verdict and "the attribution below names it" in verdict
    assert "kernel.sched_rt_runtime_us" in verdict and "higher priority" in verdict
    # stored: the budget as the threshold, the disturber named by its command line too
    a = read_back(tmp_path, db, threshold_from="the job's budget")
    assert a["threshold_us"] == BUDGET_US and a["rate"]["per_hour"] is not None
    mine = [r for r in a["sources"] if NAME in r["source"]]
    assert mine and "disturber.py" in mine[0]["source"], a["sources"][:3]
    injected = [s for s in a["spike_list"] if near_a_burst(s, bursts, 0)]
    assert injected and sum(NAME in s["cause"] for s in injected) >= 0.9 * len(injected), a["spike_list"]
    assert "tracing's own cost" in a["_shown"]
