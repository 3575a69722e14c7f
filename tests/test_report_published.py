"""The published evaluations beside the measurements (rtgauge/analysis/studies/published.py):
every published row lands beside the measurement of the matching method and
condition, or is marked "different method" and not compared; the interrupt rows sit
beside ti_irq when a --split run exists; the report, compare and show --json show
them; figures never print a max below its average; several runs' histograms are
overlaid in one figure. Synthetic runs for the mapping, short real engine runs for
the end-to-end path."""

from __future__ import annotations

from conftest import cli, needs_root
import json
import re
import subprocess
import sys
from dataclasses import replace

import pytest

from rtgauge.analysis.studies.micro import micro_rows
from rtgauge.analysis.studies.published import METHODS, place, published_verdicts, studies
from rtgauge.published import load_published
from rtgauge.records import Run
from rtgauge.report.html import render
from rtgauge.report.numbers import fmt_group
from rtgauge.store import open_store
from test_report_builders import distribution, job, latency_document, micro_document, store_run


def stored(tmp_path, *runs_docs) -> list[Run]:
    url = f"sqlite:///{tmp_path / 'r.db'}"
    ids = [store_run(url, docs) for docs in runs_docs]
    with open_store(url) as s:
        return [s.get_run(i) for i in ids]


def split_latency(condition_seed: int = 1) -> dict:
    """A split wake-up at the interrupt study's settings (4 kHz, priority 99)."""
    doc = latency_document(seed=condition_seed, interval_us=250)
    doc["params"]["split"] = True
    doc["params"]["priority"] = doc["env"]["priority"] = 99
    doc["metrics"]["ti_irq"] = distribution([1500 + (k * 37) % 900 for k in range(3000)])
    doc["metrics"]["ti_sched"] = distribution([4000 + (k * 53) % 2000 for k in range(3000)])
    return doc


def tick_document(with_split: bool = True) -> dict:
    gaps = [9000 + (k * 31) % 4000 for k in range(500)] + [51_800_000]
    doc = {"schema": 1, "test": "tick", "ok": True, "interrupted": False, "params": {"duration_s": 2},
           "env": {"policy": "fifo", "priority": 80}, "metrics": {"gap": distribution(gaps)}, "verdicts": {}}
    if with_split:
        doc["metrics"]["tick_gap"] = distribution(gaps[:-1])
        doc["metrics"]["other_gap"] = distribution(gaps[-1:])
    return doc


def row(runs, source, test, condition="idle"):
    for study, rows in studies(runs):
        if study.source == source:
            for r in rows:
                if r.test == test and r.condition == condition:
                    return r
    raise AssertionError(f"no row {source} {test} {condition}")


def test_every_published_row_has_a_method():
    """No published row is silently left out: each has a method (matching measurement,
    or a stated difference), except the tire study's maps, shown in the tire section."""
    missing = {p.test for p in load_published() if not p.test.startswith("tire_") and p.test not in METHODS}
    assert not missing
    for name, m in METHODS.items():
        assert m.match or m.near or m.unmatched, name


def test_interrupt_rows_sit_beside_ti_irq_only_with_a_split(tmp_path):
    plain = [(job("latency@idle", "latency"), latency_document())]
    split = [(job("latency@idle", "latency"), split_latency())]
    a, b = stored(tmp_path, plain, split)
    for source, test in (("rtlinux-rtems-2000", "interrupt_latency"),
                         ("qnx65-vs-linux-rt-2012", "IRQ-P-LAT interrupt latency"),
                         ("xenomai3-arm-2016", "xenomai_latency_timer_irq")):
        r = row([a, b], source, test)
        pa, pb = r.placed[a.id], r.placed[b.id]
        assert pa["status"] == "different method" and "not interrupt latency" in pa["note"]
        assert "stats" not in pa                         # not compared: no figure beside it
        assert pb["status"] == "compared" and pb["metric"] == "ti_irq"
        assert pb["stats"]["max"] == pytest.approx(b.measurements[0].metric("ti_irq").max / 1000)
    # the wake-up latency rows (cyclictest) stay beside ti
    r = row([a, b], "xenomai3-arm-2016", "cyclictest")
    assert r.placed[b.id]["metric"] == "ti" and r.placed[a.id]["metric"] == "ti"


