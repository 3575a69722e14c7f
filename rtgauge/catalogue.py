"""The engine's catalogue of tests, as the engine itself describes it
(`rtgauge-engine --list --json`, docs/engine.md): every test's kind, summary,
availability, options (type, default, range, choices) and metrics.

Everything in rtgauge that needs to know about a test — profile validation, the
report's grouping by kind, whether a test takes --cpus, the ranges a sweep may ask
for — asks here rather than restating names or ranges. The catalogue is read once
per engine binary (its path, modification time and size) and kept in memory and in
~/.cache/rtgauge/ ($XDG_CACHE_HOME), so a run asks the engine only when it changed."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from rtgauge.enginebin import engine_path
from rtgauge.errors import UserError

# Kinds the engine assigns (test.h rtg_kind); the report groups by these.
LATENCY = "latency"
MICRO_PERFORMANCE = "micro-performance"
MICRO_BEHAVIOUR = "micro-behaviour"
APPLICATION = "application"
LOOP = "loop"
INSTRUMENT = "instrument"
MICRO_KINDS = (MICRO_PERFORMANCE, MICRO_BEHAVIOUR)

CATALOGUE_SCHEMA = 1


@dataclass(frozen=True)
class Option:
    name: str
    type: str                    # int | num | str | choice | cpus | flag
    default: object
    min: float | None
    max: float | None
    choices: tuple[str, ...] | None
    help: str

    def range_text(self) -> str:
        return f"{_fmt(self.min)}..{_fmt(self.max)}"


@dataclass(frozen=True)
class Metric:
    name: str
    kind: str                    # distribution | scalar | series
    unit: str
    per_thread: bool             # also emitted as NAME#i per thread
    conditional: bool            # only under some options or on some systems
    help: str


@dataclass(frozen=True)
class TestInfo:
    name: str
    kind: str
    summary: str
    available: bool
    reason: str | None           # "unavailable here because ..." when not available
    options: dict[str, Option]
    metrics: dict[str, Metric]

    @property
    def takes_cpus(self) -> bool:
        return "cpus" in self.options

    def option(self, name: str) -> Option:
        """The option NAME (without "--"); KeyError names the test when it has none."""
        try:
            return self.options[name]
        except KeyError:
            raise KeyError(f"the engine's {self.name} test has no --{name} option") from None

    def metric_for(self, key: str) -> Metric | None:
        """The declared metric of an emitted key (NAME or NAME#i), or None."""
        base, sep, _ = key.partition("#")
        m = self.metrics.get(base)
        return m if m and (not sep or m.per_thread) else None


@dataclass(frozen=True)
class Catalogue:
    kinds: dict[str, str]
    tests: dict[str, TestInfo]

    def test(self, name: str, where: str = "") -> TestInfo:
        """The test NAME; a UserError listing the known tests when there is none."""
        info = self.tests.get(name)
        if info is None:
            prefix = f"{where}: " if where else ""
            raise UserError(f"{prefix}unknown test {name!r}; the engine's tests are {', '.join(self.tests)}.")
        return info

    def kind_of(self, name: str) -> str | None:
        """The kind of an engine test, None for a name the engine does not have
        (a Python-side measurement such as tire-sweep, or a test of another version)."""
        info = self.tests.get(name)
        return info.kind if info else None

    def names(self, *kinds: str) -> list[str]:
        return [t.name for t in self.tests.values() if t.kind in kinds]


_memory: dict[tuple, Catalogue] = {}


def catalogue(engine: str | None = None) -> Catalogue:
    """The catalogue of ENGINE (default: the engine rtgauge runs)."""
    path = os.path.realpath(engine or engine_path())
    try:
        st = os.stat(path)
    except OSError as e:
        raise UserError(f"cannot read the engine {path} ({e.strerror}); reinstall rtgauge or set RTGAUGE_ENGINE.")
    key = (path, st.st_mtime_ns, st.st_size)
    cat = _memory.get(key)
    if cat is None:
        cat = _memory[key] = _parse(_cached_document(path, key), path)
    return cat


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rtgauge"


def _cached_document(path: str, key: tuple) -> dict:
    digest = hashlib.sha256(repr(key).encode()).hexdigest()[:24]
    file = cache_dir() / f"catalogue-{digest}.json"
    try:
        doc = json.loads(file.read_text())
        if doc.get("schema") == CATALOGUE_SCHEMA and isinstance(doc.get("tests"), list):
            return doc
    except (OSError, ValueError):
        pass
    doc = _ask_engine(path)
    try:      # a cache that cannot be written only costs the next run one engine call
        file.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=file.parent, delete=False, suffix=".tmp") as f:
            json.dump(doc, f)
        os.replace(f.name, file)
    except OSError:
        pass
    return doc


