"""Signals a table cannot hold (issue 34's low rows): SIGHUP is a stop like SIGTERM —
the run ends, keeps the segment it was measuring, marks itself interrupted and exits
130, whether the hangup reaches rtgauge alone or its whole process group (a closed
terminal or ssh session: the engine gets it too); the cpuset group of a partitioned
run killed by SIGKILL is removed by the next rtgauge command of any kind, a group whose
owner lives is left. Every run here is a real `rtgauge run` of the real engine; the
signal is sent once the run's metrics file (`--metrics-file`, rewritten at each status
window of the engine) shows it measuring."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import needs_root, rtgauge as cli, rtgauge_popen
from attack.test_faults import PROFILE, alive, descendants, engine_pids, env, statuses, wait_until

ROOT = Path(__file__).resolve().parents[2]
CPUS = sorted(os.sched_getaffinity(0))


def hangup_at_default() -> None:
    """A terminal's job starts with SIGHUP at its default; a test runner started under
    nohup would hand its children SIGHUP ignored, which rtgauge rightly keeps ignored."""
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def windows_measured(metrics: Path) -> int:
    """The status windows the run has read so far, from its metrics file (0 before the first)."""
    try:
        text = metrics.read_text()
    except OSError:
        return 0
    return int(sum(float(line.split()[-1]) for line in text.splitlines()
                   if line.startswith("rtgauge_windows_total")))


def stored(db: Path) -> list[tuple]:
    """(interrupted, ok, count of wake-ups) of each stored measurement."""
    import json
    con = sqlite3.connect(db)
    try:
        rows = con.execute("SELECT document FROM measurements ORDER BY id").fetchall()
    finally:
        con.close()
    out = []
    for (doc,) in rows:
        d = json.loads(doc)
        out.append((d.get("interrupted"), d.get("ok"), (d.get("metrics", {}).get("ti") or {}).get("count")))
    return out


def long_run(tmp_path: Path) -> tuple[Path, Path, list[str]]:
    prof = tmp_path / "p.toml"
    prof.write_text(PROFILE.format(conditions='"idle"', seconds=60))
    db, metrics = tmp_path / "r.db", tmp_path / "m.prom"
    return db, metrics, ["run", "--profile", str(prof), "--db", str(db), "--no-report",
                         "--metrics-file", str(metrics)]


def assert_interrupted_and_kept(db: Path, status: int, out: str, err: str) -> None:
    assert status == 130, (status, out + err)
    assert "Traceback" not in err, err
    assert statuses(db) == ["interrupted"]
    [(interrupted, ok, count)] = stored(db)
    # the segment being measured is stored, cut short: more than a window, less than 60 s
    assert interrupted and ok and count and 0 < count < 60_000 * len(CPUS), (interrupted, ok, count)


@needs_root
@pytest.mark.shared
def test_sighup_to_rtgauge_stops_the_run_as_sigterm_does(tmp_path):
    """Before: Python's default SIGHUP killed rtgauge at once (status -1), the run stayed
    'running' until the next command marked it abandoned, the segment was lost."""
    db, metrics, args = long_run(tmp_path)
    p = rtgauge_popen(*args, env_full=env(tmp_path), cwd=tmp_path)
    assert wait_until(lambda: windows_measured(metrics) >= 1 or p.poll() is not None, 60)
    assert p.poll() is None, p.communicate()
    family = descendants(p.pid)
    p.send_signal(signal.SIGHUP)
    out, err = p.communicate(timeout=60)
    assert_interrupted_and_kept(db, p.returncode, out, err)
    assert wait_until(lambda: not any(alive(x) for x in family), 10)


@needs_root
@pytest.mark.shared
def test_hangup_of_the_run_s_process_group_keeps_what_was_measured(tmp_path):
    """A closed terminal sends SIGHUP to the whole job: rtgauge and its engine. Before,
    the engine died of it without writing its document and rtgauge with it."""
    db, metrics, args = long_run(tmp_path)
    p = subprocess.Popen([sys.executable, "-m", "rtgauge", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env(tmp_path), cwd=tmp_path, start_new_session=True,
                         preexec_fn=hangup_at_default)
    try:
        assert wait_until(lambda: windows_measured(metrics) >= 1 or p.poll() is not None, 60)
        assert p.poll() is None, p.communicate()
        engines = engine_pids(descendants(p.pid))
        assert engines and all(os.getpgid(e) == p.pid for e in engines)   # the hangup reaches the engine
        os.killpg(p.pid, signal.SIGHUP)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert_interrupted_and_kept(db, p.returncode, out, err)


@needs_root
@pytest.mark.skipif(len(CPUS) < 2, reason="partitioning needs at least two CPUs")
# any other rtgauge command removes the dead run's group first: beside the background
# pass one did (tests/conftest.py, the lab pass)
@pytest.mark.sole
def test_sigkill_of_a_partitioned_run_leaves_its_cpuset_group_to_the_next_command(tmp_path):
    """The group of a run killed by SIGKILL is removed by the next command of any kind
    (here `show`, which also marks the run abandoned), not kept until the next partitioned run; the
    group of a live owner is left. Before: `show` left both."""
    from rtgauge.loads.partition import find_cpuset_root, remove_group
    base, why = find_cpuset_root()
    if base is None:
        pytest.skip(why)
    db, metrics, args = long_run(tmp_path)
    e = env(tmp_path)
    p = rtgauge_popen(*args, "--rt-cpus", str(CPUS[-1]), "--load-cpus", str(CPUS[0]), env_full=e, cwd=tmp_path)
    group = base.path / f"rtgauge-{p.pid}"
    sleeper = subprocess.Popen(["sleep", "300"])
    live = base.path / f"rtgauge-{sleeper.pid}"
    try:
        assert wait_until(lambda: windows_measured(metrics) >= 1 or p.poll() is not None, 60)
        assert p.poll() is None, p.communicate()
        assert group.is_dir() and (group / "rt").is_dir(), sorted(base.path.glob("rtgauge-*"))
        family = descendants(p.pid)
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        assert wait_until(lambda: not any(alive(x) for x in family), 10)
        assert group.is_dir()                     # a killed rtgauge cannot remove its own
        live.mkdir()                              # a group whose owner still runs
        r = cli("show", "--db", str(db), env_full=e, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        assert "Traceback" not in r.stderr
        assert "marked abandoned" in r.stderr and statuses(db) == ["abandoned"]   # the run, as before
        assert not group.exists(), "the dead run's cpuset group was left"
        assert f"removed the cpuset group {group}" in r.stderr, r.stderr
        assert live.is_dir(), "the group of a live process was removed"
        assert str(live) not in r.stderr
    finally:
        sleeper.kill()
        sleeper.wait()
        for g in (group, live):
            if g.exists():
                remove_group(g)
