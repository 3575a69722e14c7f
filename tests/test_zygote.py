"""The test zygote (tests/zygote.py) runs the command as a new interpreter would, with two
conditions on the product that this file checks: no module reads the environment when it
is imported (the zygote imported rtgauge before any test's environment existed: such a
value would be the zygote's, not the test's), and a child started with rtgauge_popen
behaves as subprocess.Popen's does (its pid is the command's, a signal reaches it, its
output and status come back)."""

from __future__ import annotations

import ast
import signal
import time
from pathlib import Path

from conftest import ROOT, rtgauge_popen
from readiness import status_cycles, wait_for


def env_read_at_import(path: Path) -> list[int]:
    """Lines of statements run at import (the module's own, a class body's) that read
    os.environ or call os.getenv."""
    found = []

    def visit(body):
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if isinstance(stmt, ast.ClassDef):
                visit(stmt.body)
                continue
            for node in ast.walk(stmt):
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                        and node.value.id == "os" and node.attr in ("environ", "getenv", "environb"):
                    found.append(node.lineno)
    visit(ast.parse(path.read_text()).body)
    return found


def test_no_module_reads_the_environment_when_imported():
    offenders = {str(p.relative_to(ROOT)): lines for p in sorted((ROOT / "rtgauge").rglob("*.py"))
                 if (lines := env_read_at_import(p))}
    assert not offenders, f"read the environment where it is used, not at import: {offenders}"


def test_the_scan_finds_a_read_at_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import os\nTIMEOUT = float(os.environ.get('X', '60'))\n\n"
                   "class C:\n    home = os.getenv('HOME')\n\n"
                   "def fine():\n    return os.environ.get('X')\n")
    assert env_read_at_import(bad) == [2, 5]


def test_a_popen_child_is_the_command_and_a_signal_reaches_it(tmp_path, engine_bin):
    import json
    import os
    env = dict(os.environ, PYTHONPATH=str(ROOT), RTGAUGE_ENGINE=engine_bin)
    # `rtgauge engine latency` execs the engine in its own process: for 30 s, unless a
    # SIGINT to the handle's pid stops it as Ctrl-C does
    status = tmp_path / "status.jsonl"
    p = rtgauge_popen("engine", "latency", "--duration-s", "30", "--policy", "other", "--no-mlock",
                      "--window-s", "0.1", "--status", str(status), env_full=env, cwd=tmp_path)
    started = time.monotonic()
    try:
        while b"rtgauge-engine" not in Path(f"/proc/{p.pid}/cmdline").read_bytes():
            assert p.poll() is None and time.monotonic() < started + 60, p.communicate()
            time.sleep(0.05)
        wait_for(lambda: status_cycles(status) > 0, "a window measured in the engine's status", proc=p)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert time.monotonic() - started < 25, "the SIGINT did not reach the command"
    doc = json.loads(out)
    assert doc["interrupted"] is True and doc["metrics"]["cycles"]["value"] > 0, err
    assert p.wait(timeout=0.1) == p.returncode == p.poll()      # after the end: at once
