"""The machine rtgauge runs on, as a target with the same interface as an SSH
target: `async with LocalTarget() as t: run = await t.run_engine([...])`."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import tempfile
from pathlib import Path

from rtgauge.enginebin import engine_path
from rtgauge.errors import UserError
from rtgauge.store.validate import DOCUMENT_MAX, parse_document
from rtgauge.sysinfo.readers import read_bounded
from rtgauge.remote.ssh import RemoteRun


class LocalTarget:
    def __init__(self) -> None:
        u = os.uname()
        self.machine, self.hostname = u.machine, u.nodename
        self.last_run: RemoteRun | None = None

    async def __aenter__(self) -> LocalTarget:
        return self

    async def __aexit__(self, *exc) -> None:
        return None

    def __str__(self) -> str:
        return "local"

    async def run_engine(self, args: list[str], engine: Path | None = None,
                         time_limit_s: float | None = None) -> RemoteRun:
        """Run the engine here. On cancellation (Ctrl-C) it gets SIGTERM, stops with
        what it measured (kept in self.last_run) and the cancellation goes on."""
        d = tempfile.mkdtemp(prefix="rtgauge.")
        try:
            out = Path(d) / "doc.json"
            proc = await asyncio.create_subprocess_exec(
                str(engine or engine_path()), *args, "--out", str(out),
                stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
            try:
                _, err = await asyncio.wait_for(proc.communicate(), time_limit_s)
            except (asyncio.CancelledError, asyncio.TimeoutError):
                proc.send_signal(signal.SIGTERM)
                try:
                    _, err = await asyncio.wait_for(proc.communicate(), 10)
                except asyncio.TimeoutError:
                    proc.kill()
                    _, err = await proc.communicate()
                self.last_run = collect(out, proc.returncode, err, d)
                raise
            self.last_run = collect(out, proc.returncode, err, d)
            return self.last_run
        finally:
            shutil.rmtree(d, ignore_errors=True)


def collect(out: Path, status: int, err: bytes, d: str) -> RemoteRun:
    doc, why = None, ""
    data = read_bounded(str(out), DOCUMENT_MAX)
    if data:
        try:
            doc = parse_document(data, "the engine's document")
        except UserError as e:
            why = str(e)
    return RemoteRun(doc, status, (err.decode(errors="replace").strip() + "\n" + why).strip(), d)
