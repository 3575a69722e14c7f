"""One worst case when two tools disagree (docs/report.md, "One worst case per job"):
a run built from real documents — the engine's of tests/data/golden/run-a and, as the
cyclictest cross-check of its loaded job, the real cyclictest measurement of
tests/data/cyclictest/hist-2threads.json (renamed to be that job's cross-check; its
thread 0 saw a 16 ms host stall, an overflow past its histogram) — prints the worse
figure, 16,325.0 µs, as the
loaded worst case in the rating, `report --summary`, the HTML report, `compare` and the
Markdown export; the engine's own 773.5 µs is never the loaded headline."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from conftest import rtgauge

DATA = Path(__file__).resolve().parent / "data"


def run_summary(db, run_id: int) -> str:
    """The terminal summary `rtgauge run` ends with, of a stored run."""
    from rich.console import Console
    from rtgauge.cli.common import read_runs
    from rtgauge.report.terminal import print_summary
    [run] = read_runs(f"sqlite:///{db}", [str(run_id)], documents=True)
    console = Console(record=True, width=400)
    print_summary(console, run)
    return console.export_text()


def ok(*args):
    p = rtgauge(*map(str, args))
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_every_output_prints_the_worse_of_the_two_tools(tmp_path):
    src = tmp_path / "src.db"
    ok("import", DATA / "golden" / "run-a", "--db", src)
    ok("import", DATA / "cyclictest" / "hist-2threads.json", "--db", src)
    run = json.loads(ok("export", "1", "--db", src, "-o", "-"))
    ct = json.loads(ok("export", "2", "--db", src, "-o", "-"))["run"]["measurements"][0]
    engine = next(m for m in run["run"]["measurements"] if m["name"] == "latency@cpu")
    assert engine["metrics"]["ti"]["max"] == 773_514           # the engine's loaded worst case
    cross = copy.deepcopy(ct)
    cross.update(name="latency@cpu/cyclictest", condition="cpu", id=max(m["id"] for m in run["run"]["measurements"]) + 1)
    assert cross["metrics"]["ti"]["max"] == 16_325_000          # cyclictest saw a 16 ms host stall
    run["run"]["measurements"].append(cross)
    run["run"]["origin"] = {"identity": "edited: run-a with a disagreeing cyclictest cross-check"}   # a run of its own
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(run))
    db = tmp_path / "r.db"
    ok("import", DATA / "golden" / "run-a", "--db", db)         # run 1: the engine alone
    ok("import", edited, "--db", db)                            # run 2: with the disagreeing cross-check

    worse = "16,325.0"
    rating = json.loads(ok("show", "2", "--db", db, "--json"))["rating"]
    assert any(f"worst-case wake-up latency {worse} µs" in r for r in rating["reasons"]), rating
    assert any("cross-check disagrees" in r and "use the worse" in r for r in rating["reasons"]), rating
    summary = run_summary(db, 2)
    assert f"loaded {worse} µs (cpu)" in summary and "use the worse" in summary, summary
    html = tmp_path / "r.html"
    ok("report", "2", "--db", db, "-o", html)
    text = html.read_text()
    assert f"<td><b>{worse} <small>(cpu)</small></b></td>" in text
    assert "<td><b>773.5 <small>" not in text
    compared = ok("compare", "1", "2", "--db", db, "--format", "tsv")
    row = next(line.split("\t") for line in compared.splitlines() if line.startswith("worst latency loaded"))
    assert row[1:] == ["773.5", worse], row                      # run 1 has no cross-check: its engine's
    md = ok("export", "2", "--db", db, "--format", "md", "-o", "-")
    assert f"loaded {worse} µs" in md, md[:600]
