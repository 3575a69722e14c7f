"""The golden outputs: what `show`, `show --json`, `compare` (text and --json) and the
HTML report print for two stored runs, byte for byte against tests/golden/.

The runs are real engine documents (tests/data/golden/run-a and run-b: latency under
two condition names and the priority-inheritance behaviour test, made once by the
engine with fixed inputs, see tests/data/golden/README.md), stored with `rtgauge
import DIR` into a fresh database. Restructuring the code (moving a module, changing
how the store hands out a run) must change none of these outputs; a commit that
changes what is shown on purpose regenerates them with

    RTGAUGE_GOLDEN_UPDATE=1 .venv/bin/python -m pytest -q tests/test_golden.py

and the diff of tests/golden/ shows what a user now sees. Only the times of day
(the import's and the report's own: see TIME) and the temporary directory's path are
normalised."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "golden"
GOLDEN = HERE / "golden"
UPDATE = os.environ.get("RTGAUGE_GOLDEN_UPDATE") == "1"

# (golden file, the command's arguments after `rtgauge`); RUN-A and RUN-B are the ids
CASES = [
    ("show-list.tsv", ["show", "--format", "tsv"]),     # its title names the database
    ("show-run-a.txt", ["show", "1", "--format", "table"]),
    ("show-run-b.tsv", ["show", "2", "--format", "tsv"]),
    ("show-run-a.json", ["show", "1", "--json"]),
    ("compare.txt", ["compare", "1", "2", "--all", "--format", "table"]),   # drawn (piped: TSV)
    ("compare.json", ["compare", "1", "2", "--json"]),
]


def rtgauge(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    # the checkout's package, run in CWD where the database and the imported directories
    # have the same relative names whoever runs the test; a fixed terminal width and
    # time zone, so rich's tables and local times do not depend on who runs it
    env = dict(os.environ, PYTHONPATH=str(HERE.parent), COLUMNS="140", LINES="50", TZ="UTC", NO_COLOR="1",
               TERM="dumb", LC_ALL="C.UTF-8")
    from conftest import rtgauge as cli
    return cli(*args, env_full=env, cwd=cwd, timeout=300)


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> tuple[Path, Path]:
    work = tmp_path_factory.mktemp("golden")
    for name in ("run-a", "run-b"):
        shutil.copytree(DATA / name, work / name)
        p = rtgauge("import", name, "--db", "results.db", cwd=work)
        assert p.returncode == 0, p.stderr
    return work, "results.db"


# An imported engine document carries no start time, so a run's start is the time of
# the import, and the report says when it was made: the only parts that differ between
# two runs of this test (same length, so no table is laid out differently).
TIME = re.compile(r"\b\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(\+00:00|Z)?")


def normalised(text: str, work: Path) -> str:
    """The times of day zeroed; the temporary directory's path (in the list's title,
    which is not laid out in a table) as <WORK>."""
    return TIME.sub(lambda m: re.sub(r"\d", "0", m.group(0)), text).replace(str(work.resolve()), "<WORK>")


def check(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.is_file(), f"{path} is missing; make it with RTGAUGE_GOLDEN_UPDATE=1"
    expected = path.read_text(encoding="utf-8")
    assert text == expected, f"{name} differs from tests/golden/{name}"


@pytest.mark.parametrize("name,args", CASES, ids=[c[0] for c in CASES])
def test_output_is_the_golden_one(stored, name, args):
    work, db = stored
    p = rtgauge(*args, "--db", db, cwd=work)
    assert p.returncode == 0, p.stderr
    check(name, normalised(p.stdout, work))


def test_report_is_the_golden_one(stored):
    work, db = stored
    out = work / "report.html"
    p = rtgauge("report", "1", "2", "--db", db, "-o", "report.html", cwd=work)
    assert p.returncode == 0, p.stderr
    check("report.html", normalised(out.read_text(encoding="utf-8"), work))


def test_the_check_sees_a_change(stored):
    """The comparison can fail: another run's output is not run A's golden file."""
    work, db = stored
    p = rtgauge("show", "2", "--format", "table", "--db", db, cwd=work)
    assert p.returncode == 0
    if UPDATE:
        pytest.skip("the golden files are being written")
    with pytest.raises(AssertionError, match="differs"):
        check("show-run-a.txt", normalised(p.stdout, work))
