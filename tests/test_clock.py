"""The Python logic that waits, run on a fake clock (rtgauge/clock.py): a warm-up that a
signal cuts short, the host's deadline on a tool that overruns, and --until-verdict's
ceiling on rounds. Time moves only when the code under test sleeps, so an hour-long
deadline or a one-hour --max-time is reached without waiting for it; the processes,
the signals and the store are real. The engine runs at SCHED_OTHER without mlock here:
these tests start no real-time work (the background pass, tests/conftest.py)."""

from __future__ import annotations

import io
import os
import signal
import time
from types import SimpleNamespace

import pytest
from rich.console import Console

from rtgauge.clock import SYSTEM, FakeClock
from rtgauge.plan import Job, host_deadline_s
from rtgauge.plan.execute import Interrupted, RunSettings, StopFlag, execute, interrupts_flagged, measure
from rtgauge.store import open_store

QUIET = {"policy": "other", "no-mlock": True, "interval-us": 1000}


def test_the_fake_clock_moves_only_when_slept_on():
    clock = FakeClock(start=5.0)
    assert clock.monotonic() == clock.monotonic() == 5.0
    clock.sleep(0.25)
    clock.advance(1.0)
    assert clock.monotonic() == 6.25 and clock.slept == [0.25]
    with pytest.raises(ValueError):
        clock.sleep(-1)
    assert SYSTEM.monotonic() <= time.monotonic()


def test_a_stop_flag_sleeps_its_whole_length_in_short_steps():
    clock = FakeClock()
    flag = StopFlag(clock)
    flag.sleep(2.5)
    assert clock.monotonic() == pytest.approx(1002.5, abs=1e-9)
    # short steps, so a signal is seen within 0.1 s of arriving
    assert max(clock.slept) <= 0.1 and 25 <= len(clock.slept) <= 26


def test_a_signal_during_the_warm_up_ends_it_at_the_next_step():
    """A real SIGTERM sent to this process 1 s into a 10-minute warm-up: the handler of
    interrupts_flagged sets the flag, and the sleep raises within one step (0.1 s)."""
    sent = []

    def at_one_second(clock):
        if not sent and clock.monotonic() >= 1001.0:
            sent.append(clock.monotonic())
            os.kill(os.getpid(), signal.SIGTERM)

    clock = FakeClock(on_sleep=at_one_second)
    with interrupts_flagged(clock) as flag:
        with pytest.raises(Interrupted, match="SIGTERM"):
            flag.sleep(600)
    assert sent and clock.monotonic() - sent[0] <= 0.1 + 1e-9
    # without a signal the same flag would have slept on: the ending is the signal's
    assert clock.monotonic() < 1000.0 + 600


def test_the_host_deadline_stops_an_engine_that_overruns(engine_bin, monkeypatch):
    """An engine asked for an hour: the host's deadline (host_deadline_s, past the engine's
    own watchdog) comes on the fake clock after its polls, and the real engine process is
    killed there and the job stored as failed, without an hour passing."""
    monkeypatch.setenv("RTGAUGE_ENGINE", engine_bin)
    job = Job("latency@idle", "engine", "latency", "idle", dict(QUIET, **{"duration-s": 3600}), [0],
              expected_s=3600.0)
    deadline = host_deadline_s(job)
    assert deadline > 3600

    def never_past_the_deadline(clock):       # the broken method (no deadline) would poll forever
        assert clock.monotonic() - 1000.0 <= deadline + 0.2, "the host's deadline did not fire"

    clock = FakeClock(on_sleep=never_past_the_deadline)
    ticks: list[float] = []
    t0 = time.monotonic()
    doc, status, interrupted, command = measure(job, RunSettings(warmup_s=0.0, clock=clock), StopFlag(clock),
                                                ticks.append)
    real = time.monotonic() - t0
    assert status == -signal.SIGKILL and not interrupted
    assert doc["ok"] is False and "produced no result" in doc["error"]
    waited = clock.monotonic() - 1000.0
    assert deadline < waited <= deadline + 0.1 + 1e-6
    assert ticks == sorted(ticks) and ticks[-1] <= waited and ticks[0] == 0.0
    assert real < 600, real        # a watchdog on the test, not a speed: the hour never passed


class ClockedView:
    """The run's progress, where a job of planned length L advances the clock by L: the fake
    clock's account of rounds that really measure for 0.6 s but are planned as 10 minutes."""

    def __init__(self, clock: FakeClock, jobs, warmup_s: float):
        from rtgauge.plan.progress import ProgressView
        self.view = ProgressView(Console(file=io.StringIO(), width=200), jobs, warmup_s)
        self.clock = clock

    def __getattr__(self, name):
        return getattr(self.view, name)

    def start_job(self, job):
        self.clock.advance(job.expected_s)
        self.view.start_job(job)


@pytest.mark.parametrize("max_time, rounds", [("1h", 6), ("50m", 5), ("10m", 1)])
def test_until_verdict_stops_before_the_round_that_would_pass_max_time(engine_bin, tmp_path, monkeypatch,
                                                                       max_time, rounds):
    """Rounds planned at 10 minutes under a budget no short round can decide: rounds are
    added while one more fits in --max-time (a round that ends exactly at it fits: 1h
    takes six), and the round that would pass it is not started. The rounds are real
    engine runs into a real store; only their length is the fake clock's. Two wake-ups
    1 s apart a round, so that no wake-up is skipped on a loaded machine (a skipped
    period breaks a hard budget and decides the verdict at once; at 300 ms a host stall
    of the VM under the suite's background pass once did)."""
    from rtgauge.analysis.run.verdict import make_budget
    from rtgauge.plan.judge import until_verdict
    from rtgauge.plan.execute import parse_duration
    from test_report_builders import SYSTEM as FACTS
    monkeypatch.setenv("RTGAUGE_ENGINE", engine_bin)
    options = dict(QUIET, **{"interval-us": 1_000_000, "duration-s": 2})
    jobs = [Job("latency@idle", "engine", "latency", "idle", options, [0], expected_s=600.0)]
    clock = FakeClock()
    started = clock.monotonic()
    out = io.StringIO()
    args = SimpleNamespace(budget=make_budget(5_000_000), max_time=max_time, max_time_s=parse_duration(max_time))
    settings = RunSettings(warmup_s=0.0, say=lambda s: None)
    view = ClockedView(clock, jobs, 0.0)
    with open_store(f"sqlite:///{tmp_path / 'r.db'}") as store:
        run_id = store.begin_run(FACTS, [], "t", "", ["pytest"])
        status, _ = execute(store, run_id, jobs, 0.0, view, settings)
        assert status == "complete"
        status = until_verdict(Console(file=out, width=300), store, run_id, jobs, 0.0, view, settings, args,
                               started, clock)
        measured = [m.get("round") for m in store.get_run(run_id).to_dict()["measurements"]]
    assert status == "complete"
    assert [r or 1 for r in measured] == list(range(1, rounds + 1)), (measured, out.getvalue())
    assert clock.monotonic() - started == 600.0 * rounds <= args.max_time_s
    text = out.getvalue()
    assert f"still undecided; another round (600 s) would pass --max-time {max_time}" in text
    assert text.count("measuring round") == rounds - 1
