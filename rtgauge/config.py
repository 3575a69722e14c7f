"""The user's settings: the results database, the default profile of `run`, and the
budget a job has (docs/config.md).

Precedence, for each setting: the command line, then the environment (RTGAUGE_DB,
RTGAUGE_PROFILE), then the config file, then the built-in default. The config file is
$RTGAUGE_CONFIG if set, else $XDG_CONFIG_HOME/rtgauge/config.toml (XDG's default
~/.config). It is TOML and read strictly: an unknown key or a value of the wrong kind
is one sentence naming the file, the key and what to do.

    db = "~/rtgauge/results.db"          # or postgresql://USER@HOST/DB
    profile = "quick"
    [budget]
    latency_us = 100      # the worst wake-up latency the job tolerates, µs
    period_us = 1000      # the job's period, µs
    miss_rate = 1e-6      # the share of periods it may miss, 0 <= miss_rate < 1

Only the standard library and rtgauge.errors are imported here: the store reads the
database setting through this module and every command starts with it."""

from __future__ import annotations

import math
import os
import tomllib
from collections import namedtuple
from pathlib import Path

from rtgauge.errors import UserError

ENV_CONFIG = "RTGAUGE_CONFIG"
ENV_DB = "RTGAUGE_DB"
ENV_PROFILE = "RTGAUGE_PROFILE"

# key -> (lowest, highest, whether the highest itself is allowed, what it means)
BUDGET_KEYS: dict[str, tuple[float, float, bool, str]] = {
    "latency_us": (1, 1e7, True, "the worst wake-up latency the job tolerates, in µs"),
    "period_us": (1, 1e7, True, "the job's period, in µs"),
    "miss_rate": (0, 1, False, "the share of periods the job may miss"),
}
TOP_KEYS = ("db", "profile", "budget")

# What --db takes, as every command's help says it (three slashes would be a relative path)
DB_FORMS = "a file path, sqlite:////ABSOLUTE/PATH (four slashes) or postgresql://USER@HOST/DB"
DB_HELP = (f"results database: {DB_FORMS} (default: ${ENV_DB}, else the config file's db, else "
           "$XDG_DATA_HOME/rtgauge/rtgauge.db)")


# What the job can bear; None where nobody said (there is no built-in budget). A named
# tuple rather than a dataclass: dataclasses import inspect, too slow for every start.
Budget = namedtuple("Budget", ("latency_us", "period_us", "miss_rate"), defaults=(None, None, None))


def config_path() -> Path:
    given = os.environ.get(ENV_CONFIG)
    if given:
        return Path(given).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME", "")
    # XDG: a relative value is invalid and is ignored
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".config"
    return root / "rtgauge" / "config.toml"


def load_config(path: Path | None = None) -> dict:
    """The config file's settings, validated; {} when there is no file (an explicit
    $RTGAUGE_CONFIG that does not exist is an error: it was meant to be read)."""
    path = path or config_path()
    if not path.is_file():
        if os.environ.get(ENV_CONFIG) and path == config_path():
            raise UserError(f"{ENV_CONFIG} names {path}, which is not a file; create it or unset {ENV_CONFIG}.")
        return {}

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"cannot read the config file {path} ({getattr(e, 'strerror', None) or e}); "
                        f"fix it or point {ENV_CONFIG} elsewhere.") from None
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"the config file {path} is not valid TOML ({e}); fix it (docs/config.md).") from None
    except RecursionError:
        raise UserError(f"the config file {path} nests deeper than rtgauge reads; fix it (docs/config.md).") from None
    return validated(data, path)


def validated(data: dict, path: Path) -> dict:
    for key, value in data.items():
        if key not in TOP_KEYS:
            raise UserError(f"the config file {path} has an unknown key {key!r}; the keys are "
                            f"{', '.join(TOP_KEYS)} (docs/config.md).")
        if key in ("db", "profile") and isinstance(value, str) and any(c < " " or "\x7f" <= c <= "\x9f" for c in value):
            raise UserError(f"{key} in the config file {path} holds a control character (a NUL, a newline); "
                            "fix it (docs/config.md).")
        if key in ("db", "profile") and (not isinstance(value, str) or not value.strip()):
            example = '"~/rtgauge.db"' if key == "db" else '"quick"'
            raise UserError(f"{key} in the config file {path} must be a non-empty string; e.g. "
                            f"{key} = {example}.")
    budget = data.get("budget", {})
    if not isinstance(budget, dict):
        raise UserError(f"budget in the config file {path} must be a table ([budget] with latency_us, "
                        "period_us, miss_rate).")
    for key, value in budget.items():
        if key not in BUDGET_KEYS:
            raise UserError(f"the config file {path} has an unknown key {key!r} in [budget]; the keys are "
                            f"{', '.join(BUDGET_KEYS)} (docs/config.md).")
        lo, hi, hi_ok, meaning = BUDGET_KEYS[key]
        ok = (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
              and lo <= value and (value <= hi if hi_ok else value < hi))
        if not ok:
            raise UserError(f"budget.{key} = {value!r} in the config file {path} is not a number in "
                            f"{lo:g}..{hi:g}{'' if hi_ok else ' (excluded)'}; give {meaning}.")
    if isinstance(data.get("db"), str):
        data = dict(data, db=database_text(data["db"], path))
    return data


def database_text(text: str, path: Path) -> str:
    """A file path in the config file is read from the file's own directory (~ expanded);
    a URL is kept as it is."""
    text = text.strip()
    if "://" in text:
        return text
    try:
        p = Path(text).expanduser()
    except RuntimeError:                 # ~nosuchuser
        raise UserError(f"db = {ascii(text[:80])} in the config file {path} names the home of a user this system "
                        "does not have; fix it (docs/config.md).") from None
    return str(p if p.is_absolute() else path.parent / p)


def database(given: str | None = None) -> str | None:
    """The results database the user chose: --db, else $RTGAUGE_DB, else the config
    file's db; None for the built-in default (the store's XDG data file)."""
    if given is not None:
        return given
    if os.environ.get(ENV_DB):
        return os.environ[ENV_DB]
    return load_config().get("db")


def default_profile(given: str | None = None) -> str | None:
    """`run`'s profile: --profile, else $RTGAUGE_PROFILE, else the config file's profile;
    None for the built-in default."""
    if given is not None:
        return given
    return os.environ.get(ENV_PROFILE) or load_config().get("profile")


def budget_table() -> dict:
    """The config file's [budget] table ({} without one): the user's default job, as
    written (show and run judge against it; analysis.run.verdict.make_budget checks it)."""
    return load_config().get("budget", {}) or {}


def budget(**given: float | None) -> Budget:
    """The job's budget: each of latency_us, period_us, miss_rate from the command
    line (given, when not None), else the config file's [budget], else unset."""
    unknown = set(given) - set(BUDGET_KEYS)
    if unknown:
        raise TypeError(f"budget() got unknown keys {sorted(unknown)}")
    table = load_config().get("budget", {})
    return Budget(**{k: given[k] if given.get(k) is not None else table.get(k) for k in BUDGET_KEYS})
