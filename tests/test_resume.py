"""`rtgauge run --resume RUN`: a study measured over several sittings (docs/studies.md).

Real runs into real SQLite; a stop is made the way a user's is (a job the watchdog cut
short, rows of a real sweep removed as a stop after them leaves them), and the resumed
run is read back."""

from __future__ import annotations

import json
import sqlite3

import pytest

from conftest import cli

# real engines at SCHED_FIFO, short and tolerant of a loaded machine (tests/conftest.py)
pytestmark = pytest.mark.shared

TWO_JOBS = """name = "two-jobs"
[settings]
warmup_s = 0.0
[[jobs]]
name = "wakeups"
test = "latency"
conditions = ["idle"]
[jobs.options]
duration-s = 1
[[jobs]]
name = "preemption"
test = "preempt"
conditions = ["idle"]
[jobs.options]
event = "timer"
iterations = 3000
timeout-s = 1
"""

SWEEP = """name = "tiny-sweep"
[settings]
warmup_s = 0.0
[[jobs]]
name = "wakeups"
test = "latency"
conditions = ["idle"]
[jobs.options]
duration-s = 0.5
[tire]
threads = [1]
policies = ["fifo"]
period_ms = 10.0
steps = 20
masses_min = 100
masses_max = 400
grid_ratio = 2.0
precision = 0.25
retries = 0
realfast = true
realfast_steps = 20
pretest = false
"""


def stored(db) -> list[tuple]:
    """(id, name, env) of every measurement, in order: the env tells one measurement from
    another where SQLite reuses a removed row's id."""
    with sqlite3.connect(db) as c:
        return c.execute("select id, name, ok, env from measurements order by id").fetchall()


def test_resume_keeps_whole_jobs_and_measures_the_rest_again(tmp_path):
    profile, db = tmp_path / "two.toml", tmp_path / "r.db"
    profile.write_text(TWO_JOBS)
    first = cli(["run", "--profile", str(profile), "--db", str(db), "--no-report", "--format", "tsv"], timeout=120)
    assert first.returncode == 0, first.stderr
    before = {name: env for _, name, _, env in stored(db)}
    assert set(before) == {"wakeups@idle", "preemption@idle"}
    again = cli(["run", "--resume", "1", "--db", str(db), "--no-report", "--json"], timeout=120)
    assert again.returncode == 0, again.stderr
    assert "1 jobs stored whole are kept, 1 to measure" in " ".join(again.stderr.split())
    after = {name: env for _, name, _, env in stored(db)}
    assert set(after) == set(before)                        # each job stored once
    assert after["wakeups@idle"] == before["wakeups@idle"]   # the whole job kept, not measured again
    assert after["preemption@idle"] != before["preemption@idle"]   # measured again
    run = json.loads(again.stdout)
    assert run["id"] == 1 and run["status"] == "complete"


def test_resume_refuses_what_it_cannot_resume(tmp_path):
    db = tmp_path / "r.db"
    missing = cli(["run", "--resume", "7", "--db", str(db), "--no-report"], timeout=60)
    assert missing.returncode == 2 and "there is no run 7 to resume" in missing.stderr, missing.stderr
    assert "Traceback" not in missing.stderr
    profile = tmp_path / "one.toml"
    profile.write_text(TWO_JOBS.split("[[jobs]]\nname = \"preemption\"")[0])
    assert cli(["run", "--profile", str(profile), "--db", str(db), "--no-report"], timeout=120).returncode == 0
    whole = cli(["run", "--resume", "1", "--db", str(db), "--no-report"], timeout=60)
    assert whole.returncode == 2 and "nothing to resume" in whole.stderr, whole.stderr
    both = cli(["run", "--resume", "1", "--profile", "quick", "--db", str(db), "--no-report"], timeout=60)
    assert both.returncode == 2 and "leave out --profile" in both.stderr, both.stderr
    with sqlite3.connect(db) as c:
        c.execute("update runs set system_facts = json_set(system_facts, '$.hostname', 'another-machine')")
        c.execute("update runs set status = 'interrupted'")
    other = cli(["run", "--resume", "1", "--db", str(db), "--no-report"], timeout=60)
    assert other.returncode == 2 and "on the system it measured" in other.stderr, other.stderr


