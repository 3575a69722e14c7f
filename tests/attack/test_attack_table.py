"""The attack set as one table, in the manner of rtla's tests/*.t: each line is a command
with hostile input, the exit status it must give, a fragment of the one sentence it
must print, and whether the database must be left as it was. Every command runs as the
user runs it (a subprocess of `python -m rtgauge`); none may print a traceback or a raw
terminal control character. Add a line with every new command or option.

    case(id, argv, status, fragment, unchanged=True, inputs=...)

argv may use {db} (a database holding one real run), {tmp} (a private directory),
{file} (the case's input file, written by its `inputs` builder) and {engine}."""

from __future__ import annotations

import copy
import json
import os
import sqlite3
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIG = 2**63


@dataclass
class Case:
    id: str
    argv: list[str]
    status: int
    fragment: str
    unchanged: bool = True                    # the database holds exactly what it held before
    inputs: Callable[[dict, Path], object] | None = None   # builds {file}
    env: dict = field(default_factory=dict)


def export_with(change: Callable[[dict], None]):
    """An input builder: the real export of the fixture run, changed by `change`."""
    def build(base: dict, path: Path):
        data = copy.deepcopy(base["export"])
        change(data)
        return data
    return build


def raw(text: str):
    return lambda base, path: text


def measurement(data) -> dict:
    return data["run"]["measurements"][0]


def set_bins(value):
    def change(d):
        measurement(d)["document"]["metrics"]["ti"]["histogram"]["bins"][0][2] = value
    return change


def profile(body: str):
    return raw('name = "attack"\n[settings]\nwarmup_s = 0\n' + body)


LATENCY_JOB = '[[jobs]]\nname = "{name}"\ntest = "latency"\n[jobs.options]\nduration-s = {d}\n'