def test_the_interrupt_studys_load_is_ping_tcp_not_a_cpu_stressor(tmp_path):
    cpu = [(job("latency@cpu", "latency", "cpu"), split_latency())]
    ping = [(job("latency@ping-tcp", "latency", "ping-tcp"), split_latency(2))]
    a, b = stored(tmp_path, cpu, ping)
    r = row([a, b], "rtlinux-rtems-2000", "interrupt_latency", "loaded")
    assert r.our_condition == "ping-tcp"
    assert r.placed[a.id]["status"] == "not measured"
    assert r.placed[b.id]["status"] == "compared" and r.placed[b.id]["measurement"] == "latency@ping-tcp"
    # while the cyclictest study's cpu-stressed rows take the CPU stressor
    r = row([a, b], "xenomai3-arm-2016", "cyclictest", "cpu-stressed")
    assert r.placed[a.id]["status"] == "compared" and r.placed[b.id]["status"] == "not measured"


@pytest.mark.parametrize("docs, status, note", [
    ([("preempt-timer@idle", "preempt", {"event": "timer"})], "different method", "includes the interrupt latency"),
    ([("preempt@idle", "preempt", {})], "different method", "posted by a running thread"),
    ([("switch@idle", "switch", {"threads": 2})], "different method", "yielding"),
    ([("preempt@idle", "preempt", {"event": "sem"}), ("preempt-timer@idle", "preempt", {"event": "timer"})],
     "different method", "includes the interrupt latency"),
])
def test_context_switch_never_sits_beside_an_interval_from_the_deadline(tmp_path, docs, status, note):
    """The study's context switch starts at the interrupt: a preemption timed from the
    timer's deadline (interrupt latency + switch) is named, not compared."""
    metric = {"preempt": "preempt", "switch": "switch"}
    run_docs = [(job(name, test), micro_document(test, {metric[test]: 3000}, params)) for name, test, params in docs]
    [run] = stored(tmp_path, run_docs)
    r = row([run], "rtlinux-rtems-2000", "context_switch")
    p = r.placed[run.id]
    assert p["status"] == status and note in p["note"] and "stats" not in p
    # the micro table agrees: neither the yield ring nor the timer preemption carries
    # the interrupt study's rows; the timer preemption carries the tire study's
    for mrow in micro_rows([run]):
        studies_beside = {q.source for q in mrow.published}
        assert "rtlinux-rtems-2000" not in studies_beside
        if mrow.test == "preempt" and mrow.params.get("event") == "timer":
            assert "rtos-vs-gpos-tire-2015" in studies_beside


def test_context_switch_sits_beside_ti_sched_of_the_split_wakeup(tmp_path):
    """With the split, the context-switch rows (idle and loaded) are compared with
    ti_sched, the interval from the interrupt to the thread running, while the same
    run's preempt --event timer stays a different method."""
    idle = (job("interrupt-latency@idle", "latency"), split_latency())
    loaded = (job("interrupt-latency@ping-tcp", "latency", "ping-tcp"), split_latency(2))
    pre = (job("context-switch@idle", "preempt"), micro_document("preempt", {"preempt": 3000}, {"event": "timer"}))
    [run] = stored(tmp_path, [idle, loaded, pre])
    for cond, name, m in (("idle", "interrupt-latency@idle", run.measurements[0]),
                          ("loaded", "interrupt-latency@ping-tcp", run.measurements[1])):
        p = row([run], "rtlinux-rtems-2000", "context_switch", cond).placed[run.id]
        assert p["status"] == "compared" and p["metric"] == "ti_sched" and p["measurement"] == name
        assert p["stats"]["max"] == pytest.approx(m.metric("ti_sched").max / 1000)
        # ti_sched is not ti_irq: the interrupt-latency row of the same wake-up differs
        irq = row([run], "rtlinux-rtems-2000", "interrupt_latency", cond).placed[run.id]
        assert irq["metric"] == "ti_irq" and irq["stats"]["max"] != p["stats"]["max"]


