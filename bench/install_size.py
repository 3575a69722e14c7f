"""Disk size of a fresh install (`python3 bench/install_size.py`): a new virtual
environment in a temporary directory, `pip install .` of this checkout into it (no
extras; `--extra test` and the like measure an extra too), then `du -sm` of the whole
environment. The target for the core install is at most 300 MB (docs/install.md,
docs/performance.md "Install size"). It also names the largest installed distributions,
checks that the core install holds neither statsmodels nor pandas and that
`rtgauge --help` and the pWCET analysis run in it. pip fetches from the configured
index, so the machine needs it; the environment is removed afterwards. `--no-write`
leaves docs/performance.md as it is."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from perfdoc import load_text, write_section  # noqa: E402

TARGET_MB = 300
HEAVY = ("statsmodels", "pandas")
# Run in the new environment, from outside the source tree: the installed package must
# hold what these need.
SMOKE = """
import json, sys, numpy as np
from rtgauge.analysis import pwcet
rng = np.random.default_rng(1)
r = pwcet.analyse(20000 + 3000 * rng.gumbel(size=200), 1000, 1e-9)
print(json.dumps({"checks": [c.name for c in r.checks], "applicable": r.applicable}))
"""


def du_mb(path: Path) -> int:
    return int(subprocess.run(["du", "-sm", str(path)], capture_output=True, text=True, check=True).stdout.split()[0])


def distributions(python: Path) -> list[tuple[str, float]]:
    """(name, MB) of every installed distribution, from its RECORD, largest first."""
    code = ("import importlib.metadata as m, json, os\n"
            "out = {}\n"
            "for d in m.distributions():\n"
            "    s = 0\n"
            "    for f in d.files or []:\n"
            "        p = d.locate_file(f)\n"
            "        s += os.path.getsize(p) if os.path.isfile(p) else 0\n"
            "    out[d.metadata['Name']] = s\n"
            "print(json.dumps(out))")
    sizes = json.loads(subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True).stdout)
    return sorted(((k, v / 2 ** 20) for k, v in sizes.items()), key=lambda kv: -kv[1])


def measure(extra: str | None) -> dict:
    with tempfile.TemporaryDirectory(prefix="rtgauge-install-") as tmp:
        venv = Path(tmp) / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        python = venv / "bin" / "python"
        empty = du_mb(venv)
        target = f".[{extra}]" if extra else "."
        t0 = time.monotonic()
        subprocess.run([str(python), "-m", "pip", "install", "-q", target], cwd=ROOT, check=True)
        seconds = time.monotonic() - t0
        size = du_mb(venv)
        dists = distributions(python)
        names = {n.lower() for n, _ in dists}
        help_ok = subprocess.run([str(venv / "bin" / "rtgauge"), "--help"], cwd=tmp, capture_output=True).returncode == 0
        smoke = subprocess.run([str(python), "-c", SMOKE], cwd=tmp, capture_output=True, text=True)
        return {"target": target, "mb": size, "empty_venv_mb": empty, "seconds": seconds, "distributions": dists,
                "heavy": [h for h in HEAVY if h in names], "help_ok": help_ok,
                "smoke": smoke.stdout.strip() if smoke.returncode == 0 else smoke.stderr.strip().splitlines()[-1:],
                "python": subprocess.run([str(python), "-c", "import sys; print(sys.version.split()[0])"],
                                         capture_output=True, text=True).stdout.strip()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--extra", action="append", default=[],
                    help="also measure `pip install .[EXTRA]` (repeatable: test, all, ssh, ...)")
    ap.add_argument("--no-write", action="store_true", help="print only; leave docs/performance.md as it is")
    args = ap.parse_args()
    results = [measure(None)] + [measure(e) for e in args.extra]
    for r in results:
        top = ", ".join(f"{n} {mb:.0f}" for n, mb in r["distributions"][:8])
        print(f"pip install {r['target']}: {r['mb']} MB (an empty venv {r['empty_venv_mb']} MB), "
              f"{r['seconds']:.0f} s; largest (MB): {top}")
    core = results[0]
    print(f"core: statsmodels/pandas present: {core['heavy'] or 'neither'}; rtgauge --help "
          f"{'ran' if core['help_ok'] else 'FAILED'}; pWCET in the venv: {core['smoke']}")
    ok = core["mb"] <= TARGET_MB and not core["heavy"] and core["help_ok"] and isinstance(core["smoke"], str)
    print(f"target: core install at most {TARGET_MB} MB: {'met' if ok else 'NOT met'}")
    if not args.no_write:
        rows = "\n".join(
            f"| `pip install {r['target']}` | {r['mb']} | "
            + ", ".join(f"{n} {mb:.0f}" for n, mb in r["distributions"][:6]) + " |" for r in results)
        write_section("Install size", f"""
Command: `python3 bench/install_size.py{''.join(' --extra ' + e for e in args.extra)}` (a new venv in a
temporary directory, `pip install` of this checkout, `du -sm` of the venv; Python {core['python']}),
{date.today().isoformat()}, {load_text()}. Target: the core install at most {TARGET_MB} MB
(docs/install.md). An empty venv is {core['empty_venv_mb']} MB of it (pip and setuptools). Before
statsmodels and pandas left the core (31bdb2e, the same way by hand) the core install was 456 MB.

| install | MB | largest distributions (MB) |
|---|---:|---|
{rows}

The core install holds {'neither statsmodels nor pandas' if not core['heavy'] else ', '.join(core['heavy'])};
`rtgauge --help` and the pWCET analysis (its independence check is rtgauge/analysis/pwcet/autocorr.py) ran in
it. Target {'met' if ok else 'NOT met'}.
""")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
