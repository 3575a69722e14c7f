"""The user's settings (rtgauge/config.py, docs/config.md): read strictly, with the
precedence command line > environment > config file > built-in."""

from __future__ import annotations

from pathlib import Path

import pytest

from rtgauge import config
from rtgauge.errors import UserError


@pytest.fixture
def conf(tmp_path, monkeypatch) -> Path:
    for name in (config.ENV_DB, config.ENV_PROFILE, config.ENV_CONFIG):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    path = tmp_path / "rtgauge" / "config.toml"
    path.parent.mkdir()
    return path


def test_no_file_is_no_setting(conf):
    assert config.load_config() == {}
    assert config.database() is None and config.default_profile() is None
    assert config.budget() == config.Budget()


def test_a_full_file_is_read(conf):
    conf.write_text('db = "results.db"\nprofile = "standard"\n'
                    "[budget]\nlatency_us = 100\nperiod_us = 1000\nmiss_rate = 1e-6\n")
    assert config.database() == str(conf.parent / "results.db")     # relative to the file
    assert config.default_profile() == "standard"
    assert config.budget() == config.Budget(latency_us=100, period_us=1000, miss_rate=1e-6)


def test_precedence_command_line_environment_file(conf, monkeypatch):
    conf.write_text('db = "postgresql://lab@db/rt"\nprofile = "standard"\n[budget]\nlatency_us = 100\n')
    assert config.database() == "postgresql://lab@db/rt"
    monkeypatch.setenv(config.ENV_DB, "/env.db")
    monkeypatch.setenv(config.ENV_PROFILE, "micro")
    assert config.database() == "/env.db" and config.default_profile() == "micro"
    assert config.database("/given.db") == "/given.db" and config.default_profile("quick") == "quick"
    assert config.budget(latency_us=50) == config.Budget(latency_us=50)
    assert config.budget(latency_us=None).latency_us == 100


def test_rtgauge_config_points_elsewhere(conf, tmp_path, monkeypatch):
    other = tmp_path / "other.toml"
    other.write_text('profile = "micro"\n')
    monkeypatch.setenv(config.ENV_CONFIG, str(other))
    assert config.default_profile() == "micro"
    monkeypatch.setenv(config.ENV_CONFIG, str(tmp_path / "missing.toml"))
    with pytest.raises(UserError, match="RTGAUGE_CONFIG names .* which is not a file"):
        config.load_config()


@pytest.mark.parametrize("text, words", [
    ('dbb = "x.db"\n', "unknown key 'dbb'"),
    ("[budget]\nlatency = 100\n", "unknown key 'latency' in [budget]"),
    ("[budget]\nlatency_us = 0\n", "budget.latency_us = 0"),
    ("[budget]\nlatency_us = -5\n", "not a number in 1..1e+07"),
    ("[budget]\nmiss_rate = 1\n", "budget.miss_rate = 1 "),
    ("[budget]\nmiss_rate = nan\n", "budget.miss_rate = nan"),
    ("[budget]\nperiod_us = true\n", "budget.period_us = True"),
    ('[budget]\nperiod_us = "1ms"\n', "budget.period_us = '1ms'"),
    ("budget = 3\n", "must be a table"),
    ("db = 3\n", "db in the config file"),
    ('profile = ""\n', "profile in the config file"),
    ("db = [\n", "not valid TOML"),
])
def test_a_bad_file_is_one_sentence(conf, text, words):
    conf.write_text(text)
    with pytest.raises(UserError) as e:
        config.load_config()
    message = str(e.value)
    assert words in message and str(conf) in message and "\n" not in message


def test_the_command_line_reads_the_config(conf, tmp_path, monkeypatch, capsys):
    """A bad config file stops a command before it does anything, with exit status 2."""
    from rtgauge.cli import main
    conf.write_text("colour = 1\n")
    monkeypatch.chdir(tmp_path)
    assert main(["show"]) == 2
    assert "unknown key 'colour'" in capsys.readouterr().err
