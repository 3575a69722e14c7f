"""Locate the engine binary (rtgauge-engine)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from rtgauge.errors import UserError

ENV_VAR = "RTGAUGE_ENGINE"


def engine_path() -> str:
    """The engine to run: $RTGAUGE_ENGINE, else the one built into the package,
    else rtgauge-engine on PATH."""
    override = os.environ.get(ENV_VAR)
    if override:
        if not (os.path.isfile(override) and os.access(override, os.X_OK)):
            raise UserError(f"{ENV_VAR}={override} is not an executable file; unset it or point it at rtgauge-engine.")
        return override
    packaged = Path(__file__).resolve().parent / "bin" / "rtgauge-engine"
    if os.access(packaged, os.X_OK):
        return str(packaged)
    found = shutil.which("rtgauge-engine")
    if found:
        return found
    raise UserError("the rtgauge-engine binary is missing; reinstall with `pip install .` "
                    f"or set {ENV_VAR} to a built engine.")