def test_the_tire_studys_preemption_row_is_compared_with_the_timer_preemption(tmp_path):
    pre = [(job("preemption@idle", "preempt"), micro_document("preempt", {"preempt": 3000}, {"event": "timer"}))]
    sem = [(job("preemption@idle", "preempt"), micro_document("preempt", {"preempt": 3000}, {"event": "sem"}))]
    a, b = stored(tmp_path, pre, sem)
    r = row([a, b], "rtos-vs-gpos-tire-2015", "preemption")
    assert r.placed[a.id]["status"] == "compared"
    assert r.placed[b.id]["status"] == "different method"


def test_the_shipped_tire_profiles_run_the_compared_preemption():
    """The profile runs what the matcher compares (it did not: the row was never compared)."""
    from rtgauge.profiles import load_profile
    for name in ("tire-study", "tire-study-quick"):
        jobs = [j for j in load_profile(name).jobs if j.test == "preempt"]
        assert jobs and all(j.options.get("event") == "timer" for j in jobs), name


def test_a_max_of_fewer_samples_is_marked_not_comparable(tmp_path):
    """A maximum is comparable only at a comparable sample count per CPU: 3,000 samples
    over two CPUs (1,500 a CPU) beside the interrupt study's 2,000,000 are marked,
    3,000,000 over two (1,500,000 a CPU) are not; averages stay compared."""
    small = [(job("latency@idle", "latency"), split_latency())]
    big_doc = split_latency()
    big_doc["metrics"]["ti_irq"]["count"] = 3_000_000
    big = [(job("latency@idle", "latency"), big_doc)]
    a, b = stored(tmp_path, small, big)
    r = row([a, b], "rtlinux-rtems-2000", "interrupt_latency")
    pa, pb = r.placed[a.id], r.placed[b.id]
    assert pa["status"] == "compared" and pa["max_comparable"] is False
    assert "not comparable" in pa["max_note"] and "2,000,000" in pa["max_note"]
    assert pb["max_comparable"] is True and "max_note" not in pb
    html = section(render([a]), "published")
    assert "max of 1,500 samples per CPU beside maxima of 2,000,000: not comparable" in html


def test_published_cyclictest_figures_sit_beside_the_cyclictest_run(tmp_path):
    """The cyclictest study's cyclictest rows go beside the profile's cyclictest run, the
    Xenomai latency tool's beside the engine's latency."""
    eng = latency_document(seed=1)
    ct = latency_document(seed=2)
    ct["tool"] = "cyclictest"
    [run] = stored(tmp_path, [(job("latency@idle", "latency"), eng),
                              (job("latency@idle/cyclictest", "latency", tool="cyclictest"), ct)])
    p = row([run], "xenomai3-arm-2016", "cyclictest").placed[run.id]
    assert p["status"] == "compared" and p["tool"] == "cyclictest"
    assert p["measurement"] == "latency@idle/cyclictest"
    u = row([run], "xenomai3-arm-2016", "xenomai_latency_user").placed[run.id]
    assert u["tool"] == "engine" and u["measurement"] == "latency@idle"


def test_clock_tick_duration_sits_beside_tick_gaps_not_host_stalls(tmp_path):
    a, b = stored(tmp_path, [(job("tick@idle", "tick"), tick_document(True))],
                  [(job("tick@idle", "tick"), tick_document(False))])
    r = row([a, b], "qnx65-vs-linux-rt-2012", "CLK-P-DUR clock tick duration")
    pa, pb = r.placed[a.id], r.placed[b.id]
    assert pa["status"] == "compared" and pa["metric"] == "tick_gap"
    assert pa["stats"]["max"] < 100          # µs: the 51.8 ms stall is not beside the published 145 µs
    assert pb["status"] == "different method" and "host stalls" in pb["note"]
    html = render([a, b])
    assert "51,800" not in section(html, "published")


