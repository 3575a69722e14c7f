"""`rtla timerlat hist` output imported. rtla does not run on this machine's kernel
(no timerlat tracer), so the sample is built here in the layout of rtla-timerlat-hist(1)'s
EXAMPLE section (Linux Documentation/tools/rtla/rtla-timerlat-hist.rst): the header
lines, an `Index` line of IRQ-/Thr- columns per CPU, bucket rows with zero rows
skipped, and the over/count/min/avg/max footer. Its numbers are ours, chosen so that
every figure of the result is known in advance."""

from __future__ import annotations

from functools import partial

import pytest

from rtgauge.store import open_store
from rtgauge.tools import rtla
from conftest import rtgauge

SAMPLE = """# RTLA timerlat histogram
# Time unit is microseconds (us)
# Duration:   0 00:00:10
Index   IRQ-000   Thr-000   IRQ-001   Thr-001
0          9000         0      8000         0
1           990      4000      1900      3000
2            10      5000       100      6000
3             0       990         0       980
7             0        10         0        18
over:         0         0         0         2
count:    10000     10000     10000     10000
min:          0         1         0         1
avg:          0         2         0         2
max:          2         7         2        95
"""


rtgauge = partial(rtgauge, timeout=900)     # a watchdog: its slowest calls take minutes on a loaded machine


def test_the_documented_layout_becomes_a_run_with_known_figures(tmp_path):
    path = tmp_path / "timerlat.txt"
    path.write_text(SAMPLE)
    db = f"sqlite:///{tmp_path / 'r.db'}"
    p = rtgauge("import", str(path), "--db", db, "--condition", "stress-cpu")
    assert p.returncode == 0, p.stderr
    with open_store(db) as store:
        run = store.get_run(store.latest_run_id()).to_dict()
    [m] = run["measurements"]
    assert (m["tool"], m["condition"]) == ("rtla-timerlat", "stress-cpu")
    # each column under its own name, never the engine's ti (a user-space thread's wake-up)
    assert not any(k == "ti" or k.startswith(("ti#", "ti_")) for k in m["metrics"])
    t0, t1, ti = m["metrics"]["timerlat_thread#0"], m["metrics"]["timerlat_thread#1"], m["metrics"]["timerlat_thread"]
    assert (t0["count"], t0["min"], t0["max"]) == (10000, 1000, 7000)
    assert (t1["count"], t1["max"], t1["histogram"]["overflow"]) == (10000, 95000, 2)
    assert (ti["count"], ti["max"]) == (20000, 95000)
    # nearest rank over whole-µs buckets (rtla truncates to its unit): p50 of thread 0 is
    # the 5000th value, in bucket 2 µs; p99 of both CPUs is the 19800th, in bucket 3 µs
    assert t0["p50"] == 2000 and ti["p99"] == 3000 and ti["p9999"] == 7000
    assert m["metrics"]["timerlat_irq"]["max"] == 2000
    assert run["origin"]["format"] == "rtla timerlat hist"
    assert "rtla timerlat hist" in rtgauge("show", "latest", "--db", db).stdout


def test_bucket_size_and_nanoseconds():
    text = SAMPLE.replace("microseconds (us)", "nanoseconds (ns)").replace("\n1 ", "\n10 ") \
        .replace("\n2 ", "\n20 ").replace("\n3 ", "\n30 ").replace("\n7 ", "\n70 ")
    text = text.replace("max:          2         7         2        95", "max:         29        79        29        95")
    doc = rtla.document(rtla.parse(text))
    assert doc["params"]["bucket_size"] == 10 and doc["metrics"]["timerlat_thread#0"]["histogram"]["bins"][0] == [10, 19, 4000]


@pytest.mark.parametrize("change, fragment", [
    (lambda t: t.replace("Index", "Idx"), "before the 'Index' header"),
    (lambda t: t.replace("IRQ-001", "CPU-001"), "not a column rtla prints"),
    (lambda t: t.replace("count:    10000", "count:    10001"), "but its count is"),
    (lambda t: t.replace("7             0        10", "7             0        " + "9" * 30), "out of range"),
    (lambda t: t.replace("max:          2         7", "max:          2         5"), "below its highest bucket"),
    (lambda t: t.replace("avg:          0         2", "avg:          0       nan"), "out of range"),
    (lambda t: t.replace("over:         0         0         0         2\n", "over: 0\n"), "has 1 values"),
])
def test_what_is_not_rtla_output_is_one_sentence(tmp_path, change, fragment):
    path = tmp_path / "bad.txt"
    path.write_text(change(SAMPLE))
    p = rtgauge("import", str(path), "--db", f"sqlite:///{tmp_path / 'r.db'}")
    assert p.returncode == 2 and fragment in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
