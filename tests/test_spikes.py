"""The attribution's analysis on synthetic traces with a known answer
(rtgauge/analysis/run/spikes.py, docs/attribution.md); the real engine and kernel trace
are in tests/test_attribution.py."""

from __future__ import annotations

import numpy as np

from rtgauge.analysis.run import spikes

ENGINE = {"rtgauge-engine"}
BASE = 1000_000_000_000          # ns: 1000 s on CLOCK_MONOTONIC


def line(t_us: float, task: str, pid: int, event: str, rest: str, cpu: int = 1) -> str:
    ns = BASE + int(round(t_us * 1000))
    return f"{task:>16}-{pid:<7} [{cpu:03d}] d.h.. {ns // 10**9}.{(ns % 10**9) // 1000:06d}: {event}: {rest}"


def wake(t: float, task: str, pid: int) -> list[str]:
    """The measuring thread's timer interrupt at t: timer vector, hrtimer_wakeup, wake-up."""
    return [line(t, task, pid, "local_timer_entry", "vector=236"),
            line(t + 1, task, pid, "hrtimer_expire_entry", "hrtimer=00000000a function=hrtimer_wakeup now=1"),
            line(t + 2, task, pid, "sched_wakeup", "comm=rtgauge-engine pid=10 prio=19 target_cpu=001"),
            line(t + 3, task, pid, "hrtimer_expire_exit", "hrtimer=00000000a"),
            line(t + 4, task, pid, "local_timer_exit", "vector=236")]


def switch(t: float, prev: str, ppid: int, pprio: int, nxt: str, npid: int, nprio: int) -> str:
    return line(t, prev, ppid, "sched_switch", f"prev_comm={prev} prev_pid={ppid} prev_prio={pprio} prev_state=S "
                f"==> next_comm={nxt} next_pid={npid} next_prio={nprio}")


# Four spikes on CPU 1, deadlines at 100, 10000, 20000 and 30000 µs:
# A: a FIFO 90 thread "hog" holds the CPU from before the deadline to 298 µs after it;
# B: the CPU sleeps, the eth0 handler runs 10..100 µs after the deadline, then the timer;
# C: nothing at all for 1990 µs after the deadline (a host stall);
# D: the CPU sleeps and its timer interrupt comes 60 µs late (exit from idle).
TRACE = [
    switch(50, "<idle>", 0, 120, "hog", 77, 9),
    *wake(102, "hog", 77),
    switch(398, "hog", 77, 9, "rtgauge-engine", 10, 19),
    switch(420, "rtgauge-engine", 10, 19, "<idle>", 0, 120),
    line(10010, "<idle>", 0, "irq_handler_entry", "irq=30 name=eth0"),
    line(10100, "<idle>", 0, "irq_handler_exit", "irq=30 ret=handled"),
    *wake(10101, "<idle>", 0),
    switch(10115, "<idle>", 0, 120, "rtgauge-engine", 10, 19),
    switch(10130, "rtgauge-engine", 10, 19, "<idle>", 0, 120),
    *wake(21990, "<idle>", 0),
    switch(21996, "<idle>", 0, 120, "rtgauge-engine", 10, 19),
    switch(22010, "rtgauge-engine", 10, 19, "<idle>", 0, 120),
    line(30060, "<idle>", 0, "local_timer_entry", "vector=236"),
    line(30061, "<idle>", 0, "softirq_entry", "vec=1 [action=TIMER]"),
    line(30070, "<idle>", 0, "softirq_exit", "vec=1 [action=TIMER]"),
    *wake(30071, "<idle>", 0)[1:],
    switch(30078, "<idle>", 0, 120, "rtgauge-engine", 10, 19),
    line(40000, "other", 5, "irq_handler_entry", "irq=31 name=other-cpu", cpu=0),
]
DEADLINES_US = [100, 10000, 20000, 30000]
LATENCIES_US = [300, 120, 2000, 80]
EXPECTED = ["thread hog (pid 77, FIFO/RR 90)", "irq eth0", "nothing traced (host stall)", "exit from idle"]