CASES = [
    # -- run ids, ranges (2^63 and beyond: a sentence, not OverflowError) ------------------
    Case("show-id-2^63", ["show", str(BIG), "--db", "{db}"], 2, "is not a run"),
    Case("show-id-huge", ["show", "9" * 400, "--db", "{db}"], 2, "is not a run"),
    Case("report-range-2^63", ["report", f"1-{BIG - 1}", "--db", "{db}", "-o", "{tmp}/r.html"], 2,
         "more than one command takes"),
    Case("report-id-2^63", ["report", str(BIG), "--db", "{db}", "-o", "{tmp}/r.html"], 2, "is not a run"),
    Case("report-range-backwards", ["report", "5-2", "--db", "{db}", "-o", "{tmp}/r.html"], 2, "runs backwards"),
    Case("compare-id-2^63", ["compare", "1", str(BIG), "--db", "{db}"], 2, "is not a run"),
    Case("export-id-2^63", ["export", str(BIG), "--db", "{db}"], 2, "is not a run"),
    Case("report-to-directory", ["report", "1", "--db", "{db}", "-o", "{tmp}"], 2, "is not a file rtgauge can write"),
    # -- sizes bounded before work ---------------------------------------------------------
    Case("rt-cpus-0-999999999", ["run", "--db", "{db}", "--no-report", "--rt-cpus", "0-999999999"], 2,
         "is not one rtgauge may use"),
    Case("rt-cpus-2^70", ["run", "--db", "{db}", "--no-report", "--rt-cpus", str(2**70)], 2,
         "is not one rtgauge may use"),
    Case("load-cpus-huge", ["run", "--db", "{db}", "--no-report", "--load-cpus", "1-4294967296"], 2,
         "is not one rtgauge may use"),
    Case("tune-rt-cpus-huge", ["tune", "--status", "--rt-cpus", "0-999999999999", "--state", "{tmp}/s.json"], 0,
         "nothing applied"),
    Case("job-name-100k", ["run", "--db", "{db}", "--no-report", "--profile", "{file}"], 2, "longer than 64",
         inputs=profile(LATENCY_JOB.format(name="x" * 100_000, d=0.2))),
    Case("profile-cpus-huge", ["run", "--db", "{db}", "--no-report", "--profile", "{file}"], 2,
         "does not exist on this machine",
         inputs=profile(LATENCY_JOB.format(name="l", d=0.2) + 'cpus = "0-99999999999"\n')),
    # -- profiles and options ---------------------------------------------------------------
    Case("profile-not-utf8", ["run", "--db", "{db}", "--no-report", "--profile", "{file}"], 2, "not UTF-8",
         inputs=lambda b, p: b'name = "\xff"\n'),
    Case("profile-duration-abc", ["run", "--db", "{db}", "--no-report", "--profile", "{file}"], 2, "is not a number",
         inputs=profile(LATENCY_JOB.format(name="l", d='"abc"'))),
    Case("report-option-directory", ["run", "--db", "{db}", "--report", "{tmp}", "--profile", "{file}"], 2,
         "is not a file rtgauge can write", inputs=profile(LATENCY_JOB.format(name="l", d=0.2))),
    Case("engine-is-directory", ["run", "--db", "{db}", "--no-report", "--profile", "{file}"], 2,
         "is not an executable file", inputs=profile(LATENCY_JOB.format(name="l", d=0.2)),
         env={"RTGAUGE_ENGINE": "/tmp"}),
    Case("db-not-utf8", ["show", "--db", "{tmp}/\udcff.db"], 2, "not valid UTF-8"),
    Case("db-300-chars", ["show", "1", "--db", "{tmp}/" + "a" * 300 + "/x.db"], 2, "longer than the file system"),
    # -- import: strict JSON, schema, dry read; nothing stored ---------------------------------
    Case("import-inf-bin", ["import", "{file}", "--db", "{db}"], 2, "too large",
         inputs=lambda b, p: json.dumps(b["export"]).replace('"bins": [[', '"bins": [[1e400, ', 1)),
    Case("import-nan", ["import", "{file}", "--db", "{db}"], 2, "not a number",
         inputs=lambda b, p: json.dumps(b["export"]).replace('"p99":', '"p99": NaN, "x":', 1)),
    Case("import-2^63-bin", ["import", "{file}", "--db", "{db}"], 2, "does not fit 64 bits",
         inputs=export_with(set_bins(BIG))),
    Case("import-negative-count", ["import", "{file}", "--db", "{db}"], 2, "not a valid rtgauge export",
         inputs=export_with(set_bins(-5))),
    Case("import-exit-2^70", ["import", "{file}", "--db", "{db}"], 2, "does not fit 64 bits",
         inputs=export_with(lambda d: measurement(d).update(exit_status=2**70))),
    Case("import-exit-2^40", ["import", "{file}", "--db", "{db}"], 2, "exit_status",
         inputs=export_with(lambda d: measurement(d).update(exit_status=2**40))),
    Case("import-deep-nesting", ["import", "{file}", "--db", "{db}"], 2, "nests deeper",
         inputs=raw("[" * 100_000 + "]" * 100_000)),
    Case("import-deep-in-params", ["import", "{file}", "--db", "{db}"], 2, "nests deeper",
         inputs=lambda b, p: json.dumps(b["export"]).replace('"params": {', '"params": {"x": ' + "[" * 500
                                                              + "]" * 500 + ",", 1)),
    Case("import-hostname-int", ["import", "{file}", "--db", "{db}"], 2, "system/hostname",
         inputs=export_with(lambda d: d["run"]["system"].update(hostname=42))),
    Case("import-metrics-list", ["import", "{file}", "--db", "{db}"], 2, "metrics",
         inputs=export_with(lambda d: measurement(d)["document"].update(metrics=[1, 2]))),
    Case("import-doctor-string", ["import", "{file}", "--db", "{db}"], 2, "doctor",
         inputs=export_with(lambda d: d["run"].update(doctor="all good"))),
    Case("import-huge-note", ["import", "{file}", "--db", "{db}"], 2, "200,000 characters long",
         inputs=export_with(lambda d: d["run"].update(note="n" * 200_000))),
    Case("import-name-missing", ["import", "{file}", "--db", "{db}"], 2, "'name' is a required property",
         inputs=export_with(lambda d: measurement(d).pop("name"))),
    Case("import-verdict-not-object", ["import", "{file}", "--db", "{db}"], 2, "verdicts",
         inputs=export_with(lambda d: measurement(d)["document"].update(verdicts={"v": [1]}))),
    Case("import-ti-count-string", ["import", "{file}", "--db", "{db}"], 2, "count",
         inputs=export_with(lambda d: measurement(d)["document"]["metrics"]["ti"].update(count="many"))),
    Case("import-export-format-2", ["import", "{file}", "--db", "{db}"], 2, "export format 2",
         inputs=export_with(lambda d: d.update(rtgauge_export=2))),
    Case("import-engine-doc-test-int", ["import", "{file}", "--db", "{db}"], 2, "engine document",
         inputs=lambda b, p: dict(b["document"], test=5) if False else json.dumps(
             dict(b["document"], env=dict(b["document"]["env"], hostname=["a"])))),
    Case("import-not-utf8", ["import", "{file}", "--db", "{db}"], 2, "not UTF-8",
         inputs=lambda b, p: b'{"rtgauge_export": 1, "x": "\xff"}'),
    Case("import-dev-zero", ["import", "/dev/zero", "--db", "{db}"], 2, "not a regular file"),
    Case("import-dir-with-garbage", ["import", "{tmp}/docs", "--db", "{db}"], 2, "not valid JSON",
         inputs=lambda b, p: (p.parent.joinpath("docs").mkdir(), p.parent.joinpath("docs", "a.json").write_text(
             json.dumps(b["document"])), p.parent.joinpath("docs", "b.json").write_text("{oops"), "")[-1]),
    Case("import-database-bad-facts", ["import", "{file}", "--db", "{db}"], 2, "system/hostname",
         inputs=lambda b, p: crafted_database(b, p, "UPDATE runs SET system_facts = '{\"hostname\": 5}'")),
    Case("import-database-bad-json", ["import", "{file}", "--db", "{db}"], 2, "cannot read",
         inputs=lambda b, p: crafted_database(b, p, "UPDATE measurements SET params = '{not json'")),
    Case("import-database-itself", ["import", "{db}", "--db", "{db}"], 2, "being imported into"),
    Case("import-database-itself-dot", ["import", "{tmp}/./db.sqlite", "--db", "{db}"], 2, "being imported into"),
    Case("import-same-run-back", ["import", "{file}", "--db", "{db}"], 0, "imported before as run 1",
         inputs=export_with(lambda d: None)),
    Case("import-nul-in-note", ["import", "{file}", "--db", "{db}"], 2, "NUL character",
         inputs=export_with(lambda d: d["run"].update(note="before\x00after"))),
    Case("import-nul-in-name", ["import", "{file}", "--db", "{db}"], 2, "NUL character",
         inputs=export_with(lambda d: measurement(d).update(name="l\x00x"))),
    Case("import-started-not-a-time", ["import", "{file}", "--db", "{db}"], 2, "is not an ISO 8601 time",
         inputs=export_with(lambda d: d["run"].update(started_at="yesterday"))),
    Case("import-condition-empty", ["import", "{file}", "--db", "{db}", "--condition", ""], 2,
         "is not a condition name", inputs=lambda b, p: json.dumps(b["document"])),
    Case("import-condition-201", ["import", "{file}", "--db", "{db}", "--condition", "c" * 201], 2,
         "is not a condition name", inputs=lambda b, p: json.dumps(b["document"])),
    Case("import-condition-slash", ["import", "{file}", "--db", "{db}", "--condition", "../x"], 2,
         "is not a condition name", inputs=lambda b, p: json.dumps(b["document"])),
    # -- issue 34: strict values before anything is stored -------------------------------------------
    Case("import-esc-in-name", ["import", "{file}", "--db", "{db}"], 2, "holds a control character",
         inputs=export_with(lambda d: measurement(d).update(name="x\x1b[31m"))),
    Case("import-newline-in-condition", ["import", "{file}", "--db", "{db}"], 2, "holds a control character",
         inputs=export_with(lambda d: measurement(d).update(condition="idle\nfake"))),
    Case("import-negative-cycles", ["import", "{file}", "--db", "{db}"], 2, "metrics/cycles/value, -5 is out of range",
         inputs=export_with(lambda d: measurement(d)["document"]["metrics"]["cycles"].update(value=-5))),
    Case("import-avg-above-max", ["import", "{file}", "--db", "{db}"], 2, "do not hold min <= avg <= max",
         inputs=export_with(lambda d: measurement(d)["document"]["metrics"]["ti"].update(avg=1e15))),
    Case("import-min-above-max", ["import", "{file}", "--db", "{db}"], 2, "do not hold min <= avg <= max",
         inputs=export_with(lambda d: measurement(d)["document"]["metrics"]["ti"].update(min=1e15, avg=None))),
    Case("import-lone-surrogate", ["import", "{file}", "--db", "{db}"], 2, "lone surrogate",
         inputs=lambda b, p: json.dumps(b["export"]).replace('"note": "', '"note": "\\ud800', 1)),
    Case("import-doc-lone-surrogate", ["import", "{file}", "--db", "{db}"], 2, "lone surrogate",
         inputs=lambda b, p: json.dumps(b["document"]).replace('"env": {', '"env": {"x": "\\udfff",', 1)),
    # -- cyclictest's files: strict, bounded ---------------------------------------------------------
    Case("import-cyclictest-list", ["import", "{file}", "--db", "{db}"], 2, "neither an rtgauge export",
         inputs=raw("[1,2,3]")),
    Case("import-cyclictest-deep", ["import", "{file}", "--db", "{db}"], 2, "nests deeper",
         inputs=raw('{"rt_test_version:": "2.40", "thread": ' + "[" * 5000 + "]" * 5000 + "}")),
    Case("import-cyclictest-bin-2^70", ["import", "{file}", "--db", "{db}"], 2, "does not fit 64 bits",
         inputs=lambda b, p: cyclictest_json(bins={"3": 2**70})),
    Case("import-cyclictest-bin-2^60", ["import", "{file}", "--db", "{db}"], 2, "not a valid cyclictest --json",
         inputs=lambda b, p: cyclictest_json(bins={"3": 2**60}, cycles=2**60)),
    Case("import-cyclictest-nan", ["import", "{file}", "--db", "{db}"], 2, "not a number",
         inputs=lambda b, p: cyclictest_json().replace('"avg": 3.5', '"avg": NaN')),
    Case("import-cyclictest-threads-list", ["import", "{file}", "--db", "{db}"], 2, "not a valid cyclictest --json",
         inputs=raw('{"rt_test_version:": "2.40", "thread": [1, 2, 3]}')),
    Case("import-cyclictest-bin-key", ["import", "{file}", "--db", "{db}"], 2, "not a valid cyclictest --json",
         inputs=lambda b, p: cyclictest_json(bins={"-1": 3})),
    Case("import-cyclictest-more-in-hist", ["import", "{file}", "--db", "{db}"], 2, "values in its histogram",
         inputs=lambda b, p: cyclictest_json(bins={"3": 500}, cycles=10)),
    Case("import-cyclictest-max-below-bins", ["import", "{file}", "--db", "{db}"], 2, "below its highest",
         inputs=lambda b, p: cyclictest_json(bins={"300": 5}, cycles=5)),
    Case("import-cyclictest-max-text", ["import", "{file}", "--db", "{db}"], 2, "thread/0/max",
         inputs=lambda b, p: cyclictest_json().replace('"max": 9', '"max": "9"')),
    Case("import-histfile-huge-count", ["import", "{file}", "--db", "{db}"], 2, "not a count",
         inputs=raw("# Histogram\n000001 " + "9" * 40 + "\n# Max Latencies: 00002\n")),
    Case("import-histfile-no-footer", ["import", "{file}", "--db", "{db}"], 2, "no '# Max Latencies'",
         inputs=raw("# Histogram\n000001 000004\n")),
    Case("import-histfile-max-below-bins", ["import", "{file}", "--db", "{db}"], 2, "below its highest",
         inputs=raw("# Histogram\n000009 000004\n# Max Latencies: 00002\n")),
    # -- option values ---------------------------------------------------------------------------
    Case("duration-1e999", ["run", "--db", "{db}", "--no-report", "--duration", "1e999"], 2, "not understood"),
    Case("duration-huge-digits", ["run", "--db", "{db}", "--no-report", "--duration", "9" * 400], 2, "out of range"),
    Case("segment-zero", ["run", "--db", "{db}", "--no-report", "--segment", "0s"], 2, "out of range"),
    Case("trace-threshold-zero", ["run", "--db", "{db}", "--no-report", "--trace-threshold-us", "0"], 2,
         "out of range"),
    Case("budget-nan", ["report", "1", "--db", "{db}", "--budget-us", "nan", "-o", "{tmp}/r.html"], 2,
         "out of range"),
    Case("rt-throttling-inf", ["tune", "--apply", "--rt-throttling-off", "1e309", "--state", "{tmp}/state/x.json"],
         2, "1 to 604800"),
    Case("run-id-float", ["show", "1e3", "--db", "{db}"], 2, "is not a run"),
    Case("report-id-text", ["report", "1;DROP TABLE runs", "--db", "{db}", "-o", "{tmp}/r.html"], 2, "is not a run"),
    # -- hostile strings are stored but reach the terminal escaped -------------------------------
    Case("import-ansi-and-markup", ["import", "{file}", "--db", "{db}"], 0, "Imported run", unchanged=False,
         inputs=export_with(lambda d: (d["run"].update(started_at="2020-01-01T00:00:00+00:00", origin=None),  # another run
                                       d["run"]["system"].update(hostname="h\x1b]0;owned\x07\x1b[2J"),
                                       measurement(d).update(name="x[/]"),   # an ESC in a name: refused below
                                       d["run"].update(note="\x9b31m note")))),
    # -- tune state: trusted for nothing ---------------------------------------------------------
    Case("tune-status-garbage", ["tune", "--status", "--state", "{tmp}/state/s.json"], 2, "is not one rtgauge wrote",
         inputs=raw("garbage{")),
    Case("tune-revert-any-path", ["tune", "--revert", "--state", "{tmp}/state/s.json"], 2,
         "is not a file the governor tuning changes",
         inputs=lambda b, p: json.dumps({"version": 1, "root": "/", "changes": [
             {"setting": "governor", "path": str(p.parent.parent / "victim"), "before": "x", "new": "y",
              "restore": "owned"}]})),
    Case("tune-revert-bad-value", ["tune", "--revert", "--state", "{tmp}/state/s.json"], 2, "is not one that file holds",
         inputs=lambda b, p: json.dumps({"version": 1, "root": "/", "changes": [
             {"setting": "rt_throttling", "path": "/proc/sys/kernel/sched_rt_runtime_us", "before": "950000\n",
              "new": "-1", "restore": "-1; reboot"}]})),
    Case("tune-revert-other-root", ["tune", "--revert", "--state", "{tmp}/state/s.json"], 2, "names the tree",
         inputs=lambda b, p: json.dumps({"version": 1, "root": "/tmp", "changes": []})),
    Case("tune-state-world-writable-dir", ["tune", "--status", "--state", "/tmp/rtgauge-attack-state.json"], 2,
         "not a private directory"),
    Case("tune-state-deep", ["tune", "--status", "--state", "{tmp}/state/s.json"], 2, "is not one rtgauge wrote",
         inputs=raw("[" * 100_000)),
    # -- issue 24: databases, samples files, options (docs/design.md, the attack table's classes) ----
    Case("db-in-memory", ["show", "--db", "sqlite://"], 2, "in-memory database"),
    Case("db-foreign-application", ["show", "--db", "{file}"], 2, "is not an rtgauge database",
         inputs=lambda b, p: foreign_database(p)),
    Case("db-password-in-message", ["show", "--db", "postgresql://u:Zq7secretPW@127.0.0.1:1/db?password=Zq7secretPW"],
         2, "***"),
    Case("pwcet-samples-device", ["pwcet", "--samples", "/dev/zero"], 2, "not a regular file"),
    Case("pwcet-block-cycles-2^70", ["pwcet", "--samples", "/dev/zero", "--block-cycles", str(2**70)], 2,
         "--block-cycles must be"),
    Case("pwcet-exceedance-subnormal", ["pwcet", "--samples", "/dev/zero", "--exceedance", "1e-320"], 2,
         "--exceedance must be a probability from"),
    Case("lab-name-escapes", ["lab", "run", "{file}"], 2, "it names files",
         inputs=raw('name = "../../esc"\nprofile = "quick"\ndb = "postgresql://u@127.0.0.1:1/db"\n'
                    'targets = ["ssh://b"]\n')),
]