def section(html: str, ident: str) -> str:
    start = html.index(f"<section id='{ident}'")
    return html[start:html.index("</section>", start)]


def test_published_verdicts_show_a_disagreement(tmp_path):
    docs = [(job("pi-sem@idle", "pi"), micro_document("pi", {}, {"primitive": "sem"},
                                                      {"protected": {"pass": False, "detail": "high waited 200 ms"}})),
            (job("pi-mutex@idle", "pi"), micro_document("pi", {}, {"primitive": "pi-mutex"},
                                                        {"protected": {"pass": True, "detail": "ok"}}))]
    [run] = stored(tmp_path, docs)
    rows = {r["published"]: r for r in published_verdicts([run])}
    sem = next(r for k, r in rows.items() if "semaphores" in k)
    assert sem["published_pass"] is True and sem["cells"][run.id]["agrees"] is False
    pim = next(r for k, r in rows.items() if "inheritance" in k)
    assert pim["cells"][run.id]["agrees"] is True
    html = section(render([run]), "published")
    assert html.count("disagrees with the published verdict") == 1


@pytest.mark.parametrize("exp", range(-3, 8))   # µs: from 1 ns (the finest figure) up
def test_no_max_is_printed_below_its_average(exp):
    for ratio in (1.0, 1.0001, 1.04, 1.5, 3, 10, 1000):
        for base in (1.0, 1.049, 2.96, 4.9999, 9.96):
            avg = base * 10.0 ** exp
            mx = avg * ratio
            a, m = (float(t.replace(",", "")) for t in fmt_group([avg, mx]))
            assert m >= a, (avg, mx)
            assert a > 0, (avg, "a positive figure must not print as zero")


def test_micro_table_never_prints_a_max_below_its_average(tmp_path):
    docs = [(job(f"sem-{i}@idle", "sem"), micro_document("sem", {"release": 10 ** (i / 2)}, {"waiters": i + 1}, seed=i))
            for i in range(0, 12)]
    [run] = stored(tmp_path, docs)
    html = section(render([run]), "micro")
    pairs = re.findall(r"<td>([\d.,]+)</td><td><b>([\d.,]+)</b></td>", html)
    assert len(pairs) == 12
    for a, m in pairs:
        assert float(m.replace(",", "")) >= float(a.replace(",", "")), (a, m)


def test_overlaid_histogram_has_one_curve_per_run(tmp_path):
    runs = stored(tmp_path, *[[(job("latency@idle", "latency"), latency_document(median_ns=5000 * (k + 1), seed=k))]
                              for k in range(3)])
    html = section(render(runs), "published")
    m = re.search(r"<svg[^>]*aria-label='Wake-up latency, idle: every system'.*?</svg>", html)
    assert m, "no overlaid histogram"
    assert m.group(0).count("<polyline") == 3
    for r in runs:
        assert f"run {r.id}: rig-1" in m.group(0)     # the legend tells the runs apart