def samples():
    n = len(DEADLINES_US)
    return (np.zeros(n, dtype=np.int64), np.arange(n, dtype=np.int64),
            np.array([BASE + d * 1000 for d in DEADLINES_US], dtype=np.int64),
            np.array([lat * 1000 for lat in LATENCIES_US], dtype=np.int64))


def test_each_spike_is_attributed_to_what_held_its_cpu():
    per_cpu, lost = spikes.parse_trace(TRACE)
    assert sorted(per_cpu) == [0, 1] and lost == {}
    chosen = [spikes.Spike(1, 0, k, BASE + d * 1000, lat * 1000)
              for k, (d, lat) in enumerate(zip(DEADLINES_US, LATENCIES_US))]
    spikes.attribute_cpu(per_cpu[1], chosen, ENGINE)
    assert [s.cause() for s in chosen] == EXPECTED
    a, b, c, d = chosen
    assert a.parts["thread hog (pid 77, FIFO/RR 90)"] == 294_000     # 0..298 µs, less the 4 µs timer interrupt
    assert a.parts["wake-up path"] == 2_000
    assert b.parts["irq eth0"] == 90_000
    assert c.parts["nothing traced (host stall)"] == 1_990_000
    assert d.parts["exit from idle"] == 60_000 and d.parts["softirq TIMER"] == 9_000
    for s in chosen:                       # the window is cut, not counted twice
        assert sum(s.parts.values()) == s.latency_ns


def test_broken_methods_get_it_wrong():
    """What the tests on the real trace rely on: the naive readings name something else."""
    per_cpu, _ = spikes.parse_trace(TRACE)
    spike = spikes.Spike(1, 0, 0, BASE + 100_000, 300_000)
    assert spikes.last_interrupt_before(per_cpu[1], spike) == "vector local timer"
    wrong = spikes.Spike(0, 0, 0, spike.deadline_ns, spike.latency_ns)
    spikes.attribute_cpu(per_cpu[0], [wrong], ENGINE)
    assert "hog" not in wrong.cause()


def test_whole_run_summary():
    result = spikes.attribute(TRACE, samples(), {0: 1}, ENGINE, threshold_us=50, cpus=[1])
    assert result["spikes"] == 4 and result["attributed"] == 4 and result["threshold_from"] == "user"
    assert [s["cause"] for s in result["spike_list"]] == [EXPECTED[2], EXPECTED[0], EXPECTED[1], EXPECTED[3]]
    assert result["worst"]["cause"] == "nothing traced (host stall)"
    assert result["worst"]["timeline"][0]["event"] == "local_timer_entry"
    by = {r["source"]: r for r in result["sources"]}
    assert by["irq eth0"]["caused"] == 1 and by["irq eth0"]["worst_us"] == 90.0
    irqs = {r["source"]: r for r in result["irq_sources"]}
    assert irqs["irq 30 eth0"]["count"] == 1 and irqs["irq 30 eth0"]["worst_us"] == 90.0
    assert "irq 31 other-cpu" not in irqs                       # only the measured CPUs
    totals = [r["total_us"] for r in result["irq_sources"]]      # the most time taken first
    assert totals == sorted(totals, reverse=True) and result["irq_sources"][0]["source"] == "irq 30 eth0"
    # the default threshold is the run's p99.9: here the largest wake-up alone is above it
    default = spikes.attribute(TRACE, samples(), {0: 1}, ENGINE, cpus=[1])
    assert default["threshold_from"] == "p99.9 of the run" and default["spikes"] == 1
    # a rate above the run's own quantile is one in a thousand by construction: none is given, and why
    assert default["rate"]["per_hour"] is None and "p99.9" in default["rate"]["why"]
    assert result["rate"]["per_hour"] is not None                 # a threshold given: a rate
    budget = spikes.attribute(TRACE, samples(), {0: 1}, ENGINE, 50, [1], threshold_from="the job's budget")
    assert budget["threshold_from"] == "the job's budget" and budget["rate"]["per_hour"] is not None
    from rtgauge.report.spikes import headline, rate_text
    assert rate_text(default).startswith("no rate: ") and "(the job's budget)" in headline(budget)
    assert "per hour" in rate_text(budget)


