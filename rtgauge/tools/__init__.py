"""The field's standard tools, run as subprocesses and translated into the engine's
JSON contract so that their results are stored and compared like ours.

The table of tool adapters (rtgauge/tools/adapter.py says what one is): `run` takes a
cross-check's command and document from it (plan/execute.py), `import` asks it, in this
order, which tool wrote a file (cli/importing.py); the cross-checks a profile may name and
their availability checks are its adapters with a command (`cross_checks()`). Adding a tool: its module here with an
`ADAPTER`, and its line below (tests/test_tool_adapters.py adds a sixth this way)."""

from __future__ import annotations

import importlib

TABLE = (
    "jitterdebugger",   # its results.json, or the directory `jitterdebugger -o DIR` wrote
    "engine",           # rtgauge-engine itself: its --out documents, one or a directory of them
    "cyclictest",       # cyclictest --json; run as a cross-check
    "rtla",             # `rtla timerlat hist` text; run as a cross-check
    "histfile",         # cyclictest's -h/--histfile (also `rtgauge export --format cyclictest`)
    "stressng",         # stress-ng's log of a --cyclic run
)


def adapters() -> list:
    """The adapters, in the table's order (each module imported when first asked)."""
    return [importlib.import_module(f"{__name__}.{module}").ADAPTER for module in TABLE]


def adapter_of(name: str):
    """The adapter of a tool by its name (a job's tool); None for a tool not in the table."""
    return next((a for a in adapters() if a.name == name), None)


def cross_checks() -> list:
    """The adapters a profile's `cross_check` may name: those with a command, the
    engine (the measurement they check) excepted; in the table's order."""
    return [a for a in adapters() if a.command is not None and a.name != "engine"]
