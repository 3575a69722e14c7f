"""Commands load at dispatch: `rtgauge --help`, `--version` and a mistyped command are
answered from the registry (rtgauge/cli/__init__.py) and load no command's parser or
implementation and none of the heavy libraries (numpy, scipy, SQLAlchemy, jsonschema,
rich, and the optional asyncssh, labgrid, psycopg); a command's own --help and its usage
errors load its parser module (rtgauge/cli/parsers/NAME.py) and no implementation (no
registry handler's module) nor any heavy library; the implementation loads at dispatch.
Structural, not timed (bench/startup.py times it): the modules present in sys.modules
after the command, in a fresh interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("numpy", "scipy", "sqlalchemy", "jsonschema", "rich", "asyncssh", "labgrid", "psycopg")

# `rtgauge engine ...` and `rtgauge hil ...` hand the rest of the line on unparsed (the
# engine's own help, hil.command's), so their implementation loads at once; `engine
# --help` execs the engine and is not probed. hil's command (rtgauge/hil/command.py,
# outside the command line) parses and loads what a mode does (rtgauge/hil/actions.py)
# only at dispatch, so its --help loads nothing heavy either.
PASSTHROUGH = {"engine", "hil"}
KNOWN_HEAVY: dict[str, set] = {}

PROBE = """
import json, os, sys
import rtgauge.cli as cli
swap = os.environ.get("PROBE_PARSER")          # NAME=MODULE: that command's parser replaced
if swap:
    name, module = swap.split("=")
    cli.COMMANDS = tuple(c._replace(parser=module) if c.name == name else c for c in cli.COMMANDS)
try:
    cli.main(sys.argv[1:])
except SystemExit:
    pass
sys.stdout = sys.__stdout__
print(json.dumps(sorted(sys.modules)))
"""


def loaded(*args: str, tmp: Path, swap: str = "", path: Path | None = None) -> set[str]:
    """Every module in sys.modules after `rtgauge ARGS` in a fresh interpreter (with swap,
    NAME=MODULE, that command's parser module replaced; path goes on sys.path first)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(str(p) for p in (path, ROOT) if p),
               XDG_DATA_HOME=str(tmp), XDG_CONFIG_HOME=str(tmp), PROBE_PARSER=swap)
    p = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=120,
                       env=env, cwd=tmp)
    assert p.stdout.strip(), p.stderr[-2000:]
    return set(json.loads(p.stdout.strip().splitlines()[-1]))


def heavy(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules} & set(HEAVY)


def parser_modules(modules: set[str]) -> set[str]:
    from rtgauge.cli import COMMANDS
    return modules & {c.parser for c in COMMANDS}


def handler_modules(modules: set[str]) -> set[str]:
    """The implementations' modules (the registry's handlers) among modules."""
    from rtgauge.cli import COMMANDS
    return modules & {c.handler.partition(":")[0] for c in COMMANDS}


def help_problems(command: str, modules: set[str]) -> list[str]:
    """What a command's --help or usage error loaded that it must not: a heavy library,
    an implementation (a handler's module), another command's parser."""
    from rtgauge.cli import COMMANDS
    line = next(c for c in COMMANDS if c.name == command)
    problems = []
    if heavy(modules) - KNOWN_HEAVY.get(command, set()):
        problems.append(f"heavy libraries {sorted(heavy(modules))}")
    implementations = handler_modules(modules) - ({line.handler.partition(":")[0]} if command in PASSTHROUGH else set())
    if implementations:
        problems.append(f"implementations {sorted(implementations)}")
    parser = set() if command in PASSTHROUGH else {line.parser}       # a passthrough parses nothing itself
    if parser_modules(modules) != parser:
        problems.append(f"parser modules {sorted(parser_modules(modules))}, not {sorted(parser)}")
    return problems