# A wake-up 3 ms late whose time went to a "local timer" handler silent for 2.9 ms (as
# a KVM host that stops the vCPU inside the handler leaves it), and one whose time went
# to a function-call IPI's function silent as long (real work: perf's remote_function
# in tests/test_attribution_storm.py holds the CPU that long).
HANDLER_TRACE = [
    switch(50, "rtgauge-engine", 10, 19, "<idle>", 0, 120),
    line(100, "<idle>", 0, "local_timer_entry", "vector=236"),
    line(3000, "<idle>", 0, "hrtimer_expire_entry", "hrtimer=00000000a function=hrtimer_wakeup now=1"),
    line(3001, "<idle>", 0, "sched_wakeup", "comm=rtgauge-engine pid=10 prio=19 target_cpu=001"),
    line(3002, "<idle>", 0, "hrtimer_expire_exit", "hrtimer=00000000a"),
    line(3003, "<idle>", 0, "local_timer_exit", "vector=236"),
    switch(3005, "<idle>", 0, 120, "rtgauge-engine", 10, 19),
    switch(3010, "rtgauge-engine", 10, 19, "<idle>", 0, 120),
    line(10100, "<idle>", 0, "call_function_single_entry", "vector=251"),
    line(10101, "<idle>", 0, "csd_function_entry", "func=remote_function, csd=00000000b"),
    line(13000, "<idle>", 0, "csd_function_exit", "func=remote_function, csd=00000000b"),
    line(13001, "<idle>", 0, "call_function_single_exit", "vector=251"),
    *wake(13002, "<idle>", 0),
    switch(13010, "<idle>", 0, 120, "rtgauge-engine", 10, 19),
]


def handler_causes(**kw) -> list[str]:
    per_cpu, _ = spikes.parse_trace(HANDLER_TRACE)
    chosen = [spikes.Spike(1, 0, 0, BASE + 100_000, 2_905_000), spikes.Spike(1, 0, 1, BASE + 10_100_000, 2_910_000)]
    spikes.attribute_cpu(per_cpu[1], chosen, ENGINE, **kw)
    return [s.cause() for s in chosen]


def test_a_silent_handler_on_a_virtual_machine_is_a_host_stall():
    # on a VM the silent local timer is the host's stall; the IPI's function is its own work
    assert handler_causes(virtual=True) == ["host stall inside vector local timer",
                                            "vector function-call IPI: remote_function"]
    assert spikes.kind_of("host stall inside vector local timer") == "host stall"
    # bare metal, no stall seen: the handler is named (the naive reading the VM rule corrects)
    assert handler_causes() == ["vector local timer", "vector function-call IPI: remote_function"]
    # a stall the engine's observer detected over the IPI's silence: a host stall there too
    stall = [(BASE + 10_500_000, BASE + 12_000_000)]
    assert handler_causes(stalls=stall) == ["vector local timer",
                                            "host stall inside vector function-call IPI: remote_function"]


