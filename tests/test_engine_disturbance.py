"""Ground truth for the latency measurement.

A `spin` thread pinned to the measured CPU at a higher priority busy-spins X us
every Y us (Y not a multiple of the interval I) and records the exact start and
end of every burst on CLOCK_MONOTONIC, the clock of the latency deadlines. Each
burst must show up in the raw samples as exactly one wake-up delayed by more than
X - I (the first cycle due during the burst cannot run before it ends), nothing
outside a burst may be that late, and the ti_window_max series must place them.

The sizes are larger than a textbook 3 ms burst at a 1 ms interval because the
machine this runs on is a small VM: its wake-ups have ms-scale outliers (vCPU
steal), a burst can be stretched by the host, and the cycles released after a
burst can be delayed by a few hundred us more. So X = 12 ms keeps X - I = 8 ms
clear of the outliers, and I = 4 ms leaves a wide margin around the phase:
both processes start at instants chosen here, the first burst 1 ms after a
deadline, and Y = 98 ms (24.5 intervals) alternates that phase between 1 ms and
3 ms. No burst starts within a few us of a deadline, the edge case where the
count would depend on which thread the kernel ran first; the recorded
timestamps then settle each burst exactly (see pending_at).
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import time

import pytest

from conftest import needs_root
import steal

pytestmark = pytest.mark.alone

I_US = 4000
X_US = 12_000
Y_US = 98_000
THRESHOLD_NS = (X_US - I_US) * 1000
WINDOW_S = 0.05
LATENCY_S = 4.0
SPIN_S = 3.5
SPIN_OFFSET_NS = 200_000_000 + 1_000_000
HOST_STALL_NS = 500_000


def measured_cpu() -> int:
    """The last CPU we may use (CPU 1 on a 2-CPU machine), leaving CPU 0 for the rest."""
    return max(os.sched_getaffinity(0))


def witness_command(engine_bin: str, cpu: int, start: int) -> list[str]:
    """A second engine whose only use here is its host-stall observer, placed on the
    measured CPU itself: it measures another CPU (once a second, at FIFO 1), so its
    observer takes the last allowed CPU it does not measure, the measured one (and the
    run says where it sat). It wakes every 1 ms at FIFO 1, below the measured thread.
    The first observer, off the measured CPU, cannot see the host take the measured
    vCPU alone; this one sees that as a jump of its clock, while a thread of the guest
    taking that CPU (the spinner) leaves it runnable and waiting: run delay, counted as
    a local delay, not a stall (docs/engine.md, "Host stalls")."""
    other = min(c for c in os.sched_getaffinity(0) if c != cpu)
    return [engine_bin, "latency", "--cpus", str(other), "--interval-us", "1000000", "--policy", "fifo",
            "--priority", "1", "--duration-s", str(LATENCY_S + 0.5), "--start-at-ns", str(start)]


def run_pair(engine_bin: str, tmp_path, with_spin: bool, overrun: str = "skip"):
    cpu = measured_cpu()
    start = time.monotonic_ns() + 400_000_000
    samples = tmp_path / "samples.csv"
    lat_cmd = [engine_bin, "latency", "--cpus", str(cpu), "--interval-us", str(I_US),
               "--priority", "80", "--duration-s", str(LATENCY_S), "--samples", str(samples),
               "--window-s", str(WINDOW_S), "--start-at-ns", str(start), "--overrun", overrun]
    spin_cmd = [engine_bin, "spin", "--cpu", str(cpu), "--priority", "90",
                "--busy-us", str(X_US), "--period-us", str(Y_US), "--duration-s", str(SPIN_S),
                "--start-at-ns", str(start + SPIN_OFFSET_NS)]
    witness = subprocess.Popen(witness_command(engine_bin, cpu, start), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    lat = subprocess.Popen(lat_cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    spin = subprocess.Popen(spin_cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) if with_spin else None
    lat_out, lat_err = lat.communicate(timeout=30)
    assert lat.returncode == 0, lat_err
    witness_out, witness_err = witness.communicate(timeout=30)
    assert witness.returncode == 0, witness_err
    seen = json.loads(witness_out)["env"]["stalls"]
    assert seen["observed"] and seen["cpu"] == cpu and seen["policy"] == "fifo", seen
    events = []
    if spin:
        spin_out, spin_err = spin.communicate(timeout=30)
        assert spin.returncode == 0, spin_err
        spin_doc = json.loads(spin_out)
        events = spin_doc["events"]
        assert spin_doc["metrics"]["count"]["value"] == len(events)
        assert spin_doc["metrics"]["busy"]["min"] >= X_US * 1000
    rows = [(int(r["deadline_ns"]), int(r["ti_ns"])) for r in csv.DictReader(open(samples))]
    return json.loads(lat_out), rows, events, seen


def pending_at(event, rows):
    """Cycles the burst held back: due before it ended, not yet awake when it began
    (their wake-up t1 = deadline + ti is after the burst start)."""
    s, e = event
    return [(d, ti) for d, ti in rows if d <= e and d + ti >= s]


def preempted_in_body(event, tmp_path):
    """The cycle a burst began in the body of (it woke before the burst, finished after
    it began: a wake-up late enough to meet the burst), as (deadline, end), or None."""
    s, _ = event
    for r in csv.DictReader(open(tmp_path / "samples.csv")):
        d, ti, ts = int(r["deadline_ns"]), int(r["ti_ns"]), int(r["ts_ns"])
        if d + ti < s <= d + ti + ts:
            return d, d + ti + ts
    return None


def stall_touched(doc, rows, *others) -> set:
    """Cycles whose span (deadline .. wake-up) overlaps a host stall the engine's own
    observer recorded (env.stalls: the whole VM descheduled, seen on another CPU) or
    that one of OTHERS (further env.stalls records: the witness on the measured CPU)
    recorded: the machine's, not the measurement's, so the quiet-machine claims leave
    them out. Not a rerun: what is excluded is named, from the runs' own records."""
    spans = []
    for stalls in (doc["env"].get("stalls") or {}, *others):
        listed = [tuple(iv) for iv in stalls.get("intervals") or []]
        if stalls.get("intervals_dropped"):       # more stalls than listed: the run cannot judge
            pytest.skip(f"{stalls['intervals_dropped']} host stalls beyond the {len(listed)} listed")
        spans += listed
    return {(d, ti) for d, ti in rows if any(a <= d + ti and d <= b for a, b in spans)}


