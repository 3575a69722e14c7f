"""Errors the user can act on. The CLI prints their message as one sentence and
exits with their status; anything else is a bug and keeps its traceback.
Below every other module of rtgauge but rtgauge.printable, which imports nothing."""

import sys

from rtgauge.printable import printable


class UserError(Exception):
    """Bad input or a missing prerequisite; the message says what to do."""

    exit_status = 2


class RunFailed(UserError):
    """A measurement could not be taken; the message says why."""

    exit_status = 1


def run_reporting_errors(command) -> int:
    """command()'s exit status; a user error is its one sentence on stderr and its
    status, Ctrl-C is 130. Shared by every entry point (rtgauge, python -m rtgauge.hil)."""
    try:
        return int(command() or 0)
    except UserError as e:
        print(f"rtgauge: {printable(e)}", file=sys.stderr)   # no raw control character
        return e.exit_status
    except KeyboardInterrupt:
        print("rtgauge: interrupted", file=sys.stderr)
        return 130