def test_the_overview_and_a_mistyped_command_load_no_command(tmp_path):
    for args in (["--help"], ["-h"], ["--version"], ["shwo"], ["--jsn"], []):
        mods = loaded(*args, tmp=tmp_path)
        assert not heavy(mods), (args, heavy(mods))
        assert not parser_modules(mods) and not handler_modules(mods), (args, parser_modules(mods))


def help_cases() -> list[list[str]]:
    """Each command's and subcommand's --help (found from the parser, so a new one is
    covered the day it is added) and some usage errors; not `engine --help` (it execs)."""
    from rtgauge.cli import build_parser, subcommand_parsers
    cases = [[*path, "--help"] for path, _ in subcommand_parsers(build_parser()) if path[0] != "engine"]
    return cases + [["show", "--jsn"], ["run", "--rounds", "x"], ["lab", "run"], ["compare"], ["pwcet", "-x"]]


def test_a_command_help_loads_its_parser_alone(tmp_path):
    """A command's --help (every subcommand's too) and its usage errors load the
    command's parser module, the one the registry names, and no implementation: no
    handler's module, no numpy, scipy, SQLAlchemy, rich, ..."""
    cases = help_cases()
    assert {c[0] for c in cases} >= {"run", "show", "compare", "pwcet", "import", "lab", "report"}
    found = {tuple(args): help_problems(args[0], loaded(*args, tmp=tmp_path)) for args in cases}
    assert not any(found.values()), {a: p for a, p in found.items() if p}
    for command, libraries in KNOWN_HEAVY.items():
        assert heavy(loaded(command, "--help", tmp=tmp_path)) >= libraries, \
            f"{command} --help no longer loads {libraries}: remove it from KNOWN_HEAVY"


def test_the_check_fails_a_parser_that_imports_its_implementation(tmp_path):
    """The broken way, an implementation imported at the top of the parser's module (as
    when register() lived in the command's module), fails the check; the real parser,
    probed the same way, passes it."""
    (tmp_path / "broken_show_parser.py").write_text(
        "from rtgauge.cli.show import show                  # the implementation, at the top\n"
        "from rtgauge.cli.parsers.show import register      # the same options and help\n")
    mods = loaded("show", "--help", tmp=tmp_path, swap="show=broken_show_parser", path=tmp_path)
    assert "broken_show_parser" in mods
    problems = help_problems("show", mods)
    assert any(p.startswith("heavy libraries") for p in problems)
    assert "implementations ['rtgauge.cli.show']" in problems
    assert help_problems("show", loaded("show", "--help", tmp=tmp_path,
                                        swap="show=rtgauge.cli.parsers.show")) == []


def test_every_handler_is_a_function_of_its_implementation():
    """Each registry line's handler resolves to a function of the module it names, and
    that module is not its parser's."""
    from rtgauge.cli import COMMANDS, handler
    for c in COMMANDS:
        module, _, function = c.handler.partition(":")
        func = handler(c.name)
        assert callable(func) and func.__module__ == module and func.__name__ == function, c
        assert module != c.parser and c.parser.startswith("rtgauge.cli.parsers."), c


def test_the_registry_line_is_the_command_help():
    """`rtgauge --help` reads the registry's lines; each is the help its parser registers,
    so the overview is the same whether the commands are loaded or not."""
    from rtgauge.cli import COMMAND_NAMES, build_parser, subcommand_parsers
    full = build_parser()
    assert tuple(path[0] for path, _ in subcommand_parsers(full) if len(path) == 1) == COMMAND_NAMES
    assert build_parser(loaded=()).format_help() == full.format_help()


def test_dispatch_loads_the_implementation(tmp_path):
    """The probe sees what a command that acts loads: `show` with a database dispatches to
    its handler, whose module and SQLAlchemy are then loaded."""
    db = tmp_path / "r.db"
    from rtgauge.store import open_store
    open_store(str(db)).close()
    mods = loaded("show", "--db", str(db), tmp=tmp_path)
    assert "sqlalchemy" in mods and handler_modules(mods) == {"rtgauge.cli.show"}
