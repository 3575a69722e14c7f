"""Versions of the field's standard tools that rtgauge drives when installed."""

from __future__ import annotations

import re
import shutil
import subprocess

# How each tool tells its version: rt-tests print "NAME V 2.40" at the top of --help
# (hackbench rejects --version), stress-ng answers --version.
VERSION_QUERIES = {
    "cyclictest": ["--help"],
    "hackbench": ["--help"],
    "stress-ng": ["--version"],
}
VERSION_PATTERN = re.compile(r"(?:\bV|version)\s+v?(\d+(?:\.\d+)+[\w.-]*)")


def tool_version(name: str, timeout: float = 2.0) -> str | None:
    """The tool's version, 'installed (version unknown)', or None when not installed."""
    path = shutil.which(name)
    if path is None:
        return None
    try:
        p = subprocess.run(
            [path, *VERSION_QUERIES.get(name, ["--version"])],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "installed (version unknown)"
    m = VERSION_PATTERN.search(p.stdout + "\n" + p.stderr)
    return m.group(1) if m else "installed (version unknown)"


def tool_versions() -> dict[str, str | None]:
    return {name: tool_version(name) for name in VERSION_QUERIES}
