"""Rounds: a job measured N times, each round its own engine run and measurement
(the job's name, its round a field of its own), interleaved across the jobs of a profile."""

from __future__ import annotations

from conftest import cli
import subprocess
import sys

import pytest

from rtgauge.errors import UserError
from rtgauge.plan import build_plan
from rtgauge.profiles import parse_profile

PROFILE = """
[settings]
rounds = 2
[[jobs]]
name = "mutex"
test = "mutex"
[[jobs]]
name = "switch"
test = "switch"
rounds = 3
[[jobs]]
name = "once"
test = "sem"
rounds = 1
"""


def test_rounds_are_interleaved_and_tagged():
    jobs = build_plan(parse_profile(PROFILE, "t"))
    assert [(j.name, j.round) for j in jobs] == [
        ("mutex@idle", 1), ("switch@idle", 1), ("once@idle", None),
        ("mutex@idle", 2), ("switch@idle", 2),
        ("switch@idle", 3)]
    assert [j.label for j in jobs][:3] == ["mutex@idle (round 1)", "switch@idle (round 1)", "once@idle"]
    assert {j.rounds for j in jobs if j.test == "switch"} == {3}


def test_run_rounds_overrides_every_job():
    jobs = build_plan(parse_profile(PROFILE, "t"), rounds=1)
    assert [j.name for j in jobs] == ["mutex@idle", "switch@idle", "once@idle"]
    assert len(build_plan(parse_profile(PROFILE, "t"), rounds=4)) == 12


@pytest.mark.parametrize("bad", ["[settings]\nrounds = 0\n[[jobs]]\nname='a'\ntest='mutex'\n",
                                 "[[jobs]]\nname='a'\ntest='mutex'\nrounds = 'x'\n",
                                 "[[jobs]]\nname='a'\ntest='mutex'\nrounds = 1000\n"])
def test_bad_rounds_are_one_sentence(bad):
    with pytest.raises(UserError, match="rounds must be a whole number"):
        parse_profile(bad, "t")


def test_run_refuses_bad_rounds_before_measuring(tmp_path):
    p = cli(["run", "--rounds", "0", "--db", str(tmp_path / "r.db")], timeout=60)
    assert p.returncode == 2 and "--rounds 0 is out of range" in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "r.db").exists()
