"""The time to add an engine test, measured (`python3 bench/addtest.py`).

Follows docs/engine.md "Adding a test" in a scratch copy of the committed tree
(git archive into a temporary directory; the working tree is not touched): builds the
engine there, then adds a trivial test `getpid` (its file and its registry line),
rebuilds, and checks that the engine lists and runs it and that rtgauge validates a
profile job of it from the catalogue alone (an out-of-range option is refused with
the engine's own range). Then removes it again and checks it is gone. Reports the
files touched (git status of the scratch copy), the lines written and the rebuild
times. The section "## Adding a test" of docs/performance.md is rewritten unless
--no-write.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perfdoc import write_section  # noqa: E402

SECTION = "Adding a test"

TEST_C = """/* getpid: the time of one getpid() system call (bench/addtest.py's scratch test). */
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"
#include "json.h"
#include "test.h"

static const rtg_opt getpid_opts[] = {
    {"iterations", RTG_OPT_INT, "10000", 1, 10000000, NULL, "system calls to time"},
    {0},
};

static int getpid_run(const rtg_opts *o, rtg_result *res)
{
    int64_t n = rtg_opt_int(o, "iterations"), t0 = rtg_mono_ns();
    for (int64_t i = 0; i < n && !rtg_stop; i++)
        syscall(SYS_getpid);
    rtg_j_set(res->metrics, "call", rtg_j_scalar_int((rtg_mono_ns() - t0) / n, "ns"));
    return RTG_EXIT_OK;
}

static const rtg_metric getpid_metrics[] = {
    {"call", RTG_METRIC_SCALAR, "ns", 0, "mean time of one getpid() system call"},
    {0},
};

const rtg_test rtg_test_getpid = {
    .name = "getpid",
    .summary = "time of one getpid() system call",
    .kind = RTG_KIND_MICRO_PERFORMANCE,
    .opts = getpid_opts,
    .metrics = getpid_metrics,
    .run = getpid_run,
};
"""

PROFILE = """name = "scratch"
description = "bench/addtest.py"
[[jobs]]
name = "getpid"
test = "getpid"
conditions = ["idle"]
[jobs.options]
iterations = {iterations}
"""


def sh(cmd: list[str], cwd: Path, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=True, **kw)


def timed_build(tree: Path) -> float:
    t = time.monotonic()
    sh(["ninja", "-C", "build/engine"], tree)
    return time.monotonic() - t


def validate(tree: Path, engine: str, iterations: int) -> str:
    """'' when rtgauge accepts the profile job, else its one-sentence refusal."""
    prof = tree / f"p{iterations}.toml"
    prof.write_text(PROFILE.format(iterations=iterations))
    code = ("import sys\nfrom rtgauge.errors import UserError\nfrom rtgauge.profiles import load_profile\n"
            f"try:\n    load_profile({str(prof)!r})\nexcept UserError as e:\n    print(e)\n")
    env = dict(os.environ, RTGAUGE_ENGINE=engine, XDG_CACHE_HOME=str(tree / "cache"))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env=env, cwd=ROOT).stdout.strip()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-write", action="store_true", help="print only; leave docs/performance.md")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "tree"
        tree.mkdir()
        archive = subprocess.run(["git", "archive", "HEAD"], cwd=ROOT, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
        for cmd in (["git", "init", "-q"], ["git", "add", "-A"],
                    ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost", "commit", "-qm", "base"]):
            sh(cmd, tree)
        t = time.monotonic()
        sh(["meson", "setup", "build/engine", "engine"], tree)
        sh(["ninja", "-C", "build/engine"], tree)
        first_build = time.monotonic() - t
        engine = str(tree / "build/engine/src/rtgauge-engine")

        (tree / "engine/src/measurements/getpid.c").write_text(TEST_C)
        with open(tree / "engine/src/registry.h", "a") as f:
            f.write("X(getpid)\n")
        add_build = timed_build(tree)
        touched = sh(["git", "status", "--porcelain", "--", "engine", "rtgauge", "docs", "tests"], tree).stdout
        listing = json.loads(sh([engine, "--list", "--json"], tree).stdout)
        entry = next((t for t in listing["tests"] if t["name"] == "getpid"), None)
        doc = json.loads(sh([engine, "getpid", "--iterations", "1000"], tree).stdout)
        accepted, refused = validate(tree, engine, 500), validate(tree, engine, 0)
        ok = (entry is not None and entry["kind"] == "micro-performance" and doc["ok"]
              and doc["metrics"]["call"]["value"] > 0 and accepted == "" and "1..10000000" in refused)

        (tree / "engine/src/measurements/getpid.c").unlink()
        reg = tree / "engine/src/registry.h"
        reg.write_text(reg.read_text().replace("X(getpid)\n", ""))
        remove_build = timed_build(tree)
        gone = "getpid" not in sh([engine, "--list"], tree).stdout
        clean = sh(["git", "status", "--porcelain", "--", "engine", "rtgauge", "docs", "tests"], tree).stdout == ""

    files = [line[3:] for line in touched.splitlines()]
    lines = [
        f"`python3 bench/addtest.py` ({datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, {platform.node()}, "
        f"{os.cpu_count()} CPUs, shared with other work): docs/engine.md \"Adding a test\" followed in a "
        "scratch copy of the committed tree, with a trivial test `getpid` "
        f"({TEST_C.count(chr(10))} lines of C).",
        "",
        "| step | result |",
        "|---|---|",
        f"| files touched (besides its section in docs/engine.md) | {len(files)}: "
        + ", ".join(f"`{f}`" for f in files) + " |",
        "| Python files touched | " + str(sum(f.startswith("rtgauge/") for f in files)) + " |",
        f"| engine rebuild after adding it | {add_build:.1f} s (a first build of the tree: {first_build:.0f} s) |",
        f"| listed by `--list --json` with its kind, runs, emits its metric | {'yes' if ok else 'NO'} |",
        f"| rtgauge validates a profile job of it from the catalogue | "
        f"{'yes: `iterations = 0` is refused with the range 1..10000000' if ok else 'NO: ' + refused} |",
        f"| removed again (file and line): rebuild, gone from `--list`, tree clean | {remove_build:.1f} s, "
        f"{'yes' if gone and clean else 'NO'} |",
    ]
    body = "\n".join(lines)
    print(body)
    if not a.no_write:
        write_section(SECTION, body)
    return 0 if ok and gone and clean else 1


if __name__ == "__main__":
    sys.exit(main())