@needs_root
@pytest.mark.shared
def test_real_engine_runs_place_the_interrupt_rows_beside_ti_irq(tmp_path, run_engine):
    """Short real runs: latency --split (the interrupt rows), tick (CLK-P-DUR), preempt
    with a semaphore (the context switch: a different method). Skipped only where the
    engine says the split itself is unavailable (a kernel or build without it); any other
    refusal fails."""
    docs = []
    r = run_engine("latency", "--split", "--duration-s", "0.3", "--interval-us", "250", timeout=60)
    if r.status != 0 and "the latency split" in r.stderr:
        pytest.skip(f"the split is unavailable here: {r.stderr.strip()}")
    assert r.status == 0 and "ti_irq" in (r.doc or {}).get("metrics", {}), r.stderr
    docs.append((job("latency-split@idle", "latency"), r.doc))
    t = run_engine("tick", "--duration-s", "0.3", timeout=60)
    assert t.status == 0, t.stderr
    docs.append((job("tick@idle", "tick"), t.doc))
    p = run_engine("preempt", "--iterations", "500", timeout=60)
    assert p.status == 0, p.stderr
    docs.append((job("preempt@idle", "preempt"), p.doc))
    url = f"sqlite:///{tmp_path / 'r.db'}"
    run_id = store_run(url, docs)
    with open_store(url) as s:
        run = s.get_run(run_id)
    irq = row([run], "rtlinux-rtems-2000", "interrupt_latency").placed[run_id]
    assert irq["status"] == "compared" and irq["metric"] == "ti_irq"
    assert irq["stats"]["max"] == pytest.approx(r.doc["metrics"]["ti_irq"]["max"] / 1000)
    assert irq["stats"]["stddev"] == pytest.approx(r.doc["metrics"]["ti_irq"]["stddev"] / 1000)
    ctx = row([run], "rtlinux-rtems-2000", "context_switch").placed[run_id]
    assert ctx["status"] == "compared" and ctx["metric"] == "ti_sched"      # the split wake-up
    assert ctx["stats"]["max"] == pytest.approx(r.doc["metrics"]["ti_sched"]["max"] / 1000)
    clk = row([run], "qnx65-vs-linux-rt-2012", "CLK-P-DUR clock tick duration").placed[run_id]
    if t.doc["periodicity"]["config_hz"]:
        assert clk["status"] == "compared" and clk["metric"] == "tick_gap"
        # the tick duration's max is a gap of the recorded ones (µs from ns: compare in µs)
        assert clk["stats"]["max"] <= t.doc["metrics"]["gap"]["max"] / 1000 + 1e-9
    html = section(render([run]), "published")
    assert "latency-split@idle ti_irq" in html
    # avg ± σ of the interrupt study, from the engine's stddev
    assert re.search(r"\(\d[\d.,]* ± \d[\d.,]*\)", html)
    # show --json carries the same placement
    out = cli(["show", str(run_id), "--json", "--db", url], timeout=60)
    assert out.returncode == 0, out.stderr
    pub = json.loads(out.stdout)["published"]
    st = next(s for s in pub["studies"] if s["source"] == "rtlinux-rtems-2000")
    jr = next(x for x in st["rows"] if x["test"] == "interrupt_latency" and x["condition"] == "idle")
    assert jr["measured"][str(run_id)]["metric"] == "ti_irq"
    assert jr["published"]["RTL"]["max"]["us"] == pytest.approx(13.5)
    # compare prints the published tables too
    run2 = store_run(url, docs)
    cmp = cli(["compare", str(run_id), str(run2), "--db", url], timeout=120)
    assert cmp.returncode == 0, cmp.stderr
    assert "interrupt-latency / context-switch study" in cmp.stdout and "RTEMS native" in cmp.stdout
    assert place(run, METHODS["context_switch"], "ping-tcp")["status"] == "not measured"


def _system(realtime: bool, virt: str | None = None) -> dict:
    from test_report_builders import SYSTEM
    return dict(SYSTEM, realtime=realtime, preempt_model="PREEMPT_RT" if realtime else "full",
                **({"emulated": True, "virtualization": {"vm": True, "kind": virt, "emulated": True}} if virt else {}))


def _latency_run(url, median_ns, spike_ns, realtime, virt=None, cpu_scale=1.5):
    docs = [(job("latency@idle", "latency"), latency_document(median_ns=median_ns, spike_ns=spike_ns)),
            (job("latency@cpu", "latency", "cpu"),
             latency_document(median_ns=median_ns * cpu_scale, spike_ns=spike_ns, seed=3))]
    return store_run(url, docs, system=_system(realtime, virt))