def _ask_engine(path: str) -> dict:
    try:
        p = subprocess.run([path, "--list", "--json"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise UserError(f"the engine {path} could not list its tests ({e}); rebuild it or set RTGAUGE_ENGINE.")
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        doc = None
    if p.returncode != 0 or not isinstance(doc, dict) or doc.get("schema") != CATALOGUE_SCHEMA:
        raise UserError(f"the engine {path} does not describe its tests (`--list --json` failed); "
                        "it is older than this rtgauge: rebuild it or set RTGAUGE_ENGINE to a current one.")
    return doc


def _parse(doc: dict, path: str) -> Catalogue:
    try:
        tests = {}
        for t in doc["tests"]:
            options = {o["name"]: Option(o["name"], o["type"], o["default"], o["min"], o["max"],
                                         tuple(o["choices"]) if o["choices"] is not None else None, o["help"])
                       for o in t["options"]}
            metrics = {m["name"]: Metric(m["name"], m["kind"], m["unit"], bool(m["per_thread"]),
                                         bool(m["conditional"]), m["help"]) for m in t["metrics"]}
            a = t["availability"]
            tests[t["name"]] = TestInfo(t["name"], t["kind"], t["summary"], bool(a["available"]), a["reason"],
                                        options, metrics)
        return Catalogue(dict(doc["kinds"]), tests)
    except (KeyError, TypeError) as e:
        raise UserError(f"the engine {path} printed a catalogue rtgauge cannot read (missing {e}); "
                        "rebuild the engine from this rtgauge's sources.")


# -- options -----------------------------------------------------------------------------

def check_options(info: TestInfo, options: dict[str, object], where: str) -> None:
    """Every option of a profile job (name -> TOML value) is one the test takes, of
    its type, within its range or choices; a UserError sentence otherwise. What the
    catalogue cannot express (one option against another) the engine's --dry-run checks."""
    for name, value in options.items():
        opt = info.options.get(name)
        if opt is None:
            raise UserError(f"{where}: the {info.name} test has no option {name!r}; "
                            f"it takes {', '.join(info.options)}.")
        check_value(opt, value, f"{where}: --{name}")


def check_value(opt: Option, value: object, what: str) -> None:
    """VALUE fits OPT (its type, range, choices); WHAT names it in the sentence."""
    if opt.type == "flag":
        if not isinstance(value, bool):
            raise UserError(f"{what} is a flag; write true or false.")
        return
    if opt.type in ("int", "num"):
        number = _number(value, integer=opt.type == "int")
        if number is None:
            kind = "an integer" if opt.type == "int" else "a number"
            raise UserError(f"{what} {value!r} is not {kind}; give {kind} in {opt.range_text()}.")
        if not (opt.min <= number <= opt.max):
            raise UserError(f"{what} {_fmt(number)} is out of range {opt.range_text()}; "
                            "choose a value in that range.")
        return
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise UserError(f"{what} needs a value, not {value!r}.")
    if opt.type == "choice" and str(value) not in (opt.choices or ()):
        raise UserError(f"{what} {value!r} is not one of {', '.join(opt.choices or ())}; choose one of them.")


def within(opt: Option, value: object) -> bool:
    """VALUE fits OPT, as check_value decides, without a sentence."""
    try:
        check_value(opt, value, "")
    except UserError:
        return False
    return True


def _number(value: object, integer: bool) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if not isinstance(value, (int, float)) or value != value:
        return None
    if integer and float(value) != int(value):
        return None
    return value


def _fmt(v: object) -> str:
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    return str(v)
