"""Time and peak resident memory of `rtgauge import` of a valid export, by size
(`python3 bench/import.py`).

The export is a real engine latency run whose per-window max series is lengthened to
reach each size (a long soak's shape: the series is what grows with a run's length).
Each size is imported `--rounds` times into a fresh SQLite database; the median wall
time and the median peak resident set (the child's ru_maxrss, from wait4) are reported,
with resident MiB per MiB of file, and the bound this gives at the import's size limit
(rtgauge/store/validate.py FILE_MAX). The section "## Import" of docs/performance.md is
rewritten unless --no-write."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perfdoc import write_section  # noqa: E402
from rtgauge.enginebin import engine_path  # noqa: E402
from rtgauge.store.validate import FILE_MAX  # noqa: E402

SECTION = "Import"


def make_export(d: Path, size_mib: float) -> Path:
    doc = d / "lat.json"
    subprocess.run([engine_path(), "latency", "--duration-s", "0.3", "--policy", "other", "--out", str(doc)],
                   check=True, capture_output=True, timeout=60)
    db = d / "src.db"
    rtgauge("import", str(doc), "--db", str(db))
    export = json.loads(rtgauge("export", "1", "--db", str(db)).stdout)
    series = export["run"]["measurements"][0]["document"]["metrics"]["ti_window_max"]
    base = len(json.dumps(export))
    per_value = len(json.dumps([123456789] * 1000)) / 1000
    series["max"] = [123456789] * max(1, int((size_mib * 1024**2 - base) / per_value))
    out = d / f"export-{size_mib:g}.json"
    out.write_text(json.dumps(export))
    return out


def rtgauge(*args: str) -> subprocess.CompletedProcess:
    p = subprocess.run([sys.executable, "-m", "rtgauge", *args], capture_output=True, text=True, cwd=ROOT,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=3600)
    if p.returncode != 0:
        raise SystemExit(f"rtgauge {' '.join(args)} failed: {p.stderr.strip()}")
    return p


def measure(path: Path, d: Path, i: int) -> tuple[float, float]:
    db = d / f"dst-{path.stem}-{i}.db"
    start = time.monotonic()
    p = subprocess.Popen([sys.executable, "-m", "rtgauge", "import", str(path), "--db", str(db)], cwd=ROOT,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)), stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    elapsed = time.monotonic() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"import of {path} failed: {p.stderr.read().decode().strip()}")
    db.unlink()
    return elapsed, usage.ru_maxrss / 1024      # KiB -> MiB


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes-mib", default="4,16,48", help="export sizes to import (MiB)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="rtgauge-bench-import-") as tmp:
        d = Path(tmp)
        for size in [float(x) for x in a.sizes_mib.split(",")]:
            path = make_export(d, size)
            mib = path.stat().st_size / 1024**2
            runs = [measure(path, d, i) for i in range(a.rounds)]
            t, rss = statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)
            rows.append((mib, t, rss))
            print(f"{mib:6.1f} MiB: {t:6.1f} s, {rss:7.0f} MiB resident ({rss / mib:4.1f} x the file)", flush=True)
    (m0, _, r0), (m1, _, r1) = rows[0], rows[-1]
    slope = (r1 - r0) / (m1 - m0) if m1 > m0 else r1 / m1
    bound = r0 + slope * (FILE_MAX / 1024**2 - m0)
    body = [f"`python3 bench/import.py --sizes-mib {a.sizes_mib} --rounds {a.rounds}`, "
            f"{datetime.now(timezone.utc):%Y-%m-%d}, this 2-vCPU VM (shared, loaded): median of {a.rounds} import(s) "
            "of a valid export (a latency run whose window-max series is lengthened) into a new SQLite database.", "",
            "| export (MiB) | time (s) | peak resident (MiB) | resident / file |", "|---:|---:|---:|---:|"]
    body += [f"| {m:.1f} | {t:.1f} | {r:.0f} | {r / m:.1f} |" for m, t, r in rows]
    body += ["", f"Resident memory grows by {slope:.1f} MiB per MiB of export; at the import's size limit "
             f"({FILE_MAX // 1024**2} MiB, rtgauge/store/validate.py FILE_MAX) that is about {bound:,.0f} MiB. "
             "A larger file is refused with one sentence before it is read; a process with less memory "
             "than the file needs gets one sentence, not a traceback."]
    text = "\n".join(body)
    print(text)
    if not a.no_write:
        write_section(SECTION, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
