"""Numbers in a table are never cut (1,638 µs must not print as `163…` at 80 columns):
text folds first, the table widens last; off a terminal a table is TSV."""

from __future__ import annotations

import io

import pytest
from rich.table import Table

from rtgauge.report.safe import SafeConsole
from rtgauge.store import open_store
from test_store import DOCTOR, SYSTEM, realistic_document, realistic_job


def wide_table() -> Table:
    t = Table(title="Measurements")
    for name in ("name", "tool", "condition", "result"):
        t.add_column(name)
    for name in ("ti min", "ti avg", "ti p99", "ti max", "misses", "steal ms"):
        t.add_column(name, justify="right")
    t.add_column("verdicts")
    t.add_row("latency-cpu-with-a-long-name", "cyclictest (x-check)", "cpu+io", "[green]ok[/]", "1.2", "3.4",
              "100.5", "1638.0", "123456789", "-", "max_latency FAIL, no_fallback pass")
    return t


@pytest.mark.parametrize("width", [40, 80, 120])
def test_numbers_stay_whole_at_any_width(width):
    out = io.StringIO()
    SafeConsole(file=out, width=width, highlight=False).print(wide_table())
    text = out.getvalue()
    for number in ("1638.0", "123456789", "100.5"):
        assert number in text, (width, text)
    assert "…" not in text


def test_the_unprotected_table_would_cut_them():
    """Without the protection rich cuts the numbers: the test above can fail."""
    from rich.console import Console
    out = io.StringIO()
    Console(file=out, width=80, highlight=False).print(wide_table())
    assert "…" in out.getvalue() or "123456789" not in out.getvalue()


def test_plain_is_tsv():
    out = io.StringIO()
    SafeConsole(file=out, width=80, plain=True).print(wide_table())
    lines = out.getvalue().splitlines()
    assert lines[0] == "# Measurements"
    assert lines[1].split("\t")[:2] == ["name", "tool"]
    row = lines[2].split("\t")
    assert row[3] == "ok" and row[7] == "1638.0" and len(row) == 11     # markup gone, every cell whole


def test_show_at_80_columns_prints_1638_whole(tmp_path, monkeypatch, capsys):
    db = str(tmp_path / "r.db")
    doc = realistic_document()
    doc["metrics"]["ti"]["max"] = 1_638_000
    with open_store(db) as store:
        run = store.begin_run(SYSTEM, DOCTOR, "quick", "builtin:quick", ["rtgauge", "run"])
        store.add_measurement(run, realistic_job("latency-cpu-and-a-longer-name", "cpu"), doc)
        store.finish_run(run, "complete", "")
    monkeypatch.setenv("COLUMNS", "80")
    from rtgauge.cli import main
    assert main(["show", str(run), "--db", db, "--format", "table"]) == 0
    out = capsys.readouterr().out
    assert "1638.0" in out and max(map(len, out.splitlines())) <= 80, out