def test_conclusions_are_checked_per_run_and_across_systems(tmp_path):
    """The cyclictest study's findings: one run decides 'the stressor raises the
    average'; 'PREEMPT_RT below mainline' needs both kinds, and is not drawn from an
    emulated system (tests/test_conclusions.py: a virtual machine's real facts are). Both outcomes of each check are reachable."""
    from rtgauge.analysis.studies.conclusions import check_conclusions
    url = f"sqlite:///{tmp_path / 'r.db'}"
    rt = _latency_run(url, 8000, 40000, True)
    gp = _latency_run(url, 9000, 900000, False)
    flat = _latency_run(url, 9000, 30000, False, cpu_scale=0.7)     # cpu not worse: the check fails
    vm = _latency_run(url, 9000, 900000, False, virt="qemu-tcg")
    with open_store(url) as s:
        rt, gp, flat, vm = (s.get_run(i) for i in (rt, gp, flat, vm))
    src = {"xenomai3-arm-2016"}
    one = {c.conclusion.key: c for c in check_conclusions([rt], src)}
    assert one["stressed-average-worse"].status == "holds"
    assert (one["rt-below-mainline"].status, one["rt-below-mainline"].reason) == ("not decidable",
                                                                               "needs a second system")
    assert {c.conclusion.key: c for c in check_conclusions([flat], src)}["stressed-average-worse"].status \
        == "does not hold"
    both = {c.conclusion.key: c for c in check_conclusions([rt, gp], src)}
    assert both["rt-below-mainline"].status == "holds"
    # swap the roles: the 'real-time' run with the larger worst case fails the check
    swapped = {c.conclusion.key: c for c in check_conclusions(
        [replace(rt, system=_system(False)), replace(gp, system=_system(True))], src)}
    assert swapped["rt-below-mainline"].status == "does not hold"
    assert {c.conclusion.key: c for c in check_conclusions([rt, vm], src)}["rt-below-mainline"].reason == "emulated"
    html = section(render([rt, gp]), "published")
    assert "conclusions, checked on these runs" in html and "worst case is far below mainline" in html


def test_the_interrupt_studys_conclusions_on_split_runs(tmp_path):
    from rtgauge.analysis.studies.conclusions import check_conclusions
    idle = (job("interrupt-latency@idle", "latency"), split_latency())
    loaded_doc = split_latency(2)
    loaded_doc["metrics"]["ti_irq"] = distribution([1500 + (k * 37) % 900 for k in range(2999)] + [90000])
    loaded = (job("interrupt-latency@ping-tcp", "latency", "ping-tcp"), loaded_doc)
    [run] = stored(tmp_path, [idle, loaded])
    got = {c.conclusion.key: c for c in check_conclusions([run], {"rtlinux-rtems-2000"})}
    # ti_irq idle: values 1500..2399, avg ~1950 -> avg/max ~0.81: not an order of magnitude
    assert got["averages-tenth-of-maxima"].status == "does not hold"
    assert got["loaded-worse-than-idle"].status == "holds"       # 90 µs against 2.4 µs
    out = cli(["show", str(run.id), "--json", "--db",
               f"sqlite:///{tmp_path / 'r.db'}"], timeout=60)
    assert out.returncode == 0, out.stderr
    keys = {c["key"]: c["status"] for c in json.loads(out.stdout)["published"]["conclusions"]}
    assert keys["loaded-worse-than-idle"] == "holds"


def gumbel_latency(seed: int, blocks: int, cycles_per_block: int, loc_ns: float, scale_ns: float) -> dict:
    """A latency document whose per-window maxima are Gumbel(loc, scale): the level a
    window of m cycles exceeds with probability q is loc - scale * ln(-ln(1 - q))."""
    import numpy as np
    doc = latency_document(cpus=1, seed=seed)
    doc["params"]["priority"] = doc["env"]["priority"] = 99      # the cyclictest study's settings
    maxima = [int(v) for v in np.random.default_rng(seed).gumbel(loc_ns, scale_ns, blocks)]
    series = {"unit": "ns", "window_ns": 1_000_000_000, "start_ns": 1, "max": maxima}
    doc["metrics"]["ti_window_max"] = series
    doc["metrics"]["ti_window_max#0"] = dict(series)
    doc["metrics"]["cycles"] = {"unit": "count", "value": cycles_per_block * blocks}
    doc["metrics"]["ti"]["max"] = max(maxima)
    doc["metrics"]["ti"]["count"] = cycles_per_block * blocks
    doc["params"]["duration_s"] = blocks
    return doc


