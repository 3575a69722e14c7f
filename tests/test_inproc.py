"""The in-process runner of the command line (tests/inproc.py, conftest.rtgauge): a call
sees what a process of its own would (environment, working directory, stdin, its
descriptors 1 and 2 shared with its children, the interpreter's exit status), and leaves
the test process as it found it. And the condition it puts on the product: no module
reads the environment when it is imported (rtgauge is imported once, before any test's
environment exists: such a value would be the first caller's, not the test's)."""

from __future__ import annotations

import ast
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import inproc
from conftest import ROOT, rtgauge


def env_read_at_import(path: Path) -> list[int]:
    """Lines of statements run at import (the module's own, a class body's) that read
    os.environ or call os.getenv."""
    found = []

    def visit(body):
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if isinstance(stmt, ast.ClassDef):
                visit(stmt.body)
                continue
            for node in ast.walk(stmt):
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                        and node.value.id == "os" and node.attr in ("environ", "getenv", "environb"):
                    found.append(node.lineno)
    visit(ast.parse(path.read_text()).body)
    return found


def test_no_module_reads_the_environment_when_imported():
    offenders = {str(p.relative_to(ROOT)): lines for p in sorted((ROOT / "rtgauge").rglob("*.py"))
                 if (lines := env_read_at_import(p))}
    assert not offenders, f"read the environment where it is used, not at import: {offenders}"


def test_the_scan_finds_a_read_at_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import os\nTIMEOUT = float(os.environ.get('X', '60'))\n\n"
                   "class C:\n    home = os.getenv('HOME')\n\n"
                   "def fine():\n    return os.environ.get('X')\n")
    assert env_read_at_import(bad) == [2, 5]


def state() -> tuple:
    """What a call must leave as it found it."""
    return (dict(os.environ), os.getcwd(), list(sys.argv), sys.stdin, sys.stdout, sys.stderr,
            {s: signal.getsignal(s) for s in inproc.CATCHABLE}, os.sched_getaffinity(0),
            [os.path.realpath(f"/proc/self/fd/{fd}") for fd in (0, 1, 2)])


def run(entry, *, env=None, cwd=None, timeout=60, **kw) -> subprocess.CompletedProcess:
    return inproc.run(["x"], env=dict(os.environ) if env is None else env, cwd=cwd or os.getcwd(),
                      timeout=timeout, entry=entry, **kw)


def test_the_command_sees_its_environment_directory_and_stdin_and_leaves_ours(tmp_path):
    seen = {}

    def entry(argv):
        seen.update(argv=argv, sys_argv=list(sys.argv), env=os.environ.get("INPROC_PROBE"),
                    cwd=os.getcwd(), stdin=sys.stdin.read(), tz=time.tzname)
        os.environ["LEFT_BEHIND"] = "1"
        os.chdir("/")
        signal.signal(signal.SIGTERM, lambda *a: None)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        sys.argv.append("more")
        return 3

    before = state()
    p = run(entry, env={"INPROC_PROBE": "yes", "TZ": "Pacific/Chatham", "PATH": os.environ["PATH"]},
            cwd=tmp_path, input="one\ntwo\n")
    assert p.returncode == 3 and p.stdout == p.stderr == ""
    assert seen == {"argv": ["x"], "sys_argv": [inproc.MAIN, "x"], "env": "yes", "cwd": str(tmp_path),
                    "stdin": "one\ntwo\n", "tz": seen["tz"]}
    assert "+1245" in seen["tz"] or "CHAST" in seen["tz"], seen["tz"]      # TZ took effect
    assert state() == before and time.tzname != seen["tz"]


def test_descriptors_1_and_2_are_the_commands_and_its_childrens(tmp_path):
    def entry(argv):
        print("python before")
        sys.stdout.flush()
        subprocess.run(["sh", "-c", "echo child out; echo child err >&2"], check=True)
        with open("/dev/stdout", "w") as f:       # a reopened stdout keeps what came before it
            f.write("reopened\n")
        print("warned", file=sys.stderr)
        print("python after")
        return 0

    before = state()
    p = run(entry)
    assert p.stdout == "python before\nchild out\nreopened\npython after\n"
    assert p.stderr == "child err\nwarned\n" and p.returncode == 0
    assert state() == before


def test_exit_statuses_are_the_interpreters():
    def exits(code):
        def entry(argv):
            sys.exit(code)
        return entry

    assert run(exits(None)).returncode == 0
    assert run(exits(4)).returncode == 4
    assert run(exits(256 + 5)).returncode == 5
    said = run(exits("a sentence"))
    assert said.returncode == 1 and said.stderr == "a sentence\n"

    def broken(argv):
        print("so far")
        raise ValueError("a bug")
    p = run(broken)
    assert p.returncode == 1 and p.stdout == "so far\n"
    assert p.stderr.startswith("Traceback (most recent call last):") and p.stderr.endswith("ValueError: a bug\n")


def test_the_timeout_interrupts_the_command():
    before = state()
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired) as e:
        run(lambda argv: print("started", flush=True) or time.sleep(30), timeout=0.5)
    assert time.monotonic() - started < 10 and e.value.output == b"started\n"
    assert state() == before and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_a_real_command_gets_the_environment_of_the_call(tmp_path):
    """RTGAUGE_DB of the call, not of the test process, chooses the database; SIGTERM and
    SIGHUP, which every command takes over (rtgauge/cli), are ours again after it."""
    before = state()
    env = dict(os.environ, RTGAUGE_DB=str(tmp_path / "here.db"), COLUMNS="100")
    p = rtgauge("show", env_full=env, cwd=tmp_path)
    assert p.returncode == 2 and p.stdout == "", p.stderr
    assert f"no results database at {tmp_path / 'here.db'}, as RTGAUGE_DB says" in p.stderr
    assert len(p.stderr.splitlines()) == 1
    bad = rtgauge("show", "--no-such-option", cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr.startswith("usage: rtgauge show")
    assert state() == before