def test_threads_are_named_by_their_command_line_and_rtgauge_s_own_are_marked():
    tasks = {77: {"cmdline": "/usr/bin/python3 /opt/plant/hog.py --busy", "own": None}}
    per_cpu, _ = spikes.parse_trace(TRACE)
    a = spikes.Spike(1, 0, 0, BASE + 100_000, 300_000)
    spikes.attribute_cpu(per_cpu[1], [a], ENGINE, tasks)
    assert a.cause() == "thread hog (pid 77, FIFO/RR 90) [/usr/bin/python3 /opt/plant/hog.py --busy]"
    assert spikes.thread_label("stress-ng", 5, 120, {5: {"cmdline": "stress-ng --cpu 1", "own": "rtgauge's load helper"}}) \
        == "thread stress-ng (pid 5, nice 0) [rtgauge's load helper: stress-ng --cpu 1]"
    assert spikes.thread_label("kworker/1:2", 6, 120, {6: {"cmdline": None, "own": None}}) \
        == "thread kworker/1:2 (pid 6, nice 0) [kernel thread]"
    assert spikes.thread_label("hog", 7, 120, {}) == "thread hog (pid 7, nice 0)"      # gone before a look
    # a deep checkout: the paths give way to their last parts, so the script still names it
    deep = "/check/work/main/.venv/bin/python /check/work/main/tests/disturber.py --prio 90 --cpu 1"
    assert spikes.thread_label("rtg-disturb", 8, 9, {8: {"cmdline": deep, "own": None}}) \
        == "thread rtg-disturb (pid 8, FIFO/RR 90) [python disturber.py --prio 90 --cpu 1]"
    long = "stress-ng " + " ".join(f"--opt{i} {i}" for i in range(20))
    said = spikes.thread_label("stress-ng", 9, 120, {9: {"cmdline": long, "own": None}})
    assert said.endswith("…]") and len(said) < len(long)


def test_poisson_rate_is_exact():
    r = spikes.poisson_rate(0, 1.0)
    assert r["low"] == 0 and abs(r["high"] - 3.6889) < 1e-3        # the exact 95% bound for no event
    r = spikes.poisson_rate(10, 2.0)
    assert r["per_hour"] == 5 and abs(r["low"] - 4.7954 / 2) < 1e-3 and abs(r["high"] - 18.3904 / 2) < 1e-3


def test_periodicity_finds_a_period_and_not_noise():
    rng = np.random.default_rng(7)
    duration = 120.0
    periodic = sorted(k * 0.25 + rng.normal(0, 0.002) for k in rng.choice(480, 60, replace=False))
    p = spikes.periodicity([t + 1 for t in periodic], duration)
    assert p["periodic"] and abs(p["period_s"] - 0.25) < 0.01 or abs(p["period_s"] * 2 - 0.25) < 0.01
    poisson = np.cumsum(rng.exponential(2.0, 60))
    q = spikes.periodicity(list(poisson[poisson < duration]), duration)
    assert q["tested"] and not q["periodic"], q
    assert not spikes.periodicity([1.0, 2.0], duration)["tested"]


def test_bad_attribution_input_is_refused_before_measuring(tmp_path):
    from test_loads import rtgauge
    from rtgauge.errors import UserError
    from rtgauge.profiles import parse_profile
    db = tmp_path / "r.db"
    p = rtgauge("run", "--db", str(db), "--attribute", "--trace-threshold-us", "5", "--no-report")
    assert p.returncode == 2 and "use one of them" in p.stderr and "Traceback" not in p.stderr, p.stderr
    p = rtgauge("run", "--db", str(db), "--attribute-threshold-us", "0", "--no-report")
    assert p.returncode == 2 and "out of range" in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert not db.exists()
    base = '[[jobs]]\nname = "l"\ntest = "latency"\n'
    for bad in ('attribute = "yes"', "attribute_threshold_us = -3"):
        try:
            parse_profile(f'name = "x"\n[settings]\n{bad}\n{base}', "t.toml")
        except UserError as e:
            assert "settings.attribute" in str(e)
        else:
            raise AssertionError(f"{bad} was accepted")
    prof = parse_profile(f'name = "x"\n[settings]\nattribute_threshold_us = 80\n{base}', "t.toml")
    assert prof.attribute and prof.attribute_threshold_us == 80.0


