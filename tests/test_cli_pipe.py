"""A reader that goes away (`rtgauge show --json | head -1`) ends every command quietly:
no traceback, no "Exception ignored", exit status 141 (128 + SIGPIPE, as the shell
reports `git log | head -1`). The pipe's reading end is closed before the command
starts, so its very first write fails: the worst case, and not a race."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from rtgauge.cli import build_parser, main, subcommand_parsers
from rtgauge.errors import EXIT_PIPE_CLOSED
from rtgauge.store import open_store
from test_store import DOCTOR, SYSTEM, realistic_document, realistic_job

ROOT = Path(__file__).resolve().parent.parent

TINY = """
name = "tiny"
[settings]
warmup_s = 0
[[jobs]]
name = "latency"
test = "latency"
conditions = ["idle"]
[jobs.options]
interval-us = 1000
duration-s = 0.3
policy = "other"
"""


def with_closed_stdout(args: list[str], cwd: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    read, write = os.pipe()
    os.close(read)                       # nobody will ever read: every write gets EPIPE
    try:
        env = dict(os.environ, PYTHONPATH=str(ROOT), XDG_DATA_HOME=str(cwd), XDG_CONFIG_HOME=str(cwd))
        env.pop("RTGAUGE_DB", None)
        env.pop("RTGAUGE_CONFIG", None)
        return subprocess.run([sys.executable, "-m", "rtgauge", *args], stdout=write, stderr=subprocess.PIPE,
                              input=stdin, timeout=300, env=env, cwd=cwd)
    finally:
        os.close(write)


@pytest.fixture(scope="module")
def place(tmp_path_factory) -> tuple[Path, str, list[str]]:
    """A directory with a database of two runs, an export of one, and a tiny profile."""
    tmp = tmp_path_factory.mktemp("pipe")
    db = str(tmp / "r.db")
    ids = []
    with open_store(db) as store:
        for misses in (0, 3):
            run = store.begin_run(SYSTEM, DOCTOR, "quick", "builtin:quick", ["rtgauge", "run"])
            store.add_measurement(run, realistic_job("latency-idle", "idle"), realistic_document(misses=misses))
            store.finish_run(run, "complete", "made for the test")
            ids.append(str(run))
    export = subprocess.run([sys.executable, "-m", "rtgauge", "export", ids[0], "--db", db, "-o", str(tmp / "x.json")],
                            capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=120)
    assert export.returncode == 0, export.stderr
    (tmp / "tiny.toml").write_text(TINY)
    return tmp, db, ids


def commands(db: str, ids: list[str]) -> list[list[str]]:
    """Every command that prints, in the forms a user pipes."""
    helps = [["--help"], ["--version"]] + [[*path, "--help"] for path, _ in subcommand_parsers(build_parser())]
    a, b = ids
    return helps + [
        ["show", "--db", db], ["show", "--db", db, "--json"], ["show", a, "--db", db],
        ["show", a, "--db", db, "--json"], ["show", a, "--db", db, "--format", "table"],
        ["pwcet", a, "--db", db], ["pwcet", a, "--db", db, "--json"],
        ["compare", a, b, "--db", db], ["compare", a, b, "--db", db, "--json"],
        ["export", a, "--db", db], ["export", a, "--db", db, "--format", "csv"],
        ["export", a, "--db", db, "--format", "md"], ["export", a, "--db", db, "-o", "-"],
        ["doctor"], ["doctor", "--json"],
        ["completion", "bash"], ["completion", "zsh"],
        ["hil"], ["hil", "--help"], ["hil", "veth", "--help"], ["hil", "sustained", "--help"],
        ["lab"], ["shwo"], ["show", "--jsn"],
    ]


def main_with_closed_stdout(args: list[str]) -> tuple[int, str]:
    """rtgauge's entry point in this process, its stdout a pipe nobody reads: (status, stderr)."""
    read, write = os.pipe()
    os.close(read)
    out, err = open(write, "w", encoding="utf-8"), io.StringIO()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        try:
            status = main(args)
        except SystemExit as e:       # a usage error: argparse's own exit
            status = e.code
    finally:
        sys.stdout, sys.stderr = saved
        try:
            out.close()
        except OSError:
            pass
    return status, err.getvalue()


USAGE_ERRORS = (["lab"], ["shwo"], ["show", "--jsn"], ["hil"])


def test_every_command_ends_quietly_on_a_closed_pipe(place, monkeypatch):
    tmp, db, ids = place
    monkeypatch.chdir(tmp)
    for name, value in (("XDG_DATA_HOME", tmp), ("XDG_CONFIG_HOME", tmp)):
        monkeypatch.setenv(name, str(value))
    for args in commands(db, ids):
        if args[0] == "engine":
            continue                  # exec'd: below
        status, err = main_with_closed_stdout(args)
        assert "Traceback" not in err and "BrokenPipe" not in err, (args, err)
        # the usage errors go to stderr (still open) and keep their status
        assert status == (2 if args in USAGE_ERRORS else EXIT_PIPE_CLOSED), (args, status, err)


def test_nothing_is_said_at_the_interpreters_exit(place):
    """The interpreter flushes stdout once more as it exits: that must not complain."""
    tmp, db, ids = place
    for args in (["--help"], ["show", "--db", db, "--json"], ["hil", "veth", "--help"]):
        p = with_closed_stdout(args, tmp)
        assert p.returncode == EXIT_PIPE_CLOSED and p.stderr == b"", (args, p.stderr)


def test_import_and_a_run_end_quietly_too(place):
    tmp, db, ids = place
    p = with_closed_stdout(["import", str(tmp / "x.json"), "--db", str(tmp / "other.db")], tmp)
    assert p.returncode == EXIT_PIPE_CLOSED and b"Traceback" not in p.stderr
    p = with_closed_stdout(["import", "-", "--db", str(tmp / "other.db")], tmp,
                           stdin=(tmp / "x.json").read_bytes())
    assert p.returncode == EXIT_PIPE_CLOSED and b"Traceback" not in p.stderr
    # a measurement whose terminal went away: no traceback, and the store says what became of it
    p = with_closed_stdout(["run", "--profile", str(tmp / "tiny.toml"), "--db", str(tmp / "run.db"),
                            "--no-report"], tmp)
    assert p.returncode == EXIT_PIPE_CLOSED and b"Traceback" not in p.stderr, p.stderr.decode()
    with open_store(str(tmp / "run.db")) as store:
        assert [r["status"] for r in store.list_runs()] in ([], ["failed"])   # never left "running"


def test_the_engine_passthrough_ends_as_a_c_tool_does(place):
    tmp, _, _ = place
    p = with_closed_stdout(["engine", "--list"], tmp)
    assert b"Traceback" not in p.stderr and p.returncode == -signal.SIGPIPE
