"""The command line as a user of cyclictest, rtla and hyperfine expects it: suggestions
for a mistyped command or option, the subcommand's own usage, options checked before
anything is printed, units on every time, cyclictest's short options on the latency
test, completions, stdin/stdout as files (-), run --json, extras named when missing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rtgauge.store import open_store
from test_store import DOCTOR, SYSTEM, realistic_document, realistic_job

ROOT = Path(__file__).resolve().parent.parent


def rtgauge(*args: str, cwd: Path = ROOT, stdin: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("RTGAUGE_DB", None)
    from conftest import rtgauge as cli
    return cli(*args, env_full=env, cwd=cwd, timeout=timeout, input=stdin)


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("opts") / "r.db")
    with open_store(path) as store:
        for misses in (0, 3):
            run = store.begin_run(SYSTEM, DOCTOR, "quick", "builtin:quick", ["rtgauge", "run"])
            store.add_measurement(run, realistic_job("latency-idle", "idle"), realistic_document(misses=misses))
            store.finish_run(run, "complete", "")
    return path


def test_a_mistyped_command_or_option_gets_a_suggestion_and_its_own_usage():
    p = rtgauge("shwo")
    assert p.returncode == 2 and "did you mean show?" in p.stderr
    p = rtgauge("compare", "1", "2", "--exceedence", "1e-6")
    assert p.returncode == 2 and "did you mean --exceedance?" in p.stderr
    assert p.stderr.startswith("usage: rtgauge compare "), p.stderr       # the subcommand's usage
    p = rtgauge("lab", "run", "x.toml", "--no-reprot")
    assert p.returncode == 2 and p.stderr.startswith("usage: rtgauge lab run ") and "--no-report?" in p.stderr
    p = rtgauge("hil", "sustained", "--frmes", "3")
    assert p.returncode == 2 and "did you mean --frames?" in p.stderr


def test_options_are_checked_before_anything_is_printed(db, tmp_path):
    for args in (["--pwcet", "--exceedance", "2"], ["--alpha", "3"], ["-o", str(tmp_path / "no" / "r.html")],
                 ["--fail-on", "nonsense"]):
        p = rtgauge("compare", "1", "2", "--db", db, *args)
        assert p.returncode == 2 and p.stdout == "", (args, p.stdout[:300])
        assert len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_time_options_take_units_everywhere():
    p = rtgauge("engine", "latency", "--duration-s", "2m", "--interval-us", "1ms", "--dry-run")
    params = json.loads(p.stdout)["params"]
    assert p.returncode == 0 and params["duration_s"] == 120 and params["interval_us"] == 1000
    p = rtgauge("engine", "latency", "--interval-us", "1.5us", "--dry-run")
    assert p.returncode == 2 and "whole number" in p.stderr
    p = rtgauge("engine", "latency", "--duration-s", "5 parsecs", "--dry-run")
    assert p.returncode == 2 and "with a unit" in p.stderr
    p = rtgauge("engine", "latency", "--cycles", "5s", "--dry-run")          # a count takes no unit
    assert p.returncode == 2
    from rtgauge.units import parse_time
    assert parse_time("1ms", "us") == 1000 and parse_time("250", "us") == 250 and parse_time("2m", "s") == 120
    from rtgauge.plan.execute import parse_duration
    assert parse_duration("500ms") == 0.5 and parse_duration("2m") == 120


def test_cyclictests_short_options_keep_their_meaning():
    p = rtgauge("engine", "latency", "-i", "200", "-p95", "-a", "0", "-t", "1", "-D", "1m", "-h", "400",
                "-b", "150", "-q", "--dry-run")
    assert p.returncode == 0, p.stderr
    params = json.loads(p.stdout)["params"]
    assert (params["interval_us"], params["priority"], params["cpus"], params["threads"]) == (200, 95, [0], 1)
    assert (params["duration_s"], params["histogram"], params["max_latency_us"], params["break"]) == \
        (60, 400, 150, True)
    p = rtgauge("engine", "latency", "-a", "-t", "--dry-run")     # no value: every CPU, one thread each
    assert p.returncode == 0 and json.loads(p.stdout)["params"]["threads"] is None
    p = rtgauge("engine", "latency", "-m")
    assert p.returncode == 2 and "-m has no equivalent" in p.stderr and len(p.stderr.splitlines()) == 1
    p = rtgauge("engine", "latency", "-i")
    assert p.returncode == 2 and "-i needs a value" in p.stderr


def test_the_hil_address_says_what_it_takes():
    p = rtgauge("engine", "hil", "--help")
    assert "--address HOST:PORT" in p.stdout and "--out FILE" in p.stdout


def test_completion_scripts_name_every_command():
    for shell in ("bash", "zsh"):
        p = rtgauge("completion", shell)
        assert p.returncode == 0
        for word in ("show", "compare", "pwcet", "--exceedance", "--fail-on"):
            assert word in p.stdout, (shell, word)
    assert rtgauge("completion", "fish").returncode == 2


def test_dash_is_standard_output_and_standard_input(db, tmp_path):
    p = rtgauge("export", "1", "--db", db, "-o", "-", cwd=tmp_path)
    assert p.returncode == 0 and json.loads(p.stdout)["rtgauge_export"] == 1
    assert not (tmp_path / "-").exists()
    other = tmp_path / "other.db"
    q = rtgauge("import", "-", "--db", str(other), stdin=p.stdout, cwd=tmp_path)
    assert q.returncode == 0, q.stderr
    with open_store(str(other)) as store:
        assert len(store.list_runs()) == 1
    q = rtgauge("import", "-", "--db", str(other), stdin="", cwd=tmp_path)
    assert q.returncode == 2 and "standard input is empty" in q.stderr


def test_run_json_prints_the_stored_run_and_nothing_else(tmp_path):
    prof = tmp_path / "tiny.toml"
    prof.write_text('name = "tiny"\n[settings]\nwarmup_s = 0\n[[jobs]]\nname = "latency"\ntest = "latency"\n'
                    'conditions = ["idle"]\n[jobs.options]\ninterval-us = 1000\nduration-s = 0.3\npolicy = "other"\n')
    db = tmp_path / "r.db"
    p = rtgauge("run", "--profile", str(prof), "--db", str(db), "--no-report", "--json", cwd=tmp_path, timeout=300)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)                  # stdout is the document alone
    assert doc["status"] == "complete" and doc["measurements"][0]["name"].startswith("latency")
    assert "Run 1" in p.stderr                  # progress and summary went to stderr
    shown = json.loads(rtgauge("show", str(doc["id"]), "--db", str(db), "--json").stdout)
    assert shown["id"] == doc["id"] and shown["measurements"][0]["metrics"] == doc["measurements"][0]["metrics"]


def test_a_missing_extra_is_named(tmp_path):
    probe = ("import sys; sys.modules['asyncssh'] = None\n"
             "from rtgauge.errors import UserError\n"
             "try:\n    import rtgauge.remote.ssh\nexcept UserError as e:\n    print(e)\n")
    p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert "pip install 'rtgauge[ssh]'" in p.stdout, p.stdout + p.stderr
    probe = ("import importlib.util as u; real = u.find_spec\n"
             "u.find_spec = lambda name, *a: None if name == 'psycopg' else real(name, *a)\n"
             "from rtgauge.errors import UserError\nfrom rtgauge.store.urls import normalise_url\n"
             "try:\n    normalise_url('postgresql://u@h/db')\nexcept UserError as e:\n    print(e)\n")
    p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert "pip install 'rtgauge[postgres]'" in p.stdout, p.stdout + p.stderr
