"""Profiles: TOML files naming the jobs of a run (test, options, load conditions).

    name = "quick"                       # shown in `rtgauge show`
    description = "..."
    target = "ssh://root@board"          # optional: measure there (docs/cross.md); --target wins
    [settings]
    warmup_s = 1.0                       # let a load settle before measuring
    rounds = 1                           # independent engine runs of every job (docs/compare.md)
    allow_fallback = false               # measure as SCHED_OTHER where real-time is refused (docs/loads.md)
    [[jobs]]
    name = "latency"                     # unique within the profile
    test = "latency"                     # an engine test (rtgauge engine --list)
    conditions = ["idle", "cpu"]         # load conditions (rtgauge.loads)
    cross_check = ["cyclictest"]         # also run the field's tool on the same settings
    rounds = 3                           # this job's rounds (default: settings.rounds)
    if_available = ["split"]             # flags used where the engine can, else left out
                                         # with a note (rtgauge.plan.optional)
    [jobs.options]                       # engine options, as on its command line
    interval-us = 1000
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from rtgauge.analysis.run.verdict import make_budget
from rtgauge.bounds import NAME_MAX, PROFILE_NAME_MAX, TEXT_MAX
from rtgauge.catalogue import LATENCY, catalogue, check_options
from rtgauge.errors import UserError
from rtgauge.hil.sustained import spec_from_table as sustained_spec
from rtgauge.loads import CONDITIONS
from rtgauge.tire.sweep import spec_from_table
from rtgauge.tools import cross_checks as adapters

STUDIES = ("tire-study", "interrupt-study", "rtos-evaluation", "cyclictest-study")   # docs/studies.md
BUILTIN = ("quick", "standard", "micro", "hil", *STUDIES, *(f"{s}-quick" for s in STUDIES))
IF_AVAILABLE_KINDS = ("latency",)    # kinds whose flags a job may want only where available (plan/optional.py)
_TOP_KEYS = {"name", "description", "settings", "jobs", "tire", "hil_sustained", "target", "budget"}
_BUDGET_KEYS = {"latency_us", "period_us", "miss_rate"}
_JOB_KEYS = {"name", "test", "conditions", "cross_check", "options", "rounds", "if_available"}
_SETTING_KEYS = {"warmup_s", "rounds", "attribute", "attribute_threshold_us", "allow_fallback"}   # if_available is a job's
MAX_ROUNDS = 100


def cross_checks() -> tuple[str, ...]:
    """The tools a job's cross_check may name: the table's adapters with a command, the
    engine excepted (rtgauge/tools; asked only for a job that names one)."""
    return tuple(a.name for a in adapters())


@dataclass
class JobSpec:
    name: str
    test: str
    conditions: list[str]
    cross_check: list[str] = field(default_factory=list)
    options: dict[str, object] = field(default_factory=dict)
    rounds: int | None = None     # None: the profile's settings.rounds
    if_available: list[str] = field(default_factory=list)


@dataclass
class Profile:
    name: str
    description: str
    source: str            # the TOML text, stored with the run
    origin: str            # "builtin:quick" or the file path
    warmup_s: float
    jobs: list[JobSpec]
    tire: object = None    # rtgauge.tire.sweep.SweepSpec from a [tire] table, or None
    hil_sustained: object = None   # rtgauge.hil.sustained.SustainedSpec from [hil_sustained], or None
    rounds: int = 1        # settings.rounds: independent engine runs of each job
    target: str | None = None   # "ssh://[user@]host[:port]": the machine the jobs run on
    budget: object = None  # rtgauge.analysis.run.verdict.Budget from a [budget] table, or None
    attribute: bool = False    # settings.attribute: trace and attribute every spike (docs/attribution.md)
    attribute_threshold_us: float | None = None   # settings.attribute_threshold_us (default: the run's p99.9)
    allow_fallback: bool = False   # settings.allow_fallback: measure as other where real-time is refused


def load_profile(name_or_path: str) -> Profile:
    """A built-in profile by name, or a TOML file by path."""
    if name_or_path in BUILTIN:
        text = resources.files("rtgauge.profiles").joinpath(f"{name_or_path}.toml").read_text()
        return parse_profile(text, f"builtin:{name_or_path}")
    path = Path(name_or_path)
    try:
        is_file = path.is_file()
    except (OSError, ValueError) as e:        # a name over 255 bytes, a NUL
        raise UserError(f"profile {ascii(name_or_path[:60])}{'…' if len(name_or_path) > 60 else ''} is neither a "
                        f"built-in profile nor a file path the system takes ({getattr(e, 'strerror', None) or e}); "
                        f"give one of {', '.join(BUILTIN)} or a TOML file.") from None
    if not is_file:
        raise UserError(f"profile {name_or_path!r} is neither a built-in profile "
                        f"({', '.join(BUILTIN)}) nor a readable TOML file; give one of those.")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise UserError(f"cannot read profile {path}: {e.strerror}; check the path and permissions.")
    except UnicodeDecodeError as e:
        raise UserError(f"profile {path} is not UTF-8 text (byte {e.start}); save it as UTF-8.") from None
    return parse_profile(text, str(path))


def parse_profile(text: str, origin: str) -> Profile:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"profile {origin} is not valid TOML ({e}); fix the file.")
    _reject_unknown(data, _TOP_KEYS, f"profile {origin}")
    settings = data.get("settings", {})
    _expect(isinstance(settings, dict), f"profile {origin}: [settings] must be a table.")
    _reject_unknown(settings, _SETTING_KEYS, f"profile {origin} [settings]")
    warmup = settings.get("warmup_s", 1.0)
    _expect(isinstance(warmup, (int, float)) and 0 <= warmup <= 600,
            f"profile {origin}: settings.warmup_s must be a number of seconds from 0 to 600.")
    rounds = settings.get("rounds", 1)
    _expect(valid_rounds(rounds), f"profile {origin}: settings.rounds must be a whole number from 1 to {MAX_ROUNDS}.")
    attribute = settings.get("attribute", False)
    _expect(isinstance(attribute, bool), f"profile {origin}: settings.attribute must be true or false.")
    allow_fallback = settings.get("allow_fallback", False)
    _expect(isinstance(allow_fallback, bool), f"profile {origin}: settings.allow_fallback must be true or false.")
    attr_threshold = settings.get("attribute_threshold_us")
    _expect(attr_threshold is None or (isinstance(attr_threshold, (int, float)) and not isinstance(attr_threshold, bool)
                                       and 1 <= attr_threshold <= 10**9),
            f"profile {origin}: settings.attribute_threshold_us must be a number of µs from 1 to 1000000000.")
    jobs_raw = data.get("jobs")
    _expect(isinstance(jobs_raw, list) and jobs_raw,
            f"profile {origin} has no [[jobs]]; add at least one job with a test and conditions.")
    jobs, seen = [], set()
    for i, raw in enumerate(jobs_raw, 1):
        where = f"profile {origin}, job {i}"
        _expect(isinstance(raw, dict), f"{where} must be a table.")
        _reject_unknown(raw, _JOB_KEYS, where)
        name, test = raw.get("name"), raw.get("test")
        _expect(isinstance(name, str) and name, f"{where} needs a name.")
        _expect(len(name) <= NAME_MAX and name.isprintable(),
                f"{where}: the job name is longer than {NAME_MAX} characters or holds control characters; "
                "give a short printable name.")
        _expect(name not in seen, f"{where}: job name {name!r} is used twice; names must be unique.")
        seen.add(name)
        _expect(isinstance(test, str) and test, f"{where} ({name}) needs a test (see `rtgauge engine --list`).")
        info = catalogue().test(test, f"{where} ({name})")
        conditions = raw.get("conditions", ["idle"])
        _expect(isinstance(conditions, list) and conditions and all(isinstance(c, str) for c in conditions),
                f"{where} ({name}): conditions must be a non-empty list of names.")
        for c in conditions:
            _expect(c in CONDITIONS, f"{where} ({name}): unknown condition {c!r}; "
                    f"known conditions are {', '.join(sorted(CONDITIONS))}.")
        cross = raw.get("cross_check", [])
        _expect(isinstance(cross, list) and (not cross or all(c in cross_checks() for c in cross)),
                f"{where} ({name}): cross_check may list only {', '.join(cross_checks())}.")
        _expect(not cross or info.kind == LATENCY,
                f"{where} ({name}): a cross-check ({', '.join(cross)}) only fits the latency tests "
                f"(tests of kind {LATENCY}: {', '.join(catalogue().names(LATENCY))}).")
        options = raw.get("options", {})
        _expect(isinstance(options, dict), f"{where} ({name}): options must be a table.")
        for k, v in options.items():
            _expect(isinstance(v, (str, int, float, bool)),
                    f"{where} ({name}): option {k} must be a string, number or boolean.")
        check_options(info, options, f"{where} ({name})")
        wanted = raw.get("if_available", [])
        _expect(isinstance(wanted, list) and all(isinstance(w, str) for w in wanted),
                f"{where} ({name}): if_available must be a list of flag names.")
        for w in wanted:
            opt = info.options.get(w)
            _expect(opt is not None and opt.type == "flag" and info.kind in IF_AVAILABLE_KINDS and w not in options,
                    f"{where} ({name}): if_available may name only flags of a "
                    f"{' or '.join(IF_AVAILABLE_KINDS)} test not also set in options; {w!r} is not one.")
        job_rounds = raw.get("rounds")
        _expect(job_rounds is None or valid_rounds(job_rounds),
                f"{where} ({name}): rounds must be a whole number from 1 to {MAX_ROUNDS}.")
        jobs.append(JobSpec(name, test, list(conditions), list(cross), dict(options), job_rounds,
                            list(wanted)))
    name = data.get("name", Path(origin).stem)
    _expect(isinstance(name, str) and 0 < len(name) <= PROFILE_NAME_MAX and name.isprintable(),
            f"profile {origin}: name must be printable text of 1 to {PROFILE_NAME_MAX} characters.")
    _expect(isinstance(data.get("description", ""), str) and len(data.get("description", "")) <= TEXT_MAX,
            f"profile {origin}: description must be text of at most {TEXT_MAX} characters.")
    tire = None
    if "tire" in data:
        tire = spec_from_table(data["tire"], f"profile {origin}")
    hil_sustained = None
    if "hil_sustained" in data:
        hil_sustained = sustained_spec(data["hil_sustained"], f"profile {origin}")
    target = data.get("target")
    if target is not None:
        _expect(isinstance(target, str), f"profile {origin}: target must be text like \"ssh://root@board\".")
        if target not in ("", "local"):
            # needs asyncssh (the ssh extra): imported only when a target is given
            from rtgauge.remote.ssh import parse
            try:
                parse(target)
            except UserError as e:
                raise UserError(f"profile {origin}: {e}") from None
    budget = None
    if "budget" in data:
        table = data["budget"]
        _expect(isinstance(table, dict), f"profile {origin}: [budget] must be a table with latency_us "
                "(and optionally period_us, miss_rate).")
        _reject_unknown(table, _BUDGET_KEYS, f"profile {origin} [budget]")
        budget = make_budget(table.get("latency_us"), table.get("period_us"), table.get("miss_rate"),
                             f"profile {origin} [budget]")
    return Profile(str(name), str(data.get("description", "")), text, origin, float(warmup), jobs, tire,
                   hil_sustained, int(rounds), target if target not in ("", "local") else None, budget,
                   attribute or attr_threshold is not None,
                   float(attr_threshold) if attr_threshold is not None else None, allow_fallback)


def valid_rounds(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_ROUNDS


def _reject_unknown(table: dict, known: set[str], where: str) -> None:
    unknown = sorted(set(table) - known)
    if unknown:
        raise UserError(f"{where}: unknown key {unknown[0]!r}; known keys are {', '.join(sorted(known))}.")


def _expect(ok: bool, sentence: str) -> None:
    if not ok:
        raise UserError(sentence)