def cyclictest_json(bins=None, cycles=100) -> str:
    """A cyclictest --json file in rt-tests 2.x's shape (as tests/test_formats_cyclictest.py
    makes for real), with the given histogram and cycle count of its one thread."""
    return json.dumps({"file_version": 1, "cmdline:": "cyclictest -q -h 400 --json=x", "rt_test_version:": "2.40",
                       "return_code": 0, "sysinfo": {"nodename": "board", "release": "6.1", "machine": "x86_64"},
                       "thread": {"0": {"histogram": bins if bins is not None else {"3": 100}, "cycles": cycles,
                                        "min": 3, "max": 9, "avg": 3.5, "cpu": 0}}})


def foreign_database(path: Path) -> bytes:
    """Another application's SQLite file: one table, one row."""
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE contacts (name TEXT)")
    con.execute("INSERT INTO contacts VALUES ('a')")
    con.commit()
    con.close()
    return path.read_bytes()


def crafted_database(base: dict, path: Path, sql: str) -> bytes:
    """A copy of the fixture database changed by sql (another rtgauge database, damaged)."""
    path.write_bytes(base["db"].read_bytes())
    con = sqlite3.connect(path)
    con.execute(sql)
    con.commit()
    con.close()
    return path.read_bytes()


def rtgauge(args: list[str], env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    full_env = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="200")
    full_env.update(env or {})
    from conftest import rtgauge as cli
    return cli(*args, env_full=full_env, cwd=ROOT, timeout=timeout, errors="replace")


