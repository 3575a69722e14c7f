"""Start-up stays light: asking for help, or making a mistake on the command line, loads
none of the heavy libraries (numpy, scipy, SQLAlchemy, jsonschema, rich, and the
optional asyncssh, labgrid, psycopg). Structural, not timed (bench/startup.py times it):
the modules present in sys.modules after the command, in a fresh interpreter."""

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
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
"""


def loaded(*args: str, tmp: Path) -> set[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), XDG_DATA_HOME=str(tmp), XDG_CONFIG_HOME=str(tmp))
    p = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=120,
                       env=env, cwd=tmp)
    return set(json.loads(p.stdout.strip().splitlines()[-1]))


def test_help_and_usage_errors_load_no_heavy_library(tmp_path):
    from rtgauge.cli import build_parser, subcommand_parsers
    cases = [["--help"], ["--version"], ["shwo"], ["show", "--jsn"], ["run", "--rounds", "x"]]
    cases += [[*path, "--help"] for path, _ in subcommand_parsers(build_parser()) if path[0] not in ("engine",)]
    for args in cases:
        heavy = loaded(*args, tmp=tmp_path) & set(HEAVY)
        assert not heavy, (args, heavy)


def test_the_probe_sees_a_heavy_import(tmp_path):
    """The check can fail: a command that does use the store loads SQLAlchemy, and it is seen."""
    db = tmp_path / "r.db"
    from rtgauge.store import open_store
    open_store(str(db)).close()
    assert "sqlalchemy" in loaded("show", "--db", str(db), tmp=tmp_path)