def test_a_max_of_fewer_samples_is_projected_to_the_studys_count_with_a_known_tail(tmp_path):
    """The cyclictest study's maxima rest on about 1,000,000 samples; a run of 200,000
    (200 windows of 1,000) is projected there with the worst-case model. The windows'
    maxima are Gumbel with a known scale, so the projection has an analytic answer: the
    level exceeded once in 1,000,000 cycles, i.e. by a window of 1,000 with probability
    1e-3. The projection lands near it and its interval holds it."""
    import math
    loc, scale, m, blocks = 50_000.0, 4_000.0, 1_000, 200
    doc = gumbel_latency(3, blocks, m, loc, scale)
    [run] = stored(tmp_path, [(job("latency@idle", "latency"), doc)])
    p = row([run], "xenomai3-arm-2016", "cyclictest").placed[run.id]
    assert p["status"] == "compared" and p["max_comparable"] is False
    truth = loc - scale * math.log(-math.log(1 - m / 1_000_000))
    proj = p["projected"]
    assert proj["samples"] == 1_000_000 and "level_ns" in proj, proj
    assert proj["level_ns"] == pytest.approx(truth, rel=0.08)
    assert proj["ci_low_ns"] <= truth <= proj["ci_high_ns"]
    # the tolerance tells the right per-cycle reading from a wrong one: the study's count
    # taken as windows (exceedance 1e-6 a window) would sit ~35 % higher
    wrong = loc - scale * math.log(-math.log(1 - 1 / 1_000_000))
    assert wrong != pytest.approx(truth, rel=0.08)
    assert "projected to 1,000,000 samples with the worst-case model" in p["max_note"]
    html = section(render([run]), "published")
    assert "projected to 1,000,000 samples" in html


def test_a_projection_the_model_cannot_make_says_why(tmp_path):
    """Windows whose maxima climb steadily (a drifting machine: not identically
    distributed) get no projected number, only the model's reason."""
    doc = gumbel_latency(4, 200, 1_000, 50_000.0, 1_000.0)
    doc["metrics"]["ti_window_max"]["max"] = [40_000 + 400 * k for k in range(200)]
    doc["metrics"]["ti_window_max#0"] = dict(doc["metrics"]["ti_window_max"])
    doc["metrics"]["ti"]["max"] = 40_000 + 400 * 199
    [run] = stored(tmp_path, [(job("latency@idle", "latency"), doc)])
    p = row([run], "xenomai3-arm-2016", "cyclictest").placed[run.id]
    assert "level_ns" not in p["projected"] and p["projected"]["reason"]
    assert "no credible projection to 1,000,000 samples" in p["max_note"]


def test_rows_no_run_measured_are_left_out_and_counted(tmp_path):
    """A run of the idle latency alone: the studies' rows it did not measure (loaded
    conditions, other tests) are not walls of "not measured" cells; the page and the
    terminal say how many were left out, and every row stays in the data."""
    import io
    from rich.console import Console
    from rtgauge.report.terminal import print_published
    [run] = stored(tmp_path, [(job("latency@idle", "latency"), latency_document(cpus=1, seed=5))])
    found = studies([run])
    assert found
    html = section(render([run]), "published")
    buf = io.StringIO()
    print_published(Console(file=buf, width=200), [run])
    text = buf.getvalue().split("The studies' conclusions")[0]     # the tables; the checks may say "not measured"
    for study, rows in found:
        unmeasured = [r for r in rows if r.placed[run.id]["status"] == "not measured"]
        measured = [r for r in rows if r.placed[run.id]["status"] != "not measured"]
        assert measured
        if unmeasured:
            n = len(unmeasured)
            assert f"{n} published row{'s' if n != 1 else ''} that these runs did not measure" in html
            assert f"{n} published row{'s' if n != 1 else ''} that these runs did not measure left out" in text
    assert "<small>not measured" not in html      # no such cell (the conclusions' checks may say so)
    assert "not measured" not in text
