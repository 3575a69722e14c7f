"""Adding a tool is one file and one table line (docs/design.md, "Tool adapters"), proved
as bench/addtest.py proves it for an engine test: in a scratch copy of the package, a
sixth adapter, for oslat (rt-tests: a busy loop per CPU and the gaps in it), is written
as rtgauge/tools/oslat.py plus its line in rtgauge/tools/__init__.py's table, and then
both `rtgauge import` (oslat's real --json output, tests/data/tools/oslat.json) and a
cross-check run (plan/execute.py's job_command and read_document, oslat really running
for a second) use it, and a profile may name it in `cross_check`: `rtgauge run` plans the
cross-check where oslat is installed and drops it with the adapter's sentence where it is
not (plan/checks.py prepare_jobs asks the adapter). Without the adapter the same file is
refused (it is rt-tests JSON that cyclictest's reader does not take) and the profile too,
so the test can fail.

hwlatdetect and rtla osnoise need the hwlat and osnoise tracers, which this machine's
kernel lacks (available_tracers: blk function nop); oslat runs anywhere."""

from __future__ import annotations

import difflib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rtgauge.store import open_store

ROOT = Path(__file__).resolve().parent.parent
OSLAT_JSON = ROOT / "tests" / "data" / "tools" / "oslat.json"

ADAPTER = '''"""oslat (rt-tests) --json output as the engine contract: a busy-looping thread per CPU
and the gaps between its loop's turns (OS noise), `os_latency#N` per thread and
`os_latency` merged, never `ti` (not a wake-up). Its buckets are whole µs, each labelled by
its upper edge; the last (32, or -b N) counts every longer gap, so it is read as
overflows: a percentile there is the max, an upper bound."""

from __future__ import annotations

import math
import shlex

from rtgauge.errors import UserError
from rtgauge.records import engine_document
from rtgauge.tools import cyclictest, histogram
from rtgauge.tools.adapter import Adapter, Found, Imported, foreign_job


def words(raw) -> list[str]:
    try:
        return shlex.split(str(raw.get("cmdline:") or ""))
    except ValueError:
        return []


def is_oslat(raw) -> bool:
    return (isinstance(raw, dict) and isinstance(raw.get("thread"), dict) and bool(words(raw))
            and words(raw)[0].rsplit("/", 1)[-1] == "oslat")


def sniff(found: Found) -> bool:
    return found.is_json and is_oslat(found.data)


def buckets(raw) -> int:
    w = words(raw)
    for i, word in enumerate(w):
        if word in ("-b", "--bucket-size") and i + 1 < len(w):
            return int(w[i + 1])
        if word.startswith("--bucket-size="):
            return int(word.split("=", 1)[1])
    return 32


def to_document(raw, job=None, where="oslat's result", status=0, interrupted=False) -> dict:
    if not is_oslat(raw):
        raise UserError(f"{where} is not oslat's --json output")
    try:
        last = buckets(raw)
        metrics, threads, merged, over_all, total, weighted = {}, [], {}, 0, 0, 0.0
        lows, highs = [], []
        for key in sorted(raw["thread"], key=int):
            t = raw["thread"][key]
            counts = {int(b): int(c) for b, c in t["histogram"].items() if int(c)}
            over = counts.pop(last, 0)
            n = sum(counts.values()) + over
            metrics[f"os_latency#{key}"] = histogram.distribution(
                counts, n, over, t["min"] if n else None, t["avg"] if n else None, t["max"] if n else None,
                overflow_from=last)
            for b, c in counts.items():
                merged[b] = merged.get(b, 0) + c
            over_all, total, weighted = over_all + over, total + n, weighted + float(t["avg"]) * n
            if n:
                lows.append(t["min"])
                highs.append(t["max"])
            threads.append({"index": int(key), "cpu": t.get("cpu")})
    except (ValueError, TypeError, KeyError, AttributeError):
        raise UserError(f"{where} is not shaped as oslat --json writes it") from None
    if total:
        metrics["os_latency"] = histogram.distribution(merged, total, over_all, min(lows), weighted / total,
                                                       max(highs), overflow_from=last)
    ok = bool(total) and (status == 0 or interrupted)
    return engine_document("latency", tool="oslat", ok=ok, interrupted=interrupted,
                           error=None if ok else f"oslat exited with status {status} and counted {total} loops",
                           params={"threads": len(threads), "buckets": last},
                           env={"tool_version": raw.get("rt_test_version:"), "cmdline": raw.get("cmdline:"),
                                "resolution_ns": 1000, "threads": threads},
                           metrics=metrics)


def read(found: Found, condition: str) -> Imported:
    from rtgauge.store import validate
    where = str(found.path)
    doc = to_document(found.data, where=where)
    validate.check_engine_document(doc, where)
    facts = {**cyclictest.facts_of_json(found.data),
             "facts_source": "oslat --json sysinfo (imported; rtgauge doctor did not run there)"}
    return Imported("oslat --json", facts, [(foreign_job("oslat", condition, "oslat", words(found.data)[:200]), doc)],
                    f"rt-tests {found.data.get('rt_test_version:') or '?'}")


def command(job, out_path: str, extra=()) -> list[str]:
    seconds = max(1, math.ceil(float(job.options.get("duration-s", 10)) - 1e-9))
    policy = str(job.options.get("policy", "fifo"))
    rtprio = ["--rtprio", str(int(job.options.get("priority", 80)))] if policy in ("fifo", "rr") else []
    return ["oslat", "--cpu-list", ",".join(map(str, job.cpus)), "--duration", str(seconds), *rtprio,
            f"--json={out_path}", "--quiet"]


ADAPTER = Adapter("oslat", sniff, read, command=command, to_document=to_document)
'''

