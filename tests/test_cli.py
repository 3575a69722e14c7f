"""The command line as a user meets it: the packaged engine, pass-through, errors."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
INSTALLED = Path(sys.prefix) / "bin" / "rtgauge"


def rtgauge(*args, env_extra=None, cwd=ROOT):
    from conftest import rtgauge as cli
    return cli(*args, env=env_extra, cwd=cwd, timeout=60)


@pytest.mark.skipif(not INSTALLED.exists(), reason="rtgauge is not installed in this Python environment")
def test_installed_package_carries_its_engine(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("RTGAUGE_ENGINE", "PYTHONPATH")}
    p = subprocess.run([str(INSTALLED), "engine", "--list"], capture_output=True, text=True, timeout=30,
                       env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    names = [line.split()[0] for line in p.stdout.splitlines()]
    assert {"latency", "overhead", "spin"} <= set(names)


def test_engine_passthrough_keeps_exit_status_and_output():
    p = rtgauge("engine", "latency", "--interval-us", "1")
    assert p.returncode == 2
    assert p.stderr.strip().splitlines() == [
        "rtgauge-engine: --interval-us 1 is out of range 50..1000000; choose a value in that range."]
    assert '"ok":false' in p.stdout


def test_missing_engine_is_one_sentence(tmp_path):
    p = rtgauge("engine", "--list", env_extra={"RTGAUGE_ENGINE": str(tmp_path / "nope")})
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "RTGAUGE_ENGINE" in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_no_command_prints_help():
    p = rtgauge()
    assert p.returncode == 2 and "run" in p.stdout and "doctor" in p.stdout


def test_unknown_command_is_a_usage_error():
    p = rtgauge("frobnicate")
    assert p.returncode == 2 and "invalid choice" in p.stderr and "Traceback" not in p.stderr
