"""`--help` never acts: on every command and subcommand (found from the parser itself, so
a new one is covered the day it is added), on `rtgauge hil`'s modes and on every engine
test, asking for help prints help and does nothing else. Watched with strace: no
program is started (no `ip netns add`, no engine run; only the engine's own `--help`
may be exec'd), no namespace is entered or made (unshare, setns), and no file appears
in the home, data, config or working directory (no database is created)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rtgauge.cli import build_parser, subcommand_parsers
from rtgauge.hil.command import MODES

ROOT = Path(__file__).resolve().parent.parent
ENGINE = os.environ.get("RTGAUGE_ENGINE", "")

pytestmark = pytest.mark.skipif(not shutil.which("strace"), reason="strace is not installed")


def engine_tests() -> list[str]:
    p = subprocess.run([sys.executable, "-m", "rtgauge", "engine", "--list"], capture_output=True, text=True,
                       timeout=60, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert p.returncode == 0, p.stderr
    return [line.split()[0] for line in p.stdout.splitlines() if line.strip()]


def help_commands() -> list[list[str]]:
    paths = [list(path) for path, _ in subcommand_parsers(build_parser())]
    out = [["--help"], ["-h"], ["show", "-h"]] + [[*p, "--help"] for p in paths]
    out += [["hil", mode, "--help"] for mode in MODES] + [["hil", "veth", "--role", "sim", "-h"]]
    # after other options too: help wins wherever it stands
    out += [["run", "--profile", "standard", "--tuned", "--help"], ["tune", "--apply", "--help"],
            ["import", "x.json", "--help"], ["lab", "run", "lab.toml", "--help"]]
    return out


def traced(args: list[str], home: Path) -> tuple[subprocess.CompletedProcess, str]:
    log = home / "strace.log"
    env = dict(os.environ, PYTHONPATH=str(ROOT), HOME=str(home), XDG_DATA_HOME=str(home / "data"),
               XDG_CONFIG_HOME=str(home / "config"), XDG_STATE_HOME=str(home / "state"))
    env.pop("RTGAUGE_DB", None)
    env.pop("RTGAUGE_CONFIG", None)
    p = subprocess.run(["strace", "-f", "-qq", "-o", str(log), "-e", "trace=execve,unshare,setns",
                        sys.executable, "-m", "rtgauge", *args], capture_output=True, text=True, timeout=120,
                       env=env, cwd=home / "work")
    text = log.read_text()
    log.unlink()
    return p, text


def files_under(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*")}


def check_did_nothing(args: list[str], home: Path, allowed_exec: set[str]) -> None:
    before = files_under(home)
    p, trace = traced(args, home)
    assert p.returncode == 0, (args, p.stderr)
    assert "usage" in p.stdout.lower(), (args, p.stdout[:200])
    execs = re.findall(r'execve\("([^"]+)", \[(.*?)\]', trace)
    started = [(prog, argv) for prog, argv in execs[1:]
               if not (prog in allowed_exec and re.search(r'"(--help|-h)"', argv))]
    assert execs and not started, (args, started)
    assert not re.search(r"\b(unshare|setns)\(", trace), (args, trace[-500:])
    assert files_under(home) == before, (args, files_under(home) - before)


@pytest.fixture
def home(tmp_path) -> Path:
    for d in ("data", "config", "state", "work"):
        (tmp_path / d).mkdir()
    return tmp_path


def test_the_watch_sees_an_action(home):
    """The check can fail: a command that does act (a show that makes no database, the
    engine's dry run, which execs it) is caught."""
    p, trace = traced(["engine", "latency", "--dry-run"], home)
    assert p.returncode == 0
    execs = re.findall(r'execve\("([^"]+)", \[(.*?)\]', trace)
    assert len(execs) == 2 and '"--dry-run"' in execs[1][1]          # the engine ran: seen
    with pytest.raises(AssertionError):
        check_did_nothing(["engine", "latency", "--dry-run"], home, set())


def test_help_acts_nowhere(home):
    engine = os.path.realpath(ENGINE) if ENGINE else ""
    # `rtgauge engine [TEST] --help` is the engine's own help (passthrough): an exec of the
    # engine with --help is the only one allowed
    allowed = {engine, ENGINE}
    for args in help_commands():
        check_did_nothing(args, home, allowed)
    for test in engine_tests():
        check_did_nothing(["engine", test, "--help"], home, allowed)