def quiet_claim(doc, rows, seen) -> tuple[bool, str]:
    """Without a disturbance no wake-up is X - I late, but for the cycles a host stall
    touched: one of this VM (it freezes a vCPU for up to ~15 ms a few times a minute)
    that the engine's observer recorded, or the witness on the measured CPU (SEEN) did
    (the host taking the measured vCPU alone, which the engine's observer on the other
    vCPU cannot see), and one that both missed (a stall shorter than an observer's
    500 µs threshold cannot make an 8 ms wake-up; the one is the allowance this test
    always had, not raised)."""
    touched = stall_touched(doc, rows, seen)
    untouched = sorted(ti for d, ti in rows if (d, ti) not in touched)
    late = [(d, ti) for d, ti in rows if (d, ti) not in touched and ti >= THRESHOLD_NS]
    why = (f"{len(late)} wake-ups at least {THRESHOLD_NS / 1e6:g} ms late outside the host stalls either observer "
           f"recorded ({len(doc['env']['stalls'].get('intervals') or [])} and {len(seen.get('intervals') or [])}; "
           f"the witness counted {seen.get('local_delays')} local delays), {len(rows) - len(untouched)} of "
           f"{len(rows)} cycles touched by host stalls")
    ok = (len(untouched) >= 0.9 * len(rows) and episodes(late) <= 1
          and untouched[int(0.99 * (len(untouched) - 1))] < THRESHOLD_NS)
    return ok, why


