"""cyclictest's files in and out, on real output made here (tests/data/cyclictest/README.md):
a summary-only --json shows min/avg/max as given and no invented p99 or σ anywhere; -N
(nanoseconds) is read in its own unit; a histfile without '# Min Latencies:' imports with
the min absent; `export --format cyclictest` writes cyclictest's own layout, one
measurement a file, which the OSADL recipes and `rtgauge import` read back with every
figure equal; and the export is bounded (a histogram-less or too large table is refused
in one sentence, the 4,096-thread case well under 512 MB)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import ROOT, rtgauge

# `python -m rtgauge ARGS` in a child of a small wrapper that prints the child's own peak
# (RUSAGE_CHILDREN of the test's process would also hold every earlier child of its
# pytest worker: a browser, another test's import)
PEAK = ("import resource, subprocess, sys; p = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
        "sys.stderr.write(p.stderr); print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")


def rtgauge_peak(*args) -> tuple[int, float, str]:
    """(exit status, peak resident MB, stderr) of one rtgauge command."""
    p = subprocess.run([sys.executable, "-c", PEAK, sys.executable, "-m", "rtgauge", *map(str, args)],
                       capture_output=True, text=True, timeout=600, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    status, kib = p.stdout.split()
    return int(status), int(kib) / 1024, p.stderr

DATA = Path(__file__).resolve().parent / "data" / "cyclictest"


def run_ok(*args, **kw):
    p = rtgauge(*map(str, args), **kw)
    assert p.returncode == 0, p.stderr
    return p


def metrics(db, run="latest"):
    return json.loads(run_ok("show", run, "--db", db, "--json").stdout)["measurements"][0]["metrics"]


def test_a_summary_only_import_shows_no_invented_statistic(tmp_path):
    db = tmp_path / "s.db"
    run_ok("import", DATA / "summary-2threads.json", "--db", db)
    raw = json.loads((DATA / "summary-2threads.json").read_text())["thread"]
    ti = metrics(db)["ti"]
    assert set(ti) == {"kind", "unit", "count", "min", "avg", "max", "resolution_ns"}, ti
    assert ti["min"] == 1000 * min(t["min"] for t in raw.values())
    assert ti["max"] == 1000 * max(t["max"] for t in raw.values())
    shown = run_ok("show", "latest", "--db", db, "--format", "tsv").stdout
    row = next(line.split("\t") for line in shown.splitlines() if line.startswith("cyclictest@idle"))
    assert row[4:8] == ["13.0", "26.9", "-", "5259.0"], row          # min, avg, p99 absent, max
    md = run_ok("export", "latest", "--db", db, "--format", "md", "-o", "-").stdout
    line = next(x for x in md.splitlines() if x.startswith("| cyclictest@idle"))
    assert [c.strip() for c in line.split("|")[5:10]] == ["13.0", "26.9", "-", "-", "5,259.0"], line
    csv = run_ok("export", "latest", "--db", db, "--format", "csv", "-o", "-").stdout
    assert not any(f",{s}," in csv for s in ("stddev", "p50", "p99", "p9999", "bin")), csv
    html = tmp_path / "r.html"
    run_ok("report", "latest", "--db", db, "-o", html)
    text = html.read_text()
    cells = text.split("<td class='l'>cyclictest@idle</td>", 1)[1].split("</tr>", 1)[0]
    assert "±" not in cells and cells.count("<td>–</td>") >= 2, cells
    # the cyclictest layout is a histogram: refused in one sentence, nothing written
    out = tmp_path / "x.hist"
    p = rtgauge("export", "latest", "--db", str(db), "--format", "cyclictest", "-o", str(out))
    assert p.returncode == 2 and "no histogram" in p.stderr and "Traceback" not in p.stderr and not out.exists()


def test_nanoseconds_are_read_as_nanoseconds(tmp_path):
    db = tmp_path / "n.db"
    run_ok("import", DATA / "ns.json", "--db", db)
    raw = json.loads((DATA / "ns.json").read_text())
    assert raw["resolution_in_ns"] == 1
    ti = metrics(db)["ti"]
    t = raw["thread"]["0"]
    assert (ti["min"], ti["max"]) == (t["min"], t["max"]) and ti["resolution_ns"] == 1   # not ×1000


def test_a_histfile_without_min_latencies_imports_without_a_min(tmp_path):
    text = (DATA / "hist-2threads.txt").read_text()
    edited = tmp_path / "nomin.txt"
    edited.write_text("".join(l for l in text.splitlines(keepends=True) if not l.startswith("# Min Latencies:")))
    db = tmp_path / "m.db"
    p = rtgauge("import", str(edited), "--db", str(db))
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    m = metrics(db)
    assert m["ti"]["min"] is None and m["ti#0"]["min"] is None and m["ti"]["max"] == 16325 * 1000
    # and its export leaves the line out rather than writing 0
    out = run_ok("export", "latest", "--db", db, "--format", "cyclictest", "-o", "-").stdout
    assert "# Min Latencies:" not in out and "# Max Latencies: 16325 00859" in out


def osadl_table(text: str) -> list[str]:
    return [l for l in text.splitlines() if l and not l.startswith("#")]      # grep -v "^#"


def max_line(text: str) -> str:
    return [l for l in text.splitlines() if "Max Latencies" in l][-1]          # grep "Max Latencies" | tail -1


def test_the_histfile_round_trips_as_cyclictest_wrote_it(tmp_path):
    own = (DATA / "hist-2threads.txt").read_text()
    db = tmp_path / "h.db"
    run_ok("import", DATA / "hist-2threads.txt", "--db", db)
    out = tmp_path / "out.hist"
    run_ok("export", "latest", "--db", db, "--format", "cyclictest", "-o", out)
    text = out.read_text()
    assert osadl_table(text) == osadl_table(own)                # the recipe's series: cyclictest's own table
    assert max_line(text) == max_line(own)
    assert text.count("# Histogram\n") == 1
    run_ok("import", out, "--db", db)
    assert metrics(db, "1") == metrics(db, "2")


def test_the_json_round_trips_through_the_export_with_every_figure(tmp_path):
    db = tmp_path / "j.db"
    run_ok("import", DATA / "hist-2threads.json", "--db", db)
    text = run_ok("export", "latest", "--db", db, "--format", "cyclictest", "-o", "-").stdout
    raw = json.loads((DATA / "hist-2threads.json").read_text())["thread"]
    assert max_line(text).split()[3:] == [f"{raw[k]['max']:05d}" for k in ("0", "1")]
    out = tmp_path / "j.hist"
    out.write_text(text)
    run_ok("import", out, "--db", db)
    a, b = metrics(db, "1"), metrics(db, "2")
    assert a == b, {k: (a[k], b.get(k)) for k in a if a[k] != b.get(k)}
    assert a["ti#0"]["avg"] == raw["0"]["avg"] * 1000           # the exact avg, not cyclictest's whole µs


def test_a_run_of_several_measurements_exports_one_a_file(tmp_path):
    db = tmp_path / "two.db"
    run_ok("import", DATA / "hist-2threads.txt", "--db", db)
    one = run_ok("export", "latest", "--db", db, "--format", "cyclictest", "-o", "-").stdout
    both = tmp_path / "both.hist"
    both.write_text(one + one.replace("# rtgauge measurement cyclictest@idle", "# rtgauge measurement second@cpu"))
    run_ok("import", both, "--db", db)
    p = rtgauge("export", "latest", "--db", str(db), "--format", "cyclictest", "-o", "-")
    assert p.returncode == 2 and "--measurement NAME" in p.stderr and "second@cpu" in p.stderr, p.stderr
    chosen = run_ok("export", "latest", "--db", db, "--format", "cyclictest", "--measurement", "second@cpu",
                    "-o", "-").stdout
    assert chosen.count("# Histogram\n") == 1 and "# rtgauge measurement second@cpu" in chosen
    assert osadl_table(chosen) == osadl_table(one)


def test_a_large_export_is_refused_within_the_memory_bound(tmp_path):
    """Issue 34's case: 4,096 threads of max 999,999 µs (real --json, threads copied and
    edited): histogram-less, so refused; with a sample at 999,999 µs in each of 64
    threads the table would be 64 million cells, refused before it is built."""
    raw = json.loads((DATA / "summary-2threads.json").read_text())
    t = raw["thread"]["0"]
    raw["thread"] = {str(i): dict(t, max=999_999, cpu=i % 2) for i in range(4096)}
    big = tmp_path / "t4096.json"
    big.write_text(json.dumps(raw))
    h = json.loads((DATA / "hist-2threads.json").read_text())
    t = h["thread"]["1"]
    h["thread"] = {str(i): dict(t, max=999_999, cpu=i % 2, cycles=t["cycles"] + 1,
                                histogram=dict(t["histogram"], **{"999999": 1})) for i in range(64)}
    h["cmdline:"] = h["cmdline:"].replace("-h 400", "-h 1000000")
    wide = tmp_path / "t64.json"
    wide.write_text(json.dumps(h))
    for src, why in ((big, "no histogram"), (wide, "1,000,000 rows × 64 threads")):
        db = tmp_path / (src.stem + ".db")
        status, peak_mb, err = rtgauge_peak("import", src, "--db", db)
        assert status == 0 and peak_mb < 512, (src.name, status, peak_mb, err)
        out = tmp_path / (src.stem + ".hist")
        status, peak_mb, err = rtgauge_peak("export", "latest", "--db", db, "--format", "cyclictest", "-o", out)
        assert status == 2 and why in err and "Traceback" not in err, err
        assert peak_mb < 512, (src.name, peak_mb)
        assert not out.exists()