def database_contents(db: Path) -> list:
    if not db.exists():
        return []
    con = sqlite3.connect(db)
    try:
        return [con.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall()
                for t in ("runs", "measurements", "metrics", "histogram_bins", "verdicts")]
    finally:
        con.close()


@pytest.fixture(scope="module")
def base(tmp_path_factory, engine_bin):
    """One real engine document, imported into a database, and that run's export."""
    d = tmp_path_factory.mktemp("attack-base")
    from conftest import import_engine_latency
    db = d / "base.db"
    doc_path = import_engine_latency(engine_bin, d / "lat.json", db)
    p = rtgauge(["export", "1", "--db", str(db), "--format", "json"])
    assert p.returncode == 0, p.stderr
    return {"db": db, "export": json.loads(p.stdout), "document": json.loads(doc_path.read_text())}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_attack(case: Case, base, tmp_path, engine_bin):
    db = tmp_path / "db.sqlite"
    db.write_bytes(base["db"].read_bytes())
    state_dir = tmp_path / "state"
    state_dir.mkdir(mode=0o700)
    file = tmp_path / "state" / "s.json" if case.id.startswith("tune-") else tmp_path / "input"
    if case.inputs:
        content = case.inputs(base, file)
        if isinstance(content, (dict, list)):
            content = json.dumps(content)
        file.write_bytes(content if isinstance(content, bytes) else content.encode())
    subst = {"{db}": str(db), "{tmp}": str(tmp_path), "{file}": str(file), "{engine}": engine_bin}
    argv = []
    for a in case.argv:
        for k, v in subst.items():
            a = a.replace(k, v)
        argv.append(a)
    before = database_contents(db)
    victim = tmp_path / "victim"
    victim.write_text("untouched")
    p = rtgauge(argv, env=case.env)
    out = p.stdout + p.stderr
    assert "Traceback" not in out, out
    assert p.returncode == case.status, out
    assert case.fragment in out, out
    if case.status != 0:
        assert len(p.stderr.strip().splitlines()) == 1, f"more than one sentence: {p.stderr}"
    if case.unchanged:
        assert database_contents(db) == before, "the database changed"
    assert victim.read_text() == "untouched"
    assert "Zq7secretPW" not in out
    assert "\x1b" not in out and "\x9b" not in out and "\x07" not in out
    if case.id == "import-ansi-and-markup":
        shown = rtgauge(["show", "latest", "--db", str(db)])
        assert shown.returncode == 0 and "Traceback" not in shown.stderr, shown.stderr
        text = shown.stdout + shown.stderr
        assert "\x1b" not in text and "\x07" not in text and "\x9b" not in text
        assert "x[/]" in text and "\\x1b]0;owned" in text
        for command in (["report", "latest", "--db", str(db), "-o", str(tmp_path / "r.html")],
                        ["export", "latest", "--db", str(db), "--format", "md"]):
            r = rtgauge(command)
            assert r.returncode == 0, r.stderr
            assert "\x1b" not in r.stderr
