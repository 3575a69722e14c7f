"""Every table of `show`, `compare`, `pwcet` and the summary `run` prints, at 60, 80
and 200 columns: no number loses a digit, no header word is split, no line is wider
than the terminal (a table too wide is stacked, one block per row); into a pipe every
table is TSV. The runs are real engine documents (tests/data/golden, see its README),
stored with `rtgauge import`."""

from __future__ import annotations

import copy
import io
import re
import shutil
from pathlib import Path

import pytest
from rich.cells import cell_len
from rich.table import Table

from conftest import cli
from rtgauge.cli import main
from rtgauge.report import safe
from rtgauge.report.safe import SafeConsole
from rtgauge.report.tables import fit, heading_columns, table_tsv
from rtgauge.store import open_store

DATA = Path(__file__).resolve().parent / "data" / "golden"
NUMBER = re.compile(r"(?<![\w.,])\d[\d,]*(?:\.\d+)?(?![\d,]|\.\d)")
WIDTHS = (60, 80, 200)


class Recording(SafeConsole):
    """A SafeConsole that keeps the TSV of every table it is asked to print."""

    def __init__(self, tables: list[str], **kw):
        super().__init__(**kw)
        self.tables = tables

    def print(self, *objects, **kw):
        if len(objects) == 1 and isinstance(objects[0], Table):
            # stacked, the naming columns' cells head each block without their column's name
            t = objects[0]
            named = heading_columns(t) if not self.plain and not fit(copy.deepcopy(t), self.width) else 0
            self.tables.append((table_tsv(t), named))
        return super().print(*objects, **kw)


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> str:
    work = tmp_path_factory.mktemp("widths")
    for name in ("run-a", "run-b"):
        shutil.copytree(DATA / name, work / name)
        p = cli(["import", str(work / name), "--db", str(work / "r.db")], timeout=300)
        assert p.returncode == 0, p.stderr
    return str(work / "r.db")


def rendered(monkeypatch, width: int, argv: list[str], plain: bool = False) -> tuple[str, list[str]]:
    """The command's standard output at WIDTH columns, and the TSV of every table it printed."""
    out, tables = io.StringIO(), []
    monkeypatch.setattr(safe, "table_console", lambda fmt=None, stderr=False: Recording(
        tables, file=out, width=width, highlight=False, plain=plain, color_system=None))
    status = main(argv)
    assert status in (0, 3, 4), (argv, out.getvalue()[-2000:])
    return out.getvalue(), [tsv for tsv, _ in tables] if plain else tables


def check_whole(text: str, tables: list[str], width: int) -> None:
    assert tables, "the command printed no table"
    for line in text.splitlines():
        assert cell_len(line) <= width, (width, line)
    assert "…" not in text
    words = re.findall(r"[^\s|│┃]+", text)
    from collections import Counter
    wanted = Counter(n for tsv, _ in tables for n in NUMBER.findall(tsv))
    got = Counter(NUMBER.findall(text))
    for number, count in wanted.items():      # every number of every table, each digit in place
        assert got[number] >= count, (width, number, got[number], count)
    for tsv, named in tables:
        header = tsv.splitlines()[1] if tsv.startswith("#") else tsv.splitlines()[0]
        for word in " ".join(header.split("\t")[named:]).split():
            if len(word) >= 3:                # a header word is never split across lines
                assert any(word in w for w in words), (width, word)


COMMANDS = [
    ["show"],
    ["show", "1"],
    ["show", "2"],
    ["compare", "1", "2", "--all"],
    ["compare", "1", "2", "--fail-on", "max_latency>100us"],
    ["pwcet", "1"],
]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: " ".join(a))
def test_every_table_keeps_every_digit(monkeypatch, db, width, argv):
    text, tables = rendered(monkeypatch, width, [*argv, "--db", db])
    check_whole(text, tables, width)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_run_summary_keeps_every_digit(db, width):
    """What `rtgauge run` prints at its end (report/terminal.py print_summary)."""
    from rtgauge.report.terminal import print_summary
    with open_store(db) as store:
        run = store.get_run(1)
    out, tables = io.StringIO(), []
    print_summary(Recording(tables, file=out, width=width, highlight=False, color_system=None), run)
    check_whole(out.getvalue(), tables, width)


def test_narrow_tables_are_stacked_and_wide_ones_drawn(monkeypatch, db):
    """At 200 columns the latency tables are drawn; at 60 the published tables are
    stacked: a block per row under its name, each figure on its own line."""
    wide, _ = rendered(monkeypatch, 200, ["compare", "1", "2", "--db", db])
    assert "┃ job" in wide
    narrow, _ = rendered(monkeypatch, 60, ["compare", "1", "2", "--db", db])
    assert re.search(r"^cyclictest · idle$", narrow, re.M)
    assert re.search(r"^  Xenomai 3\.0: 7 / 7 / 35$", narrow, re.M)


def test_a_piped_table_is_tsv(monkeypatch, db):
    text, tables = rendered(monkeypatch, 80, ["compare", "1", "2", "--db", db], plain=True)
    for tsv in tables:
        assert tsv in text
    assert not re.search("[┃│━─]", text)


def test_compare_answers_first(monkeypatch, db):
    text, _ = rendered(monkeypatch, 80, ["compare", "1", "2", "--db", db, "--fail-on", "max_latency>100us"])
    lines = text.splitlines()
    assert re.match(r"Run 2 against baseline run 1: (better|worse|no change|undecided) \(", lines[0])
    assert lines[2].startswith("Gate (--fail-on): fail")


