"""cyclictest's files in and out of rtgauge, against real cyclictest output made here:
its --json file and its -h/--histfile histogram import with the sample count and max
cyclictest itself reported; `export --format cyclictest` of that run reproduces
cyclictest's own histfile line for line (all but the overflow cycle numbers, which
cyclictest's JSON does not carry), reads back through rtgauge's parser, and through a
consumer of the kind that scrapes `# Max Latencies` (written here the way such scripts
are: split on whitespace after the colon)."""

from __future__ import annotations

import csv
from functools import partial
import io
import json
import os
import shutil
import subprocess

import pytest

from rtgauge.store import open_store
from rtgauge.tools import cyclictest
from conftest import rtgauge

pytestmark = pytest.mark.skipif(shutil.which("cyclictest") is None, reason="cyclictest (rt-tests) not installed")


rtgauge = partial(rtgauge, timeout=900)     # a watchdog: its slowest calls take minutes on a loaded machine


@pytest.fixture(scope="module")
def made_here(tmp_path_factory):
    """One real cyclictest run writing both files: 2 threads, 1.5 s, SCHED_OTHER (needs no
    privilege), a 40 µs histogram so that overflows are likely on this loaded VM."""
    d = tmp_path_factory.mktemp("cyclictest")
    threads = min(2, os.cpu_count() or 1)
    cmd = ["cyclictest", "--quiet", "--policy=other", "--priority=0", "--interval=500", "--duration=2",
           f"--threads={threads}", "--histogram=40", f"--histfile={d / 'hist.txt'}", f"--json={d / 'ct.json'}"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    raw = json.loads((d / "ct.json").read_text())
    return {"dir": d, "json": d / "ct.json", "hist": d / "hist.txt", "raw": raw, "threads": threads}


def scrape(text: str) -> dict:
    """What the scripts around cyclictest do: the footer lines, split on whitespace."""
    out = {}
    for line in text.splitlines():
        for key in ("Total", "Min Latencies", "Avg Latencies", "Max Latencies", "Histogram Overflows"):
            if line.startswith(f"# {key}:"):
                out.setdefault(key, []).append([int(v) for v in line.split(":", 1)[1].split()])
    return out


def imported(db: str) -> dict:
    with open_store(db) as store:
        return store.get_run(store.latest_run_id()).to_dict()


@pytest.mark.shared
def test_json_and_histfile_import_with_cyclictests_own_figures(made_here, tmp_path):
    raw, db = made_here["raw"], f"sqlite:///{tmp_path / 'r.db'}"
    threads = raw["thread"]
    cycles = [threads[k]["cycles"] for k in sorted(threads, key=int)]
    maxes = [threads[k]["max"] for k in sorted(threads, key=int)]

    p = rtgauge("import", str(made_here["json"]), "--db", db, "--condition", "idle")
    assert p.returncode == 0, p.stderr
    run = imported(db)
    [m] = run["measurements"]
    assert m["tool"] == "cyclictest" and m["condition"] == "idle"
    ti = m["metrics"]["ti"]
    assert ti["count"] == sum(cycles) and ti["max"] == max(maxes) * 1000
    for i, (c, mx) in enumerate(zip(cycles, maxes)):
        assert m["metrics"][f"ti#{i}"]["count"] == c and m["metrics"][f"ti#{i}"]["max"] == mx * 1000
    # system facts from the file, its start time kept, its origin stated
    assert run["system"]["hostname"] == raw["sysinfo"]["nodename"]
    assert run["system"]["kernel_release"] == raw["sysinfo"]["release"]
    assert run["started_at"].startswith(_iso_start(raw["start_time"]))
    assert run["origin"]["format"] == "cyclictest --json" and run["origin"]["identity"].startswith("sha256:")

    # the histfile: its samples (its total + overflows) and maxima as it reports them. (The
    # two files of one cyclictest 2.40 run need not agree with each other: on this loaded
    # VM, SCHED_OTHER, they were seen one sample and an average apart.)
    foot = scrape(made_here["hist"].read_text())
    hist_db = f"sqlite:///{tmp_path / 'h.db'}"
    p = rtgauge("import", str(made_here["hist"]), "--db", hist_db)
    assert p.returncode == 0, p.stderr
    [h] = imported(hist_db)["measurements"]
    for i in range(made_here["threads"]):
        samples = foot["Total"][0][i] + foot["Histogram Overflows"][0][i]
        assert h["metrics"][f"ti#{i}"]["count"] == samples
        assert h["metrics"][f"ti#{i}"]["max"] == foot["Max Latencies"][0][i] * 1000
        assert h["metrics"][f"ti#{i}"]["min"] == foot["Min Latencies"][0][i] * 1000
    assert h["metrics"]["ti"]["count"] == sum(foot["Total"][0]) + sum(foot["Histogram Overflows"][0])

    # the same file again stores nothing
    again = rtgauge("import", str(made_here["json"]), "--db", db)
    assert again.returncode == 0 and "imported before as run" in again.stdout
    with open_store(db) as store:
        assert len(store.list_runs()) == 1


def _iso_start(rfc2822: str) -> str:
    from email.utils import parsedate_to_datetime
    from datetime import timezone
    return parsedate_to_datetime(rfc2822).astimezone(timezone.utc).isoformat()[:19]


@pytest.mark.shared
def test_export_as_cyclictest_reproduces_its_histfile_and_reads_back(made_here, tmp_path):
    db = f"sqlite:///{tmp_path / 'r.db'}"
    assert rtgauge("import", str(made_here["json"]), "--db", db).returncode == 0
    out = tmp_path / "out.hist"
    p = rtgauge("export", "latest", "--db", db, "--format", "cyclictest", "-o", str(out))
    assert p.returncode == 0, p.stderr
    ours, theirs = out.read_text(), made_here["hist"].read_text()

    # cyclictest's layout: the same lines, in the same order and widths, as its own histfile
    def shape(text):
        return [line if line.startswith("# Histogram") else line.split(":")[0] if line.startswith("#")
                else len(line.split()) for line in text.splitlines() if not line.startswith("# rtgauge")]
    assert shape(ours) == shape(theirs)
    # ... holding exactly the figures of the --json file it was imported from
    threads = made_here["raw"]["thread"]
    foot = scrape(ours)
    rows = {int(line.split()[0]): [int(v) for v in line.split()[1:]] for line in ours.splitlines()
            if line[:1].isdigit()}
    for i, key in enumerate(sorted(threads, key=int)):
        t = threads[key]
        inside = sum(t["histogram"].values())
        assert {b: r[i] for b, r in rows.items() if r[i]} == {int(b): c for b, c in t["histogram"].items() if c}
        assert (foot["Total"][0][i], foot["Histogram Overflows"][0][i]) == (inside, t["cycles"] - inside)
        assert (foot["Min Latencies"][0][i], foot["Max Latencies"][0][i]) == (t["min"], t["max"])
        assert foot["Avg Latencies"][0][i] == int(t["avg"])

    # rtgauge's own parser reads it back to the same figures
    back = f"sqlite:///{tmp_path / 'back.db'}"
    p = rtgauge("import", str(out), "--db", back)
    assert p.returncode == 0, p.stderr
    [m] = imported(back)["measurements"]
    [orig] = imported(db)["measurements"]
    for name in [k for k in orig["metrics"] if k.startswith("ti")]:
        for stat in ("count", "min", "max", "p50", "p99"):
            assert m["metrics"][name][stat] == orig["metrics"][name][stat], (name, stat)


def test_an_engine_run_exports_as_a_histfile_and_as_csv_bins(run_engine, tmp_path, engine_bin):
    """An rtgauge run (log-linear histogram, no overflow): the layout's rows run to the
    max, the per-thread Total is every sample, and no bin shows a latency below what
    was measured; the CSV carries the same bins."""
    doc_path = tmp_path / "lat.json"
    subprocess.run([engine_bin, "latency", "--duration-s", "0.5", "--policy", "other", "--threads", "2",
                    "--out", str(doc_path)], check=True, capture_output=True, timeout=60)
    db = f"sqlite:///{tmp_path / 'e.db'}"
    assert rtgauge("import", str(doc_path), "--db", db).returncode == 0
    [m] = imported(db)["measurements"]
    p = rtgauge("export", "latest", "--db", db, "--format", "cyclictest")
    assert p.returncode == 0, p.stderr
    foot = scrape(p.stdout)
    for i in range(2):
        t = m["metrics"][f"ti#{i}"]
        assert foot["Total"][0][i] == t["count"] and foot["Histogram Overflows"][0][i] == 0
        assert foot["Max Latencies"][0][i] == t["max"] // 1000
        assert foot["Min Latencies"][0][i] == t["min"] // 1000
    rows = [line.split() for line in p.stdout.splitlines() if line[:1].isdigit()]
    assert len(rows) == max(foot["Max Latencies"][0]) + 1
    top = [max((int(r[0]) for r in rows if int(r[1 + i])), default=0) for i in range(2)]
    assert top == foot["Max Latencies"][0]          # the highest non-empty row is the max's µs

    csv_text = rtgauge("export", "latest", "--db", db, "--format", "csv").stdout
    bins = [r for r in csv.DictReader(io.StringIO(csv_text)) if r["metric"] == "ti" and r["statistic"] == "bin"]
    assert [[int(r["bin_lo_ns"]), int(r["bin_hi_ns"]), int(r["value"])] for r in bins] == \
        m["metrics"]["ti"]["histogram"]["bins"]


def test_histfile_parser_refuses_what_is_not_one(tmp_path):
    for text, fragment in [("no histogram here\n", "no '# Histogram' line"),
                           ("# Histogram\n000001 000002\n", "no '# Max Latencies'"),
                           ("# Histogram\n000001 000002\t000003\n# Max Latencies: 00001\n", "rows of [2] counts"),
                           ("# Histogram\n000001 " + "9" * 30 + "\n# Max Latencies: 00001\n", "not a count"),
                           ("# Histogram\n9999999 000001\n# Max Latencies: 00001\n", "not a histogram row")]:
        with pytest.raises(ValueError, match=fragment.replace("[", r"\[").replace("]", r"\]")):
            cyclictest.parse_histfile(text, "x")
    block = cyclictest.parse_histfile("# Histogram\n000005 000002\n# Max Latencies: 00003\n", "x")[0]
    with pytest.raises(ValueError, match="below its highest histogram bin"):
        cyclictest.document_of_histfile(block)
