"""The latency test: cycle counts, threads per CPU, the CI gate, interruption,
raw samples against the JSON, and a cross-check with cyclictest."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import signal
import statistics
import struct
import subprocess

import pytest

from conftest import needs_root
from readiness import status_cycles, wait_for

pytestmark = [pytest.mark.alone, needs_root]


def test_cycles_per_thread_and_one_thread_per_cpu(run_engine):
    doc = run_engine("latency", "--cycles", "137", "--interval-us", "500").doc
    cpus = sorted(os.sched_getaffinity(0))
    threads = doc["env"]["threads"]
    assert [t["cpu"] for t in threads] == cpus
    assert all(t["policy"] == "fifo" and t["priority"] == 80 for t in threads)
    for i in range(len(cpus)):
        assert doc["metrics"][f"cycles#{i}"]["value"] == 137
        assert doc["metrics"][f"ti#{i}"]["count"] == 137
    assert doc["metrics"]["cycles"]["value"] == 137 * len(cpus)
    assert doc["metrics"]["dropped"]["value"] == 0


def test_threads_pin_round_robin(run_engine):
    cpus = sorted(os.sched_getaffinity(0))
    doc = run_engine("latency", "--cycles", "10", "--threads", "3").doc
    assert [t["cpu"] for t in doc["env"]["threads"]] == [cpus[i % len(cpus)] for i in range(3)]


def test_max_latency_gate(run_engine):
    r = run_engine("latency", "--cycles", "50", "--max-latency-us", "1")
    assert r.status == 3 and r.doc["ok"] is True
    assert r.doc["verdicts"]["max_latency"]["pass"] is False
    r = run_engine("latency", "--cycles", "50", "--max-latency-us", "1000000")
    assert r.status == 0 and r.doc["verdicts"]["max_latency"]["pass"] is True
    r = run_engine("latency", "--cycles", "5000", "--max-latency-us", "1", "--break", "--cpus", "0")
    assert r.status == 3 and r.doc["metrics"]["cycles"]["value"] == 1


def test_sigterm_keeps_what_was_measured(engine_bin, tmp_path):
    """Stopped once its own status says 1,000 wake-ups were measured (not after a fixed
    wait, which a loaded machine makes short): it keeps at least those, and stops at the
    signal, long before its 30 s (30,000 wake-ups)."""
    status = tmp_path / "status.jsonl"
    p = subprocess.Popen([engine_bin, "latency", "--duration-s", "30", "--window-s", "0.1", "--status", str(status)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = wait_for(lambda: (lambda n: n if n >= 1000 else 0)(status_cycles(status)), "1,000 wake-ups in the status",
                    proc=p)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=10)
    assert p.returncode == 130, err
    doc = json.loads(out)
    assert doc["interrupted"] is True and doc["ok"] is True
    cycles = doc["metrics"]["cycles#0"]["value"]
    assert seen <= cycles < 25_000, (seen, cycles)


def test_csv_samples_agree_with_json(run_engine, tmp_path):
    path = tmp_path / "s.csv"
    doc = run_engine("latency", "--cycles", "400", "--samples", str(path)).doc
    rows = list(csv.DictReader(open(path)))
    nthreads = len(doc["env"]["threads"])
    assert len(rows) == 400 * nthreads
    period = doc["params"]["interval_us"] * 1000
    for i in range(nthreads):
        mine = [r for r in rows if int(r["thread"]) == i]
        ti = [int(r["ti_ns"]) for r in mine]
        m = doc["metrics"][f"ti#{i}"]
        assert min(ti) == m["min"] and max(ti) == m["max"]
        assert statistics.fmean(ti) == pytest.approx(m["avg"], abs=0.001)  # JSON keeps 3 decimals
        # the cycle column numbers deadlines: 400 measured, the skipped ones missing
        skipped = doc["metrics"][f"skipped#{i}"]["value"]
        cycles = sorted(int(r["cycle"]) for r in mine)
        assert len(set(cycles)) == 400 and cycles[0] == 0 and cycles[-1] == 399 + skipped
        deadlines = sorted(int(r["deadline_ns"]) for r in mine)
        assert all((b - a) % period == 0 and b > a for a, b in zip(deadlines, deadlines[1:]))
        assert sum((b - a) // period - 1 for a, b in zip(deadlines, deadlines[1:])) == skipped
        assert all(int(r["ti_ns"]) + int(r["ts_ns"]) + int(r["tw_ns"]) == period for r in mine)
    # all threads share one start instant
    assert len({min(int(r["deadline_ns"]) for r in rows if int(r["thread"]) == i)
                for i in range(nthreads)}) == 1


def test_binary_samples_parse(run_engine, tmp_path):
    path = tmp_path / "s.bin"
    doc = run_engine("latency", "--cycles", "100", "--samples", str(path),
                     "--samples-format", "binary", "--cpus", "0").doc
    data = path.read_bytes()
    assert data[:8] == b"RTGSAMP1"
    size, zero = struct.unpack_from("<II", data, 8)
    assert size == 48 and zero == 0 and (len(data) - 16) == 100 * 48
    recs = [struct.unpack_from("<IIQqqqq", data, 16 + 48 * k) for k in range(100)]
    cycles = [r[2] for r in recs]      # deadline numbers: skipped deadlines leave gaps
    skipped = doc["metrics"]["skipped"]["value"]
    assert cycles == sorted(set(cycles)) and cycles[0] == 0 and cycles[-1] == 99 + skipped
    assert max(r[4] for r in recs) == doc["metrics"]["ti"]["max"]
    assert min(r[4] for r in recs) == doc["metrics"]["ti"]["min"]


def test_tsc_clock_and_linear_histogram(run_engine):
    r = run_engine("latency", "--cycles", "200", "--clock", "tsc", "--histogram", "500", "--cpus", "0")
    if r.status == 1 and "TSC" in r.doc.get("error", "").upper():
        pytest.skip(r.doc["error"])
    m = r.doc["metrics"]["ti"]
    assert r.doc["env"]["clock"] == "tsc"
    assert len(m["linear"]["counts"]) == 500 and m["linear"]["bucket_ns"] == 1000
    assert sum(m["linear"]["counts"]) + m["linear"]["overflow"] == 200
    assert m["min"] > 0


@pytest.mark.skipif(not shutil.which("cyclictest"), reason="cyclictest (rt-tests) is not installed")
def test_median_close_to_cyclictest(run_engine):
    cpu = str(max(os.sched_getaffinity(0)))
    doc = run_engine("latency", "--cpus", cpu, "--duration-s", "3", "--histogram", "10000").doc
    ours_us = doc["metrics"]["ti"]["p50"] / 1000
    p = subprocess.run(["cyclictest", "-m", "-p", "80", "-i", "1000", "-a", cpu, "-t", "1",
                        "-D", "3", "-q", "-h", "10000"], capture_output=True, text=True, timeout=30)
    counts = {}
    for line in p.stdout.splitlines():
        m = re.match(r"^(\d+)\s+(\d+)$", line.strip())
        if m:
            counts[int(m.group(1))] = int(m.group(2))
    total = sum(counts.values())
    assert total > 1000, p.stdout[-500:]
    acc, theirs_us = 0, None
    for us in sorted(counts):
        acc += counts[us]
        if acc * 2 >= total:
            theirs_us = us + 1     # upper edge of the 1 us bucket
            break
    assert ours_us <= 3 * theirs_us + 20, (ours_us, theirs_us)
    assert theirs_us <= 3 * ours_us + 20, (ours_us, theirs_us)