def test_gate_reads_in_the_rules_unit(monkeypatch, db):
    """A rule written in µs reports µs (not `3.67563e+06 ns`); one in ms reports ms."""
    text, _ = rendered(monkeypatch, 200, ["compare", "1", "2", "--db", db, "--fail-on", "max_latency>100us"])
    tripped = [line for line in text.splitlines() if "max_latency>100us (run 2)" in line]
    assert tripped and all(re.search(r"= [\d,.]+ µs$", line) for line in tripped), tripped
    assert not re.search(r"\d e\+\d\d", text)
    text, _ = rendered(monkeypatch, 200, ["compare", "1", "2", "--db", db, "--fail-on", "max_latency>1ms"])
    assert re.search(r"max_latency>1ms \(run 2\): .* = [\d.]+ ms$", text, re.M), text[-1500:]


def test_rich_alone_fails_the_check(monkeypatch, db):
    """The check can fail: rich's own layout of the same tables at 80 columns cuts numbers
    or splits headers."""
    from rich.console import Console

    class Unprotected(Recording):
        def print(self, *objects, **kw):
            if len(objects) == 1 and isinstance(objects[0], Table):
                self.tables.append((table_tsv(objects[0]), 0))
            return Console.print(self, *objects, **kw)

    out, tables = io.StringIO(), []
    monkeypatch.setattr(safe, "table_console", lambda fmt=None, stderr=False: Unprotected(
        tables, file=out, width=80, highlight=False, color_system=None))
    assert main(["compare", "1", "2", "--all", "--db", db]) == 0
    with pytest.raises(AssertionError):
        check_whole(out.getvalue(), tables, 80)


def test_not_rated_is_said_once(monkeypatch, db, capfd):
    """compare and the Markdown export say "not rated" once, not "not rated not rated"."""
    text, _ = rendered(monkeypatch, 200, ["compare", "1", "2", "--db", db])
    assert "not rated" in text and "not rated not rated" not in text
    assert main(["export", "1", "--format", "md", "--db", db]) == 0
    md = capfd.readouterr().out
    assert "not rated" in md and "not rated not rated" not in md


def test_the_reports_flag_chips_come_once(tmp_path):
    """A run of this KVM guest (its real facts, tests/data/facts) with a real engine
    document: one chip says it is a virtual machine (not a second 'virtualised'), and a
    cross-check's chip names its job."""
    import json
    from test_store import realistic_job
    from rtgauge.analysis.run.headline import headline
    from rtgauge.report.html.summary import chip_text, render_summary
    facts = json.loads((DATA.parent / "facts" / "this-vm.json").read_text())
    doc = json.loads((DATA / "run-a" / "latency@idle.json").read_text())
    with open_store(str(tmp_path / "r.db")) as store:
        run_id = store.begin_run(facts, [], "quick", "builtin:quick", ["rtgauge", "run"])
        store.add_measurement(run_id, realistic_job("latency-idle", "idle"), doc)
        store.finish_run(run_id, "complete", "")
        run = store.get_run(run_id)
    html = render_summary([run], [headline(run)], 100.0)
    chips = re.findall(r"<span class='flag'>([^<]*)</span>", html)
    assert sum("virtual" in c for c in chips) == 1, chips
    assert len(chips) == len(set(chips)), chips
    assert chip_text("cross-check disagrees: latency-cpu (cpu) worst case 1.0 µs (engine) vs 9.0 µs") == \
        "cross-check disagrees: latency-cpu (cpu)"


@pytest.mark.parametrize("width", WIDTHS)
def test_doctor_prints_each_command_whole_on_its_own_line(monkeypatch, width):
    """doctor's advice for this VM's real facts: every backquoted command of more than a
    word or two is a line of its own, whole (a `;` list split into lines that do the same)."""
    import json
    from rtgauge.cli.doctor import COMMAND_INLINE_MAX, print_table, shell_lines
    from rtgauge.sysinfo import run_doctor
    facts = json.loads((DATA.parent / "facts" / "this-vm.json").read_text())
    checks = run_doctor(facts)
    out = io.StringIO()
    monkeypatch.setattr(safe, "table_console", lambda fmt=None, stderr=False: SafeConsole(
        file=out, width=width, highlight=False, color_system=None))
    print_table(facts, checks)
    lines = [line.strip() for line in out.getvalue().splitlines()]
    commands = [cmd for c in checks for i, cmd in enumerate(c["advice"].split("`"))
                if i % 2 and len(cmd) > COMMAND_INLINE_MAX]
    assert commands, "this VM's advice names no command"
    for cmd in commands:
        for line in shell_lines(cmd):
            assert line in lines, (width, line)
    for c in checks:
        assert any(line.startswith(c["status"]) and c["name"] in line for line in lines)
    assert shell_lines("sysctl a=-1; (sleep 600; sysctl a=1) &") == ["sysctl a=-1", "(sleep 600; sysctl a=1) &"]


def test_doctor_into_a_pipe_is_tsv(monkeypatch):
    import json
    from rtgauge.cli.doctor import print_table
    from rtgauge.sysinfo import run_doctor
    facts = json.loads((DATA.parent / "facts" / "this-vm.json").read_text())
    checks = run_doctor(facts)
    out = io.StringIO()
    monkeypatch.setattr(safe, "table_console", lambda fmt=None, stderr=False: SafeConsole(
        file=out, width=80, highlight=False, plain=True))
    print_table(facts, checks)
    lines = out.getvalue().splitlines()
    assert lines[1] == "check\tstatus\tvalue\tadvice"
    assert [line.split("\t")[0] for line in lines[2:2 + len(checks)]] == [c["name"] for c in checks]
    assert lines[-1].startswith("# ") and " bad, " in lines[-1]
