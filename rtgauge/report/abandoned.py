"""What a command says, once, about the runs that opening the store found abandoned
(left running by an rtgauge that ended): `rtgauge run` (plan/lifecycle.py) and the
reading commands (cli/common.py) say it alike."""

from __future__ import annotations

import sys


def tell_abandoned(store) -> None:
    """The runs opening the store found left running by an rtgauge that ended: said once."""
    for run_id in store.abandoned:
        print(f"rtgauge: run {run_id} was left running by an rtgauge that ended without finishing it; "
              "marked abandoned (its stored measurements are kept).", file=sys.stderr)
