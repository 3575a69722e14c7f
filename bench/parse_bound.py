"""Peak resident memory of reading hostile JSON at the readers' caps
(`python3 bench/parse_bound.py`).

Each shape is the worst of its kind for Python's objects per byte of text (empty
objects, empty arrays, one-key objects, numbers, a string of 4-byte characters), made
as large as the cost bound lets through (rtgauge/store/validate.py json_cost: just under
the budget, so it is parsed) and just over it (refused before it is parsed). A board's
document goes through checked_document (parse, schema, values: what `run --target`
does with a board's doc.json) in a child process; an import through `rtgauge import
FILE`. The peak resident set is the child's ru_maxrss from wait4. Targets: a board's
document under the host's 512 MB (docs/design.md "Bounded reads"), an import under
MEMORY_BOUND_TEXT (docs/store.md "Bounds"). The section "## Hostile input at the
readers' caps" of docs/performance.md is rewritten unless --no-write."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perfdoc import load_text, write_section  # noqa: E402
from rtgauge.store import validate  # noqa: E402

SECTION = "Hostile input at the readers' caps"
HOST_BOUND_MB = 512
HEAD = b'{"schema":1,"test":"latency","params":{"x":['
TAIL = b"0]}}"
SHAPES = {
    "empty objects `{}`": b"{},",
    "empty arrays `[]`": b"[],",
    "one-key objects `{\"a\":0}`": b'{"a":0},',
    "integers `123456789`": b"123456789,",
    "floats `1e1`": b"1e1,",
}
WIDE = "\U0001F600".encode()

CHILD = """
import sys
sys.path.insert(0, {root!r})
from rtgauge.plan import Job
from rtgauge.plan.execute import checked_document
data = open(sys.argv[1], "rb").read()
doc = checked_document(Job(name="lat", tool="engine", test="latency", condition="idle"), data, "doc", 0, False)
print("accepted" if doc.get("ok") is not False else "refused: " + (doc.get("error") or "")[:80])
"""


def shaped(unit: bytes, n: int) -> bytes:
    if unit == WIDE:
        return b'{"schema":1,"test":"latency","error":"' + WIDE * n + b'"}'
    return HEAD + unit * n + TAIL


def largest(unit: bytes, budget: int, size_max: int) -> int:
    """The most units whose document costs at most `budget` and is at most size_max bytes."""
    lo, hi = 1, size_max // len(unit)
    if validate.json_cost(shaped(unit, hi)).memory <= budget:
        return hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if validate.json_cost(shaped(unit, mid)).memory <= budget else (lo, mid)
    return lo


def peak(argv: list[str]) -> tuple[float, str]:
    p = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    _, status, usage = os.wait4(p.pid, 0)
    out = (p.stdout.read() + p.stderr.read()).decode(errors="replace").strip().splitlines()
    return usage.ru_maxrss / 1024, (out[-1] if out else f"exit {os.waitstatus_to_exitcode(status)}")[:90]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args()
    rows = []
    shapes = dict(SHAPES, **{"a string of U+1F600 (4 bytes a character)": WIDE})
    with tempfile.TemporaryDirectory(prefix="rtgauge-bench-parse-") as tmp:
        path = Path(tmp) / "doc.json"
        for reader, budget, size_max, argv in (
                ("board document", validate.DOCUMENT_PARSE_MAX, validate.DOCUMENT_MAX,
                 [sys.executable, "-c", CHILD.format(root=str(ROOT)), str(path)]),
                ("import", validate.IMPORT_PARSE_MAX, validate.FILE_MAX,
                 [sys.executable, "-m", "rtgauge", "import", str(path), "--db", str(Path(tmp) / "db.sqlite")])):
            for name, unit in shapes.items():
                n = largest(unit, budget, size_max - 100)
                for label, count in (("at the bound", n), ("past it", min(n * 2, (size_max - 100) // len(unit)))):
                    if label == "past it" and count == n:
                        continue
                    data = shaped(unit, count)
                    cost = validate.json_cost(data)
                    path.write_bytes(data)
                    del data
                    rss, said = peak(argv)
                    (Path(tmp) / "db.sqlite").unlink(missing_ok=True)
                    rows.append((reader, name, label, path.stat().st_size / 2**20, cost.memory / 2**20, rss, said))
                    print(f"{reader:15s} {name:40s} {label:13s} {rows[-1][3]:6.1f} MiB cost {rows[-1][4]:7.0f} MiB "
                          f"peak {rss:6.0f} MiB  {said}", flush=True)
    body = [f"`python3 bench/parse_bound.py`, {datetime.now(timezone.utc):%Y-%m-%d}, this 2-vCPU VM ({load_text()}): "
            "hostile JSON made as large as the readers' cost bound lets through (rtgauge/store/validate.py json_cost, "
            f"budgets DOCUMENT_PARSE_MAX {validate.DOCUMENT_PARSE_MAX // 2**20} MiB for a board's document, "
            f"IMPORT_PARSE_MAX {validate.IMPORT_PARSE_MAX // 2**20} MiB for an import; files at most "
            f"{validate.FILE_MAX // 2**20} MiB) and twice that (refused before it is parsed); peak resident set of "
            "the child from wait4. A board's document goes through checked_document (what `run --target` does with "
            "a board's doc.json); an import is `rtgauge import FILE` into a new SQLite database.", "",
            "| reader | shape | size | file (MiB) | cost bound (MiB) | peak resident (MiB) | outcome |",
            "|---|---|---|---:|---:|---:|---|"]
    body += [f"| {r} | {n} | {lbl} | {mib:.1f} | {c:,.0f} | {rss:,.0f} | {said.replace('|', '/')} |"
             for r, n, lbl, mib, c, rss, said in rows]
    board = max(rss for r, *_, rss, _s in rows if r == "board document")
    imp = max(rss for r, *_, rss, _s in rows if r == "import")
    body += ["", f"Highest peak: a board's document {board:,.0f} MiB (target: under {HOST_BOUND_MB} MB), an import "
             f"{imp:,.0f} MiB (target: under {validate.MEMORY_BOUND_TEXT})."]
    text = "\n".join(body)
    print(text)
    if not a.no_write:
        write_section(SECTION, text)
    return 0 if board < HOST_BOUND_MB else 1


if __name__ == "__main__":
    sys.exit(main())
