"""Bad input to the engine: one sentence on stderr, the same in a JSON error
document, exit status 2; --list and --help; the fallback without privilege."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from conftest import needs_root


def listed_tests(engine_bin: str) -> list[str]:
    out = subprocess.run([engine_bin, "--list"], capture_output=True, text=True, check=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def numeric_option(engine_bin: str, test: str) -> tuple[str, str, str]:
    """(name, kind, max) of the first INT/NUM option with a range in --help."""
    help_text = subprocess.run([engine_bin, test, "--help"], capture_output=True, text=True).stdout
    m = re.search(r"--([a-z0-9-]+) (INT|NUM) .*\[range ([-0-9.e+]+)\.\.([-0-9.e+]+)", help_text)
    assert m, f"{test} --help shows no numeric option with a range"
    return m.group(1), m.group(2), m.group(4)


def assert_usage_error(r, *words: str) -> None:
    assert r.status == 2, r.stderr
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, r.stderr
    assert "Traceback" not in r.stderr
    assert r.doc["ok"] is False and r.doc["schema"] == 1
    assert r.doc["error"] in lines[0]
    assert r.doc["error"].endswith(".")
    for w in words:
        assert w in r.doc["error"]


def test_bad_options_of_every_test(engine_bin, run_engine):
    for test in listed_tests(engine_bin):
        name, kind, hi = numeric_option(engine_bin, test)
        assert_usage_error(run_engine(test, "--no-such-option", "1"), "--no-such-option")
        too_big = str(int(float(hi)) + 1) if kind == "INT" else str(float(hi) * 2 + 1)
        assert_usage_error(run_engine(test, f"--{name}", too_big), f"--{name}", "out of range")
        assert_usage_error(run_engine(test, f"--{name}"), f"--{name}", "needs a value")
        assert_usage_error(run_engine(test, f"--{name}", "abc"), f"--{name}", "abc")
        assert_usage_error(run_engine(test, f"--{name}=1x"), f"--{name}")


def test_unknown_test_and_bad_cpu_list(run_engine):
    assert_usage_error(run_engine("no-such-test"), "no-such-test", "--list")
    assert_usage_error(run_engine("latency", "--cpus", "9999"), "CPU 9999", "does not exist")
    assert_usage_error(run_engine("latency", "--cpus", "0-"), "not a CPU list")
    assert_usage_error(run_engine("latency", "--interval-us", "10"), "--interval-us 10 is out of range 50..1000000")


@pytest.mark.shared
def test_spin_keeps_the_busy_time_at_most_half_the_period(run_engine):
    assert_usage_error(run_engine("spin", "--busy-us", "600", "--period-us", "1000"), "50%")


def test_list_help_version(engine_bin):
    out = subprocess.run([engine_bin, "--list"], capture_output=True, text=True)
    assert out.returncode == 0
    names = [line.split()[0] for line in out.stdout.splitlines()]
    assert {"latency", "spin", "overhead"} <= set(names)
    assert all(len(line.split(None, 1)) == 2 for line in out.stdout.splitlines())
    h = subprocess.run([engine_bin, "latency", "--help"], capture_output=True, text=True)
    assert h.returncode == 0
    assert "--interval-us INT" in h.stdout and "range 50..1000000" in h.stdout and "default 1000" in h.stdout
    assert "--policy" in h.stdout and "one of other|fifo|rr" in h.stdout
    v = subprocess.run([engine_bin, "--version"], capture_output=True, text=True)
    assert v.returncode == 0 and v.stdout.startswith("rtgauge-engine ")


def unprivileged(engine_bin: str) -> list[str]:
    """Run as nobody: no CAP_SYS_NICE, RLIMIT_RTPRIO 0."""
    if not shutil.which("setpriv"):
        pytest.skip("setpriv (util-linux) is not installed")
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
            engine_bin]


@needs_root
def test_fifo_without_privilege_fails_clearly(engine_bin):
    p = subprocess.run([*unprivileged(engine_bin), "latency", "--cycles", "10"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 1
    assert "--allow-fallback" in p.stderr and "CAP_SYS_NICE" in p.stderr
    import json
    doc = json.loads(p.stdout)
    assert doc["ok"] is False and "--allow-fallback" in doc["error"]


@needs_root
def test_fallback_measures_as_other_and_says_so(engine_bin):
    import json
    p = subprocess.run([*unprivileged(engine_bin), "latency", "--cycles", "20", "--allow-fallback"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["env"]["fallback"] is True and doc["env"]["policy"] == "other"
    assert all(t["fallback"] and t["policy"] == "other" for t in doc["env"]["threads"])
    assert doc["metrics"]["cycles#0"]["value"] == 20


def test_dry_run_checks_options_without_measuring(run_engine):
    r = run_engine("latency", "--dry-run", "--interval-us", "200", timeout=10)
    assert r.status == 0 and r.doc["ok"] and r.doc["params"]["interval_us"] == 200
    assert "metrics" not in r.doc
    r = run_engine("latency", "--dry-run", "--interval-us", "2", timeout=10)
    assert r.status == 2 and not r.doc["ok"] and "--interval-us" in r.doc["error"]