def episodes(late_rows) -> int:
    """How many separate delays made these late cycles: cycles released together (their
    wake-ups, deadline + ti, within 1 ms of one another, as --overrun catch-up runs the
    deadlines a 30 ms delay held back one after the other) are one. The allowance for a
    stall both observers missed is one such delay, however many deadlines it held."""
    wakes = sorted(d + ti for d, ti in late_rows)
    return sum(1 for i, w in enumerate(wakes) if i == 0 or w - wakes[i - 1] > 1_000_000)


def late_windows_of(rows, start, window):
    return {(d - start) // window for d, ti in rows if ti > THRESHOLD_NS}


@needs_root
@pytest.mark.parametrize("overrun", ["skip", "catch-up"])
def test_each_disturbance_is_one_late_wakeup_placed_in_its_window(engine_bin, tmp_path, overrun):
    stat_before = steal.snapshot()
    doc, rows, events, seen = run_pair(engine_bin, tmp_path, with_spin=True, overrun=overrun)
    stolen, tick = steal.stolen_ms(stat_before, measured_cpu())
    expected_events = int((SPIN_S * 1e9) // (Y_US * 1000)) + 1
    assert len(events) == expected_events
    expected_cycles = int(LATENCY_S * 1e6 / I_US)
    skipped = doc["metrics"]["skipped"]["value"]
    assert len(rows) == doc["metrics"]["cycles"]["value"]
    if overrun == "catch-up":
        # every deadline is recorded; the ones a burst held back run back to back
        assert len(rows) == expected_cycles and skipped == 0
    else:
        # like cyclictest: the deadlines that passed during a burst are skipped,
        # at least X/I - 1 per burst, and every deadline is either measured or skipped
        assert len(rows) + skipped == expected_cycles
        assert skipped >= (X_US // I_US - 1) * len(events)

    held_back = set()
    clean = 0
    stalled_ns = 0
    in_body = []
    for s, e in events:
        pend = pending_at((s, e), rows)
        body = preempted_in_body((s, e), tmp_path)
        if not pend and overrun == "skip" and body is not None:
            # the burst began in the body of a cycle that woke late, close to it (seen beside
            # the suite's other tests: 0.97 ms late, the burst 0.4 ms after the wake-up):
            # that cycle's end waited for the burst, and the deadlines due in it were skipped
            d0, end = body
            assert end >= e, (s, e, body)
            assert min(d for d, _ in rows if d > d0) > e, f"a deadline in the burst {s}..{e} was measured"
            in_body.append((s, e))
            continue
        # ground truth, whatever the noise: no cycle held back by the burst woke
        # before it ended, so none is reported less late than the burst forced it
        assert all(d + ti >= e for d, ti in pend)
        # the first cycle the burst held back: normally the first one due in it; when
        # the cycle due just before the burst had not woken yet (a host stall), that
        # one, and then with --overrun skip the deadlines inside the burst are skipped
        assert pend, f"no cycle was held back by the burst {s}..{e}"
        first_d, first_ti = pend[0]
        assert first_ti > THRESHOLD_NS
        in_burst = [(d, ti) for d, ti in pend if s <= d <= e]
        held_back.update(pend)
        # The burst lasts at least X; the host can stretch it, so the exact bound
        # comes from its recorded length: only the first cycle due in it waits
        # longer than (end - start) - I ...
        forced = (e - s) - I_US * 1000
        late = [(d, ti) for d, ti in in_burst if ti > forced]
        # ... unless the host also stalled the vCPU right after the burst, which
        # shows as released cycles waking well after the burst's end.
        stalled = any(d + ti - e > HOST_STALL_NS for d, ti in pend) or pend[0][0] < s
        if not stalled:
            assert late == [(first_d, first_ti)], (s, e, in_burst[:4])
            clean += 1
        else:   # how long the host kept the vCPU beyond what the burst itself forced
            stalled_ns += max(max(d + ti for d, ti in pend) - e, s - pend[0][0] if pend[0][0] < s else 0, 0)
    # Most bursts are checked exactly. A burst the host stretched is accepted only when
    # the hypervisor counted that time as steal on the measured CPU (tests/steal.py):
    # with a CPU hog beside the suite, 11 of 36 bursts were stretched so.
    assert len(in_body) <= 0.1 * len(events), f"{len(in_body)} bursts began in a cycle's body"
    assert clean >= 0.3 * len(events), f"only {clean} of {len(events)} bursts free of host stalls"
    assert clean >= 0.7 * len(events) or steal.covers(stolen, tick, stalled_ns / 1e6), \
        (f"{len(events) - clean} of {len(events)} bursts stretched by {stalled_ns / 1e6:.1f} ms in all, "
         f"{stolen} ms stolen from the measured CPU")

    # nothing the bursts did not hold back is later than X - I (leaving out the cycles
    # a recorded host stall touched, and allowing one the observer missed) ...
    touched = stall_touched(doc, rows, seen)
    outside = [ti for d, ti in rows if (d, ti) not in held_back]
    unexplained_rows = [(d, ti) for d, ti in rows if (d, ti) not in held_back and (d, ti) not in touched
                        and ti >= THRESHOLD_NS]
    unexplained = [ti for _, ti in unexplained_rows]
    # ... unless the host took the measured vCPU alone (the observer, on the other vCPU,
    # sees only a stall of the whole VM): then the hypervisor counted at least half that
    # lateness as steal there (one tick of slack: /proc/stat counts in ticks). Seen with a
    # CPU hog beside the suite: 6 such wake-ups. A late wake-up the engine made up has no steal.
    late_ms = sum(unexplained) / 1e6
    assert episodes(unexplained_rows) <= 1 or steal.covers(stolen, tick, late_ms), \
        (f"{len(unexplained)} wake-ups at least {THRESHOLD_NS / 1e6:g} ms late outside the bursts "
         f"({late_ms:.1f} ms in all), {stolen} ms stolen from the measured CPU")
    assert len(outside) >= len(rows) - 4 * len(events)

    series = doc["metrics"]["ti_window_max"]
    start, window = series["start_ns"], series["window_ns"]
    assert window == int(WINDOW_S * 1e9)
    per_window: dict[int, int] = {}
    for d, ti in rows:
        w = (d - start) // window
        per_window[w] = max(per_window.get(w, ti), ti)
    event_windows = {(pending_at(ev, rows)[0][0] - start) // window for ev in events if tuple(ev) not in in_body}
    assert late_windows_of(rows, start, window) >= event_windows
    held_windows = {(d - start) // window for d, _ in held_back}
    for w, m in enumerate(series["max"]):
        assert m == per_window.get(w), f"window {w}: series {m}, samples {per_window.get(w)}"
        if w in event_windows:
            assert m > THRESHOLD_NS
    touched_windows = {(d - start) // window for d, _ in touched}
    quiet = [m for w, m in enumerate(series["max"])
             if w not in held_windows and w not in touched_windows and m is not None]
    # the same allowance as the wake-ups above (a late window's maximum is one of them):
    # one the observer missed, or as many as the steal counted on the measured CPU covers
    late_quiet = sum(1 for m in quiet if m >= THRESHOLD_NS)
    assert late_quiet <= 1 or episodes(unexplained_rows) <= 1 or steal.covers(stolen, tick, late_ms), \
        (f"{late_quiet} windows outside the bursts and the stalls with a wake-up at least "
         f"{THRESHOLD_NS / 1e6:g} ms late, {stolen} ms stolen from the measured CPU")
    assert 0 < len(event_windows) < len([m for m in series["max"] if m is not None])

    # the broken case of the quiet claim below: a real disturbance, the spinner on the
    # measured CPU, is no host stall to either observer (the witness beside it on that
    # CPU counts it as local delay), so the claim fails on this run
    ok, why = quiet_claim(doc, rows, seen)
    assert not ok, f"the quiet claim held on a run with {len(events)} bursts: {why}"
    assert seen["local_delays"] >= len(events) // 2, seen["local_delays"]


@needs_root
def test_without_disturbance_no_wakeup_is_that_late(engine_bin, tmp_path):
    doc, rows, _, seen = run_pair(engine_bin, tmp_path, with_spin=False)
    ok, why = quiet_claim(doc, rows, seen)
    assert ok, why
    assert max(ti for _, ti in rows) == doc["metrics"]["ti"]["max"]