def test_a_resumed_sweep_replays_its_stored_probes(tmp_path):
    profile, db = tmp_path / "sweep.toml", tmp_path / "r.db"
    profile.write_text(SWEEP)
    first = cli(["run", "--profile", str(profile), "--db", str(db), "--no-report", "--json"], timeout=300)
    assert first.returncode == 0, first.stderr
    probes = [(mid, name) for mid, name, _, _ in stored(db) if name.startswith("tire-sweep/")]
    assert "wakeups@idle" in [name for _, name, _, _ in stored(db)]
    assert len(probes) >= 3, probes
    # a stop in the middle of the sweep: the later probes and the result were never stored
    kept, lost = probes[:2], probes[2:]
    stored_before = stored(db)
    with sqlite3.connect(db) as c:
        c.execute("pragma foreign_keys = on")
        c.executemany("delete from measurements where id = ?", [(mid,) for mid, _ in lost])
        c.execute("delete from measurements where name = 'tire-sweep'")
        c.execute("update runs set status = 'interrupted'")
    again = cli(["run", "--resume", "1", "--db", str(db), "--no-report", "--json"], timeout=300)
    assert again.returncode == 0, again.stderr
    said = " ".join(again.stderr.split())          # the console folds long lines
    assert "1 jobs stored whole are kept, 0 to measure, 2 sweep probes to replay" in said, again.stderr
    now = stored(db)
    names = [name for _, name, _, _ in now]
    assert [mid for mid, name, _, _ in now if name.startswith("tire-sweep/")][:2] == [mid for mid, _ in kept]
    assert [env for mid, _, _, env in now if mid in dict(kept)] == [env for mid, _, _, env in stored_before if mid in dict(kept)]
    assert sorted(n for n in names if n.startswith("tire-sweep/")) == sorted(n for _, n in probes)
    assert names.count("tire-sweep") == 1
    assert json.loads(again.stdout)["status"] == "complete"


def test_a_stop_during_the_sweep_is_an_interrupted_run_that_resumes(tmp_path):
    """SIGTERM while the tire sweep measures (a user's Ctrl-C or `kill` hours into the
    full study): the run is interrupted (it read "failed" with a bare KeyboardInterrupt),
    exit 130, the probes stored so far are kept and the note says how to go on; resuming
    it replays them and ends complete."""
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path
    from readiness import wait_for
    root = Path(__file__).resolve().parent.parent
    profile, db = tmp_path / "sweep.toml", tmp_path / "r.db"
    # 3 s a real-time probe, sizes up to 6,400 masses: the sweep outlasts a stop sent once
    # its first probe is stored, however late a loaded machine's poll sees it
    profile.write_text(SWEEP.replace("steps = 20\n", "steps = 300\n", 1).replace("masses_max = 400\n",
                                                                                "masses_max = 6400\n"))

    def probes() -> list:
        try:
            return [n for _, n, _, _ in stored(db) if n.startswith("tire-sweep/")]
        except sqlite3.Error:          # not made yet, or being written
            return []
    proc = subprocess.Popen([sys.executable, "-m", "rtgauge", "run", "--profile", str(profile), "--db", str(db),
                             "--no-report"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=str(root)))
    wait_for(lambda: len(probes()) >= 1, "the sweep's first probe stored", proc=proc)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, out + err
    assert "Traceback" not in err
    said = " ".join(out.split())
    assert "Interrupted: 1 of 1 jobs measured, the sweep stopped before its end" in said and "--resume" in said, said
    kept = probes()
    with sqlite3.connect(db) as c:
        (status, note), = c.execute("select status, note from runs").fetchall()
    assert status == "interrupted" and "sweep stopped" in note and kept and "tire-sweep" not in kept
    again = cli(["run", "--resume", "1", "--db", str(db), "--no-report", "--json"], timeout=300)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["status"] == "complete"
    with sqlite3.connect(db) as c:
        (note,), = c.execute("select note from runs").fetchall()
    assert note.startswith("1 of 1 jobs measured (1 in earlier sittings)"), note     # the run's, not "0 of 0"
    after = probes()
    assert after[:len(kept)] == kept and len(after) > len(kept)
