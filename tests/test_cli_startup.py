"""Commands load at dispatch: `rtgauge --help`, `--version` and a mistyped command are
answered from the registry (rtgauge/cli/__init__.py) and load no command module and none
of the heavy libraries (numpy, scipy, SQLAlchemy, jsonschema, rich, and the optional
asyncssh, labgrid, psycopg); a command, its own --help or its usage errors included,
loads its own module and no other command's. Structural, not timed (bench/startup.py
times it): the modules present in sys.modules after the command, in a fresh interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("numpy", "scipy", "sqlalchemy", "jsonschema", "rich", "asyncssh", "labgrid", "psycopg")

PROBE = """
import json, sys
from rtgauge.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
sys.stdout = sys.__stdout__
print(json.dumps(sorted(sys.modules)))
"""


def loaded(*args: str, tmp: Path) -> set[str]:
    """Every module in sys.modules after `rtgauge ARGS` in a fresh interpreter."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), XDG_DATA_HOME=str(tmp), XDG_CONFIG_HOME=str(tmp))
    p = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=120,
                       env=env, cwd=tmp)
    return set(json.loads(p.stdout.strip().splitlines()[-1]))


def heavy(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules} & set(HEAVY)


def command_modules(modules: set[str]) -> set[str]:
    from rtgauge.cli import COMMANDS
    return modules & {c.module for c in COMMANDS}


def test_the_overview_and_a_mistyped_command_load_no_command(tmp_path):
    for args in (["--help"], ["-h"], ["--version"], ["shwo"], ["--jsn"], []):
        mods = loaded(*args, tmp=tmp_path)
        assert not heavy(mods), (args, heavy(mods))
        assert not command_modules(mods), (args, command_modules(mods))


def test_a_command_loads_its_own_module_and_no_other(tmp_path):
    """Each command's --help (every subcommand's too), and a usage error, load the
    command's module: the one the registry names, alone of the command modules."""
    from rtgauge.cli import COMMANDS, build_parser, subcommand_parsers
    module = {c.name: c.module for c in COMMANDS}
    # `engine --help` is the engine's own help: the command execs the engine
    cases = [[*path, "--help"] for path, _ in subcommand_parsers(build_parser()) if path[0] != "engine"]
    cases += [["show", "--jsn"], ["run", "--rounds", "x"], ["lab", "run"]]
    for args in cases:
        assert command_modules(loaded(*args, tmp=tmp_path)) == {module[args[0]]}, args


def test_the_registry_line_is_the_command_help():
    """`rtgauge --help` reads the registry's lines; each is the help its module registers,
    so the overview is the same whether the commands are loaded or not."""
    from rtgauge.cli import COMMAND_NAMES, build_parser, subcommand_parsers
    full = build_parser()
    assert tuple(path[0] for path, _ in subcommand_parsers(full) if len(path) == 1) == COMMAND_NAMES
    assert build_parser(loaded=()).format_help() == full.format_help()


def test_the_probe_sees_a_heavy_import(tmp_path):
    """The check can fail: a command that does use the store loads SQLAlchemy, and it is seen."""
    db = tmp_path / "r.db"
    from rtgauge.store import open_store
    open_store(str(db)).close()
    assert "sqlalchemy" in loaded("show", "--db", str(db), tmp=tmp_path)
