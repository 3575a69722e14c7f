"""The split of the wake-up latency (latency --split: ti_irq, the deadline to the timer
interrupt, and ti_sched, the interrupt to the thread running) is what the interrupt
study reports as its interrupt latency and context switch. `show` and the run's summary
print it beside ti, with the trace's own counts, from a document recorded by the full
study (tests/data/split/README.md); before, the figures were only in the report and
`show --json`, and a user reading the terminal saw none of them."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console

from conftest import cli
from rtgauge.report.terminal import print_summary
from rtgauge.store import open_store

DOC = Path(__file__).resolve().parent / "data" / "split" / "interrupt-latency-ipi.json"


def stored(tmp_path: Path, edit=None) -> str:
    doc = json.loads(DOC.read_text())
    if edit:
        edit(doc)
    f = tmp_path / "doc.json"
    f.write_text(json.dumps(doc))
    db = str(tmp_path / "r.db")
    p = cli(["import", str(f), "--db", db])
    assert p.returncode == 0, p.stderr
    return db


def rows(text: str) -> dict[str, list[str]]:
    """The split table's rows by part (show prints tab-separated when not on a terminal)."""
    lines = text.splitlines()
    start = lines.index("# Wake-up latency split by trace events (µs)")
    out = {}
    for line in lines[start + 2:]:
        cells = line.split("\t")
        if len(cells) < 8:
            break
        out[cells[1]] = cells
    return out


def us(ns: float) -> str:
    return f"{ns / 1000:,.1f}"


def test_show_prints_ti_irq_and_ti_sched_as_recorded(tmp_path):
    metrics = json.loads(DOC.read_text())["metrics"]
    db = stored(tmp_path)
    p = cli(["show", "1", "--db", db])
    assert p.returncode == 0, p.stderr
    table = rows(p.stdout)
    assert list(table) == ["ti_irq", "ti_sched", "ti"]
    for part, cells in table.items():
        m = metrics[part]
        assert cells[3] == f"{m['count']:,}"
        assert cells[4:8] == [us(m["min"]), f"{us(m['avg'])} ± {us(m['stddev'])}", us(m["p99"]), us(m["max"])]
    assert "the split is incomplete" not in p.stdout


def test_the_run_summary_prints_it_too(tmp_path):
    db = stored(tmp_path)
    with open_store(db) as store:
        run = store.get_run(1)
    console = Console(record=True, width=200, force_terminal=False)
    print_summary(console, run)
    text = console.export_text()
    assert "Wake-up latency split by trace events (µs)" in text
    irq = json.loads(DOC.read_text())["metrics"]["ti_irq"]
    assert us(irq["max"]) in text and "deadline → timer interrupt" in text


def test_a_split_that_lost_events_says_it_is_incomplete(tmp_path):
    def lose(doc):
        doc["metrics"]["split_lost"]["value"] = 1234
    p = cli(["show", "1", "--db", stored(tmp_path, lose)])
    assert "doc@idle: the split is incomplete: 1,234 trace events lost, 0 wake-ups without" in p.stdout


def test_a_run_without_the_split_prints_no_split_table(tmp_path):
    """The broken method would print the table (empty, or with ti alone) for every
    latency job: without ti_irq there is nothing to split."""
    def unsplit(doc):
        for name in ("ti_irq", "ti_sched", "split_lost", "split_unmatched"):
            doc["metrics"].pop(name)
    p = cli(["show", "1", "--db", stored(tmp_path, unsplit)])
    assert p.returncode == 0, p.stderr
    assert "split by trace events" not in p.stdout