def test_a_context_left_open_between_windows_does_not_leak():
    """The analysis keeps only the trace around each spike; a softirq whose exit fell in
    the skipped stretch must not own the next spike's window (it did: every later spike
    read "softirq RCU")."""
    trace = [
        switch(0, "<idle>", 0, 120, "rtgauge-engine", 10, 19),
        line(100, "rtgauge-engine", 10, "softirq_entry", "vec=9 [action=RCU]"),
        line(30_200, "rtgauge-engine", 10, "softirq_exit", "vec=9 [action=RCU]"),     # skipped: outside windows
        switch(50_000, "rtgauge-engine", 10, 19, "hog", 77, 9),
        *wake(60_002, "hog", 77),
        switch(60_400, "hog", 77, 9, "rtgauge-engine", 10, 19),
    ]
    n = 2
    smp = (np.zeros(n, dtype=np.int64), np.arange(n, dtype=np.int64),
           np.array([BASE + 50, BASE + 60_000_000 // 1000 * 1000], dtype=np.int64),
           np.array([60_000, 400_000], dtype=np.int64))
    result = spikes.attribute(trace, smp, {0: 1}, ENGINE, threshold_us=10, cpus=[1])
    causes = {s["cycle"]: s["cause"] for s in result["spike_list"]}
    assert causes[1] == "thread hog (pid 77, FIFO/RR 90)", result["spike_list"]


def test_an_ipi_storm_is_named_with_the_function_it_ran():
    """Function-call IPIs back to back from before the deadline to after the timer
    fired: the storm owns the window, named with the function each IPI ran (csd events);
    an IPI without csd events keeps the vector's name; a reschedule IPI nested in it,
    whose exit closes only itself, does not end the storm's context; and the storm's
    context ends at its own exit, not at a nested function's."""
    def ipi(t: float, task: str, pid: int, length: float, fn: str | None = "remote_function") -> list[str]:
        out = [line(t, task, pid, "call_function_single_entry", "vector=251")]
        if fn:
            out += [line(t + 1, task, pid, "csd_function_entry", f"func={fn}, csd=00000000c"),
                    line(t + length - 1, task, pid, "csd_function_exit", f"func={fn}, csd=00000000c")]
        return out + [line(t + length, task, pid, "call_function_single_exit", "vector=251")]

    trace = [
        switch(0, "<idle>", 0, 120, "work", 50, 120),
        *ipi(90, "work", 50, 400),                                   # 90..490, deadline at 100
        *wake(491, "work", 50),                                      # the timer, pending since 100
        *ipi(496, "work", 50, 300),                                  # 496..796: before the switch
        line(800, "work", 50, "call_function_single_entry", "vector=251"),
        line(810, "work", 50, "reschedule_entry", "vector=253"),
        line(812, "work", 50, "reschedule_exit", "vector=253"),
        line(900, "work", 50, "call_function_single_exit", "vector=251"),   # 800..900, no csd events
        switch(902, "work", 50, 120, "rtgauge-engine", 10, 19),
        switch(910, "rtgauge-engine", 10, 19, "work", 50, 120),
    ]
    per_cpu, _ = spikes.parse_trace(trace)
    spike = spikes.Spike(1, 0, 0, BASE + 100_000, 805_000)           # wakes at 905 µs
    spikes.attribute_cpu(per_cpu[1], [spike], ENGINE)
    fn, bare = "vector function-call IPI: remote_function", "vector function-call IPI"
    assert spike.cause() == fn, spike.parts
    assert spike.parts[fn] == (489 - 100 + 795 - 497) * 1000
    assert spike.parts[bare] == (1 + 2 + 98) * 1000                  # around the csd functions, and the bare IPI
    assert spike.parts["vector reschedule IPI"] == 2_000
    assert spike.parts["thread work (pid 50, nice 0)"] == (1 + 1 + 4 + 2) * 1000   # between the interrupts
    assert spike.parts["vector local timer: hrtimer_wakeup"] == 2_000 and spike.parts["wake-up path"] == 3_000
    assert sum(spike.parts.values()) == spike.latency_ns
    assert spikes.kind_of(fn) == "interrupt"
