"""The engine's status (`rtgauge-engine latency --status`, docs/samples.md): one JSON line
per window, written by the collector. Ground truth: a FIFO spinner (`rtgauge-engine
spin`) busy on the measured CPU for a known burst at a known instant shows in the
window holding the burst; the windows add up to the run's own figures (cycles,
misses, overflows, max); a line a window whatever the rate; a descriptor works as well
as a file; the option is in the catalogue."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from conftest import needs_root

WINDOW_S = 0.5
BURST_US = 20_000
BURST_AT_S = 1.25          # mid-window 2
HIST_US = 1000             # the linear histogram: the burst overflows it


def lines_of(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def disturbed(engine_bin, tmp_path_factory):
    """A 2.5 s latency run on the last CPU (FIFO 50) and one 20 ms burst of a FIFO 90
    spinner on that CPU 1.25 s after the run's first deadline. The run catches up after
    an overrun, so every deadline is measured in its window even if something else (a
    host stall, another user's real-time load) held the CPU for longer than a window."""
    tmp = tmp_path_factory.mktemp("status")
    cpu = max(os.sched_getaffinity(0))
    start = time.monotonic_ns() + 400_000_000      # CLOCK_MONOTONIC, as the engine's
    burst = start + int(BURST_AT_S * 1e9)
    spin = subprocess.Popen([engine_bin, "spin", "--cpu", str(cpu), "--priority", "90", "--busy-us", str(BURST_US),
                             "--period-us", "5000000", "--duration-s", "0.5", "--start-at-ns", str(burst),
                             "--out", str(tmp / "spin.json")], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        lat = subprocess.run([engine_bin, "latency", "--cpus", str(cpu), "--policy", "fifo", "--priority", "50",
                              "--interval-us", "1000", "--duration-s", "2.5", "--window-s", str(WINDOW_S),
                              "--histogram", str(HIST_US), "--start-at-ns", str(start), "--overrun", "catch-up",
                              "--status", str(tmp / "status.jsonl"), "--out", str(tmp / "lat.json")],
                             capture_output=True, text=True, timeout=120)
    finally:
        spin.wait(timeout=60)
    assert lat.returncode == 0, lat.stderr
    assert spin.returncode == 0, spin.stderr.read()
    return (json.loads((tmp / "lat.json").read_text()), json.loads((tmp / "spin.json").read_text()),
            lines_of(tmp / "status.jsonl"), start)


@needs_root
@pytest.mark.alone
def test_the_burst_shows_in_the_window_that_holds_it(disturbed):
    doc, spin, windows, start = disturbed
    (event,) = spin["events"]
    held = (event[0] - start) // int(WINDOW_S * 1e9)
    assert [w["window"] for w in windows] == list(range(len(windows)))
    w = windows[held]
    (t,) = w["threads"]
    # the cycle due at the burst's start (or within one period after) wakes at its end
    assert t["cycles"] and t["max"] >= (event[1] - event[0]) - 2_000_000, (t, event, windows)
    assert t["overflows"] >= 1 and t["misses"] >= 1
    assert w["start_ns"] <= event[0] < w["start_ns"] + WINDOW_S * 1e9
    assert t["p99"] <= t["max"] and t["min"] <= t["avg"] <= t["max"]


@needs_root
@pytest.mark.alone
def test_the_windows_add_up_to_the_run(disturbed):
    doc, _, windows, start = disturbed
    threads = [t for w in windows for t in w["threads"]]
    m = doc["metrics"]
    assert sum(t["cycles"] for t in threads) == m["cycles#0"]["value"] == m["cycles"]["value"]
    assert sum(t["misses"] for t in threads) == m["misses#0"]["value"]
    assert max(t["max"] for t in threads if t["cycles"]) == m["ti#0"]["max"]
    assert min(t["min"] for t in threads if t["cycles"]) == m["ti#0"]["min"]
    assert sum(t["overflows"] for t in threads) == m["ti#0"]["linear"]["overflow"]
    # the windows are the ti_window_max series' windows
    series = m["ti_window_max#0"]
    assert series["start_ns"] == start == windows[0]["start_ns"]
    assert [w["threads"][0]["max"] for w in windows] == series["max"][:len(windows)]
    assert all(v is None for v in series["max"][len(windows):])


def test_a_line_a_window_whatever_the_rate(engine_bin, tmp_path):
    """100 µs or 10 ms between wake-ups: the same lines, of the same size (the digits aside).
    Its threads run at SCHED_OTHER on the last CPU, where another test's FIFO spinner may
    hold them off: the windows they were held off in still have their lines (skipped)."""
    cpu = max(os.sched_getaffinity(0))
    shapes = []
    for interval in (100, 10_000):
        path = tmp_path / f"s{interval}.jsonl"
        p = subprocess.run([engine_bin, "latency", "--cpus", str(cpu), "--policy", "other", "--interval-us",
                            str(interval), "--duration-s", "1", "--window-s", "0.25", "--status", str(path),
                            "--out", str(tmp_path / "o.json")], capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        text = path.read_text().splitlines()
        m = json.loads((tmp_path / "o.json").read_text())["metrics"]
        shapes.append((len(text), max(map(len, text)), m["cycles"]["value"] + m["skipped"]["value"]))
    (n_fast, len_fast, c_fast), (n_slow, len_slow, c_slow) = shapes
    assert c_fast >= 50 * c_slow          # deadlines elapsed: the rate was a hundred times higher ...
    assert n_fast == n_slow and n_fast in (4, 5)   # ... the lines are one a window of 0.25 s
    assert abs(len_fast - len_slow) <= 24, shapes


@needs_root
@pytest.mark.alone
def test_a_thread_held_off_its_cpu_shows_as_skipped_deadlines_in_every_window(engine_bin, tmp_path):
    """A FIFO 90 spinner takes the measured CPU from 0.5 s of a 1 s run at 100 Hz to
    beyond its end (windows of 0.25 s: 25 deadlines each). The latency thread (FIFO 50,
    skipping after an overrun) wakes late once for the deadline at 0.5 s and skips the
    rest. Every window still has its line, and in each the deadlines measured and the
    deadlines skipped add up to the 25 due there; the skipped add up to the run's. Before,
    the status ended at the last window with a cycle: the windows the thread was held
    off in, the ones a live view is for, had no line."""
    cpu = max(os.sched_getaffinity(0))
    start = time.monotonic_ns() + 300_000_000
    spin = subprocess.Popen([engine_bin, "spin", "--cpu", str(cpu), "--priority", "90", "--busy-us", "800000",
                             "--period-us", "5000000", "--duration-s", "1", "--start-at-ns", str(start + 500_000_000),
                             "--out", str(tmp_path / "spin.json")], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        lat = subprocess.run([engine_bin, "latency", "--cpus", str(cpu), "--policy", "fifo", "--priority", "50",
                              "--interval-us", "10000", "--duration-s", "1", "--window-s", "0.25",
                              "--start-at-ns", str(start), "--status", str(tmp_path / "s.jsonl"),
                              "--out", str(tmp_path / "o.json")], capture_output=True, text=True, timeout=120)
    finally:
        spin.wait(timeout=60)
    assert lat.returncode == 0 and spin.returncode == 0, lat.stderr + spin.stderr.read().decode()
    m = json.loads((tmp_path / "o.json").read_text())["metrics"]
    windows = lines_of(tmp_path / "s.jsonl")
    assert [w["window"] for w in windows] == [0, 1, 2, 3], windows
    per = [(w["threads"][0]["cycles"], w["threads"][0]["skipped"]) for w in windows]
    assert all(c + k == 25 for c, k in per), per
    assert per[3] == (0, 25) and per[2][1] >= 20, per       # held off from 0.5 s to the end
    assert sum(k for _, k in per) == m["skipped#0"]["value"] and sum(c for c, _ in per) == m["cycles#0"]["value"]
    assert windows[3]["threads"][0]["max"] is None          # nothing measured there, and it says so


@pytest.mark.shared
def test_status_to_a_descriptor_and_bad_ones(engine_bin, tmp_path):
    r, w = os.pipe()
    p = subprocess.Popen([engine_bin, "latency", "--policy", "other", "--duration-s", "0.6", "--window-s", "0.2",
                          "--status", f"fd:{w}", "--out", str(tmp_path / "o.json")], pass_fds=(w,),
                         stderr=subprocess.PIPE, text=True)
    os.close(w)
    with os.fdopen(r) as f:
        windows = [json.loads(line) for line in f]    # to the end: the engine closed its copy
    assert p.wait(timeout=60) == 0, p.stderr.read()
    doc = json.loads((tmp_path / "o.json").read_text())
    assert sum(t["cycles"] for w in windows for t in w["threads"]) == doc["metrics"]["cycles"]["value"]
    assert {t["cpu"] for t in windows[0]["threads"]} == {t["cpu"] for t in doc["env"]["threads"]}
    # a reader that goes away does not end the measurement
    r, w = os.pipe()
    p = subprocess.Popen([engine_bin, "latency", "--policy", "other", "--duration-s", "0.6", "--window-s", "0.1",
                          "--status", f"fd:{w}", "--out", str(tmp_path / "o2.json")], pass_fds=(w,),
                         stderr=subprocess.PIPE, text=True)
    os.close(w)
    os.close(r)
    assert p.wait(timeout=60) == 0, p.stderr.read()
    assert json.loads((tmp_path / "o2.json").read_text())["metrics"]["cycles"]["value"] > 0
    for bad in ("fd:", "fd:x", "fd:-1"):
        q = subprocess.run([engine_bin, "latency", "--duration-s", "0.1", "--status", bad],
                           capture_output=True, text=True, timeout=60)
        assert q.returncode == 2 and "fd:N" in q.stderr and "Traceback" not in q.stderr, (bad, q.stderr)
    q = subprocess.run([engine_bin, "latency", "--duration-s", "0.1", "--status", str(tmp_path / "no" / "s")],
                       capture_output=True, text=True, timeout=60)
    assert q.returncode == 1 and "--status" in q.stderr


def test_the_option_is_in_the_catalogue(engine_bin):
    cat = json.loads(subprocess.run([engine_bin, "--list", "--json"], capture_output=True, text=True,
                                    timeout=60).stdout)
    text = json.dumps(cat)
    assert '"status"' in text and "one JSON line per window" in text