TABLE_LINE = '    "oslat",            # oslat --json: before cyclictest, whose reader would take its rt-tests JSON\n'


def scratch_copy(tmp_path: Path) -> Path:
    """The package copied, then the adapter added: its file and its table line."""
    copy = tmp_path / "tree"
    shutil.copytree(ROOT / "rtgauge", copy / "rtgauge", ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "rtgauge" / "tools" / "oslat.py").write_text(ADAPTER)
    table = copy / "rtgauge" / "tools" / "__init__.py"
    lines = table.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.lstrip().startswith('"cyclictest",'))
    table.write_text("".join(lines[:at] + [TABLE_LINE] + lines[at:]))
    return copy


def python(tree: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """A fresh interpreter whose rtgauge is the given tree's."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=tree)


def test_the_copy_differs_by_one_file_and_one_table_line(tmp_path):
    copy = scratch_copy(tmp_path)
    mine = {p.relative_to(ROOT / "rtgauge") for p in (ROOT / "rtgauge").rglob("*.py")}
    theirs = {p.relative_to(copy / "rtgauge") for p in (copy / "rtgauge").rglob("*.py")}
    assert theirs - mine == {Path("tools/oslat.py")} and not mine - theirs
    changed = [p for p in mine if (ROOT / "rtgauge" / p).read_bytes() != (copy / "rtgauge" / p).read_bytes()]
    assert changed == [Path("tools/__init__.py")]
    diff = [line for line in difflib.unified_diff((ROOT / "rtgauge/tools/__init__.py").read_text().splitlines(),
                                                   (copy / "rtgauge/tools/__init__.py").read_text().splitlines(),
                                                   lineterm="", n=0)
            if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert diff == ["+" + TABLE_LINE.rstrip("\n")]


def test_import_reads_oslat_through_the_added_adapter_and_not_without_it(tmp_path):
    data = json.loads(OSLAT_JSON.read_text())
    hist = {int(b): c for b, c in data["thread"]["0"]["histogram"].items()}
    db = f"sqlite:///{tmp_path / 'r.db'}"
    # the tree as it is: no adapter takes the file (cyclictest's reader refuses rt-tests
    # JSON without its cycles), one sentence and nothing stored
    before = python(ROOT, "-m", "rtgauge", "import", str(OSLAT_JSON), "--db", db)
    assert before.returncode != 0 and "cyclictest --json" in before.stderr and "Traceback" not in before.stderr
    copy = scratch_copy(tmp_path)
    p = python(copy, "-m", "rtgauge", "import", str(OSLAT_JSON), "--db", db, "--condition", "stress-cpu")
    assert p.returncode == 0, p.stderr
    with open_store(db) as store:
        run = store.get_run(store.latest_run_id()).to_dict()
    [m] = run["measurements"]
    assert (m["tool"], m["condition"], m["reference"]) == ("oslat", "stress-cpu", True)
    assert run["origin"]["format"] == "oslat --json" and run["system"]["hostname"] == data["sysinfo"]["nodename"]
    total = m["metrics"]["os_latency"]
    # the figures the file holds: every loop counted, the last bucket (32: "including
    # overflows") as overflows, min and max exact from the file, in ns
    assert total["count"] == sum(hist.values())
    assert total["histogram"]["overflow"] == hist[32] and total["histogram"]["overflow_from_ns"] == 32_000
    assert (total["min"], total["max"]) == (data["thread"]["0"]["min"] * 1000, data["thread"]["0"]["max"] * 1000)
    assert total["p50"] == 1000          # nearly every turn of the loop within its first µs
    assert "ti" not in m["metrics"]
    # the same file again: recognised, not stored twice
    again = python(copy, "-m", "rtgauge", "import", str(OSLAT_JSON), "--db", db, "--condition", "stress-cpu")
    assert again.returncode == 0 and "imported before" in again.stdout


CROSS_CHECK = r'''
import json, sys
from pathlib import Path
import subprocess
from rtgauge.plan import Job
from rtgauge.plan.execute import job_command, read_document
out = Path(sys.argv[1])
job = Job("latency@idle/oslat", "oslat", "latency", "idle", {"duration-s": 1, "policy": "other"},
          [int(sys.argv[2])], cross_check=True)
cmd = job_command(job, str(out))
p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
doc = read_document(job, out, p.returncode, False, p.stderr)
print(json.dumps({"command": cmd, "document": doc}))
'''


@pytest.mark.skipif(shutil.which("oslat") is None or os.geteuid() != 0, reason="oslat (rt-tests) runs as root")
def test_a_cross_check_runs_oslat_through_the_added_adapter(tmp_path):
    copy = scratch_copy(tmp_path)
    cpu = max(os.sched_getaffinity(0))
    p = python(copy, "-c", CROSS_CHECK, str(tmp_path / "result.json"), str(cpu), timeout=120)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["command"][:3] == ["oslat", "--cpu-list", str(cpu)] and "--rtprio" not in out["command"]
    doc = out["document"]
    assert doc["ok"] is True and doc["tool"] == "oslat", doc.get("error")
    m = doc["metrics"]["os_latency"]
    assert m["count"] > 0 and m["min"] >= 1000 and m["max"] >= m["p50"] >= m["min"]
    # the tree as it is has no oslat adapter: the same job has no command
    q = python(ROOT, "-c", CROSS_CHECK, str(tmp_path / "r2.json"), str(cpu))
    assert q.returncode != 0 and "unknown tool oslat" in q.stderr


PROFILE = """name = "oslat-cross"
[[jobs]]
name = "latency"
test = "latency"
conditions = ["idle"]
cross_check = ["oslat"]
[jobs.options]
duration-s = 1
policy = "other"
"""

PLAN = r"""
import json, sys
from types import SimpleNamespace
from rich.console import Console
from rtgauge.plan.checks import prepare_jobs
from rtgauge.errors import UserError
from rtgauge.profiles import parse_profile
console = Console(file=sys.stderr, width=400)
try:
    profile = parse_profile(sys.argv[1], "oslat-cross.toml")
except UserError as e:
    print(e, file=sys.stderr)
    sys.exit(2)
jobs = prepare_jobs(console, profile, SimpleNamespace(rounds=None, mount_tracefs=False, allow_fallback=False),
                    SimpleNamespace(duration_s=None, partition=None))
print(json.dumps([{"name": j.name, "tool": j.tool, "notes": j.notes} for j in jobs]))
"""


def plan(tree: Path, path: str) -> subprocess.CompletedProcess:
    """prepare_jobs of the profile in a fresh interpreter with the given PATH (the engine
    by its absolute path); nothing is measured."""
    from rtgauge.enginebin import engine_path
    env = dict(os.environ, PYTHONPATH=str(tree), PATH=path, RTGAUGE_ENGINE=str(engine_path()))
    return subprocess.run([sys.executable, "-c", PLAN, PROFILE], capture_output=True, text=True, timeout=120,
                          env=env, cwd=tree)


def test_a_profile_names_the_added_adapter_as_a_cross_check_and_its_availability_is_asked(tmp_path):
    # the tree as it is: the profile is refused, naming the cross-checks the table has
    before = plan(ROOT, os.environ["PATH"])
    assert before.returncode == 2 and "cross_check may list only cyclictest, rtla." in before.stderr, before.stderr
    copy = scratch_copy(tmp_path)
    # where oslat is not on the PATH: the adapter's sentence, the cross-check dropped and
    # the engine's measurement noting it
    empty = tmp_path / "bin"
    empty.mkdir()
    p = plan(copy, str(empty))
    assert p.returncode == 0, p.stderr
    assert "oslat is not installed: the oslat cross-check is skipped." in p.stderr
    assert json.loads(p.stdout) == [{"name": "latency@idle", "tool": "engine",
                                     "notes": ["the oslat cross-check was not run: oslat is not installed"]}]
    if shutil.which("oslat") is None:
        pytest.skip("oslat (rt-tests) is not installed here: the planned case needs it")
    # where it is installed: planned beside the engine's job, nothing noted
    q = plan(copy, os.environ["PATH"])
    assert q.returncode == 0, q.stderr
    assert json.loads(q.stdout) == [{"name": "latency@idle", "tool": "engine", "notes": []},
                                    {"name": "latency@idle/oslat", "tool": "oslat", "notes": []}]
