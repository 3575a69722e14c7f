"""`rtgauge run` without real-time privilege (docs/loads.md, "Without real-time
privilege"): refused before anything is stored, in one sentence with the fix, exit 2;
with --allow-fallback (or the profile's settings.allow_fallback) measured as
SCHED_OTHER and marked fallback in every output. The real engine, real SQLite, and
the privilege really dropped (setpriv, prlimit) for rtgauge and its engine."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

PROFILE = """
name = "nopriv"
[settings]
warmup_s = 0
{settings}
[[jobs]]
name = "latency"
test = "latency"
conditions = ["idle"]
cross_check = ["cyclictest"]
[jobs.options]
interval-us = 1000
duration-s = 1
window-s = 0.1
policy = "fifo"
priority = 80
histogram = 2000
"""

CAP_SYS_NICE = 23


def has_cap(name: str, bit: int) -> bool:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(name + ":"):
            return bool(int(line.split()[1], 16) >> bit & 1)
    return False


def unprivileged() -> list[str]:
    """A command prefix that takes CAP_SYS_NICE and the rtprio limit away from what it
    starts (and everything that starts): the test's subject is that environment."""
    if not shutil.which("setpriv") or not shutil.which("prlimit"):
        pytest.skip("setpriv and prlimit (util-linux) are needed")
    prefix = ["prlimit", "--rtprio=0:0"]
    if has_cap("CapBnd", CAP_SYS_NICE):
        prefix += ["setpriv", "--inh-caps=-sys_nice", "--bounding-set=-sys_nice"]
    return prefix


def run(tmp_path: Path, *args: str, prefix: list[str] | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    pre = unprivileged() if prefix is None else prefix
    return subprocess.run([*pre, sys.executable, "-m", "rtgauge", *args], capture_output=True, text=True,
                          timeout=300, env=env, cwd=tmp_path)


def profile(tmp_path: Path, settings: str = "") -> str:
    path = tmp_path / "nopriv.toml"
    path.write_text(PROFILE.format(settings=settings))
    return str(path)


def stored_runs(db: Path) -> int:
    with sqlite3.connect(db) as c:
        return c.execute("select count(*) from runs").fetchone()[0]


def test_refused_before_anything_is_stored(tmp_path):
    db = tmp_path / "r.db"
    p = run(tmp_path, "run", "--profile", profile(tmp_path), "--db", f"sqlite:///{db}", "--no-report")
    assert p.returncode == 2, p.stderr
    assert "Traceback" not in p.stderr and p.stdout == ""
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, p.stderr            # one sentence, not one a job
    text = lines[0]
    assert "SCHED_FIFO priority 80 was refused" in text and "nothing was measured or stored" in text
    assert "--cap-add=SYS_NICE" in text and "--ulimit rtprio=99" in text
    assert "/etc/security/limits.conf" in text
    engine = os.path.realpath(os.environ.get("RTGAUGE_ENGINE") or ROOT / "rtgauge/bin/rtgauge-engine")
    assert f"setcap cap_sys_nice+ep {engine}" in text
    assert "rtgauge run --allow-fallback" in text
    assert not db.exists()                       # the database was not even opened


def test_refused_run_adds_nothing_to_an_existing_database(tmp_path):
    db = tmp_path / "r.db"
    first = run(tmp_path, "run", "--profile", profile(tmp_path), "--db", f"sqlite:///{db}", "--no-report",
                "--allow-fallback")
    assert first.returncode in (0, 1), first.stderr
    assert stored_runs(db) == 1
    p = run(tmp_path, "run", "--profile", profile(tmp_path), "--db", f"sqlite:///{db}", "--no-report")
    assert p.returncode == 2 and "--cap-add=SYS_NICE" in p.stderr
    assert stored_runs(db) == 1


def check_fallback_run(tmp_path: Path, db: Path, p: subprocess.CompletedProcess) -> None:
    """Every output of a fallback run marks it: the summary, show, its JSON, the
    report and the exports; the cyclictest cross-check is left out with a note."""
    assert "Traceback" not in p.stderr
    said = " ".join((p.stdout + p.stderr).split())        # the console wraps long lines
    assert "--allow-fallback measures as SCHED_OTHER" in said
    assert "not real-time" in said                        # the summary
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    show = subprocess.run([sys.executable, "-m", "rtgauge", "show", "1", "--db", f"sqlite:///{db}", "--json"],
                          capture_output=True, text=True, env=env, timeout=120)
    doc = json.loads(show.stdout)
    ms = doc["measurements"]
    assert [m["name"] for m in ms] == ["latency@idle"]      # no cyclictest row
    m = ms[0]
    assert m["env"]["fallback"] is True and m["env"]["policy"] == "other" and m["fallback"] is True
    assert "cyclictest cannot measure without it" in " ".join(m["env"]["notes"])
    assert doc["rating"]["stars"] == 0 and "fallback" in doc["rating"]["class"]
    text = subprocess.run([sys.executable, "-m", "rtgauge", "show", "1", "--db", f"sqlite:///{db}"],
                          capture_output=True, text=True, env=env, timeout=120).stdout
    assert "fallback" in text
    html = tmp_path / "r.html"
    r = subprocess.run([sys.executable, "-m", "rtgauge", "report", "1", "--db", f"sqlite:///{db}", "-o", str(html)],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "fallback: not real-time" in html.read_text()
    for fmt in ("csv", "md", "json"):
        out = subprocess.run([sys.executable, "-m", "rtgauge", "export", "1", "--db", f"sqlite:///{db}",
                              "--format", fmt], capture_output=True, text=True, env=env, timeout=120)
        assert out.returncode == 0, out.stderr
        assert "fallback" in out.stdout, fmt


def test_allow_fallback_measures_and_marks_it(tmp_path):
    db = tmp_path / "f.db"
    p = run(tmp_path, "run", "--profile", profile(tmp_path), "--db", f"sqlite:///{db}", "--no-report",
            "--allow-fallback")
    assert p.returncode == 0, p.stderr
    check_fallback_run(tmp_path, db, p)


def test_profile_setting_allows_fallback(tmp_path):
    db = tmp_path / "s.db"
    p = run(tmp_path, "run", "--profile", profile(tmp_path, "allow_fallback = true"), "--db", f"sqlite:///{db}",
            "--no-report")
    assert p.returncode == 0, p.stderr
    check_fallback_run(tmp_path, db, p)


def test_profile_setting_must_be_a_boolean(tmp_path):
    p = run(tmp_path, "run", "--profile", profile(tmp_path, 'allow_fallback = "yes"'), "--db",
            f"sqlite:///{tmp_path / 'b.db'}", "--no-report", prefix=[])
    assert p.returncode == 2 and "settings.allow_fallback must be true or false" in p.stderr
