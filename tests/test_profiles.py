"""Profiles: the built-in ones parse and plan as documented; bad ones are one sentence."""

import pytest

from rtgauge.errors import UserError
from rtgauge.bounds import parse_cpu_list
from rtgauge.plan import build_plan, plan_seconds
from rtgauge.profiles import load_profile, parse_profile


def test_quick_profile_fits_three_minutes_and_cross_checks_every_condition():
    profile = load_profile("quick")
    jobs = build_plan(profile)
    assert plan_seconds(jobs, profile.warmup_s) <= 180
    latency = [j for j in jobs if j.test == "latency"]
    assert {(j.condition, j.tool) for j in latency} == {
        ("idle", "engine"), ("idle", "cyclictest"), ("cpu", "engine"), ("cpu", "cyclictest")}
    for j in latency:
        assert j.options["priority"] == 80 and j.options["policy"] == "fifo"
    # the cross-check runs right after the job it checks, on the same settings
    for a, b in zip(jobs, jobs[1:]):
        if b.tool == "cyclictest":
            assert a.tool == "engine" and a.condition == b.condition and a.options == b.options
            assert a.cpus == b.cpus


def test_standard_profile_parses():
    jobs = build_plan(load_profile("standard"))
    assert len(jobs) == 9


def test_engine_args_render_flags_and_values():
    p = parse_profile('[[jobs]]\nname="a"\ntest="latency"\n[jobs.options]\ninterval-us=200\n'
                      'allow-fallback=true\nno-mlock=false\n', "t")
    (job,) = build_plan(p)
    assert job.engine_args() == ["--interval-us", "200", "--allow-fallback"]


@pytest.mark.parametrize("text, words", [
    ("jobs = 3", "jobs"),
    ("[[jobs]]\ntest='latency'", "needs a name"),
    ("[[jobs]]\nname='a'", "needs a test"),
    ("[[jobs]]\nname='a'\ntest='latency'\nconditions=['moon']", "unknown condition 'moon'"),
    ("[[jobs]]\nname='a'\ntest='latency'\n[[jobs]]\nname='a'\ntest='latency'", "used twice"),
    ("[[jobs]]\nname='a'\ntest='latency'\ncolour='red'", "unknown key 'colour'"),
    ("[[jobs]]\nname='a'\ntest='overhead'\ncross_check=['cyclictest']", "only fits the latency"),
    ("[settings]\nwarmup_s=-1\n[[jobs]]\nname='a'\ntest='latency'", "warmup_s"),
    ("not toml [", "not valid TOML"),
    ("[[jobs]]\nname='a'\ntest='latncy'", "unknown test 'latncy'; the engine's tests are latency, overhead"),
    ("[[jobs]]\nname='a'\ntest='latency'\n[jobs.options]\ninterval-us=10",
     "--interval-us 10 is out of range 50..1000000"),
    ("[[jobs]]\nname='a'\ntest='spin'\n[jobs.options]\ncpus='0'", "the spin test has no option 'cpus'; it takes cpu,"),
    ("[[jobs]]\nname='a'\ntest='pi'\n[jobs.options]\nprimitive='rwlock'", "--primitive 'rwlock' is not one of pi-mutex"),
    ("[[jobs]]\nname='a'\ntest='latency'\n[jobs.options]\nbreak=1", "--break is a flag"),
    ("[[jobs]]\nname='a'\ntest='latency'\n[jobs.options]\ncycles=2.5", "--cycles 2.5 is not an integer"),
])
def test_bad_profiles_say_what_is_wrong(text, words):
    with pytest.raises(UserError) as e:
        parse_profile(text, "bad.toml")
    assert words in str(e.value)
    assert "\n" not in str(e.value)


def test_missing_profile_file():
    with pytest.raises(UserError, match="neither a built-in profile"):
        load_profile("/nonexistent/profile.toml")


def test_cpu_list():
    assert parse_cpu_list("0-2,5, 7") == [0, 1, 2, 5, 7]


def test_builtin_profiles_fit_the_catalogue():
    """Every job of every built-in profile names a test the engine has, with options it
    takes, within their ranges (parse_profile checks it against the engine's catalogue)."""
    from rtgauge.catalogue import catalogue, within
    from rtgauge.profiles import BUILTIN

    for name in BUILTIN:
        for job in load_profile(name).jobs:
            info = catalogue().test(job.test)
            assert all(within(info.option(k), v) for k, v in job.options.items()), (name, job.name)
