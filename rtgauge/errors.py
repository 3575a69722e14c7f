"""Errors the user can act on. The CLI prints their message as one sentence and
exits with their status; anything else is a bug and keeps its traceback.
Below every other module of rtgauge but rtgauge.printable, which imports nothing."""

import errno
import importlib
import os
import sys

from rtgauge.printable import printable

# The exit statuses of every rtgauge command: one table, documented in `rtgauge --help`
# and docs/exit-status.md. Gates (--fail-on, a budget's verdict) use 3, 4 and 5.
EXIT_OK = 0            # done; every rule kept, the verdict (if any) is "yes"
EXIT_FAILED = 1        # a measurement, a target or the database failed (RunFailed, StoreError)
EXIT_USAGE = 2         # bad input or a missing prerequisite (UserError): one sentence says what to do
EXIT_GATE_TRIPPED = 3  # a rule is broken or the verdict against the budget is "no"
EXIT_UNDECIDED = 4     # the evidence cannot decide a rule or the verdict (run longer, more rounds)
EXIT_INCOMPLETE = 5    # a gate read an interrupted, partial or abandoned measurement: it fails closed
EXIT_INTERRUPTED = 130 # Ctrl-C, SIGTERM or SIGHUP; what was measured is kept
EXIT_PIPE_CLOSED = 141 # the reader of stdout went away (`| head`): 128 + SIGPIPE, as the shell reports it


EXIT_HELP = """exit status:
  0    done; every --fail-on rule kept, the verdict (if a budget was given) is yes
  1    a measurement, a target (its connection lost) or the database failed
  2    bad input or a missing prerequisite (one sentence says what to do)
  3    a gate tripped: a --fail-on rule is broken or the verdict is no
  4    undecided: not enough evidence for a rule or the verdict (run longer)
  5    a gate read an interrupted, partial or failed measurement (fails closed)
  130  interrupted (Ctrl-C, SIGTERM, SIGHUP); what was measured is kept
  141  the reader of the output went away (| head)
  several gates: the first of 3, 5, 4 any of them gives (docs/exit-status.md)"""

GATE_PRECEDENCE = (EXIT_GATE_TRIPPED, EXIT_INCOMPLETE, EXIT_UNDECIDED)


def gate_status(statuses) -> int:
    """One status for several gates (rules, a verdict): a broken one wins (3), then one
    that read an incomplete measurement (5), then an undecided one (4), else 0."""
    given = set(statuses)
    return next((s for s in GATE_PRECEDENCE if s in given), EXIT_OK)


class UserError(Exception):
    """Bad input or a missing prerequisite; the message says what to do."""

    exit_status = EXIT_USAGE


class RunFailed(UserError):
    """A measurement could not be taken; the message says why."""

    exit_status = EXIT_FAILED


def require_extra(module: str, extra: str, purpose: str):
    """The module an optional feature needs, imported; if it is not installed, one
    sentence naming the extra of rtgauge that brings it (pyproject.toml's extras)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise UserError(f"{purpose} need the {module} package, which is not installed; install "
                        f"rtgauge's {extra} extra: pip install 'rtgauge[{extra}]'.") from None


# a write that failed for lack of room or a failing device (not the command's fault)
WRITE_FAILURES = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO)


class StdoutFailed(OSError):
    """Standard output (a full device, a file system gone) refused what was written."""


def flush_stdout() -> None:
    """sys.stdout.flush(); an OSError of it other than a closed pipe as StdoutFailed."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as e:
        raise StdoutFailed(e.errno, e.strerror) from None


def stdout_closed() -> int:
    """The reader of stdout went away (`rtgauge show --json | head -1`): say nothing
    more (the reader asked for no more), point stdout at /dev/null so that the
    interpreter's own flush at exit cannot fail again, and exit as a program SIGPIPE
    ended would, as git and cat do."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
    return EXIT_PIPE_CLOSED


def run_reporting_errors(command) -> int:
    """command()'s exit status; a user error is its one sentence on stderr and its
    status, Ctrl-C is 130, a closed stdout 141 without a traceback. Shared by every
    entry point (rtgauge, python -m rtgauge.hil). stdout is flushed here, so that a
    pipe closed while the last lines wait in the buffer is caught too."""
    try:
        status = int(command() or 0)
        flush_stdout()
        return status
    except BrokenPipeError:
        return stdout_closed()
    except OSError as e:
        # `> /dev/full`, a full or failing disk under what is written: one sentence, not a
        # traceback; any other OSError is a bug and keeps its traceback
        if not isinstance(e, StdoutFailed) and e.errno not in WRITE_FAILURES:
            raise
        where = f"cannot write {printable(e.filename, 120)}" if e.filename else "cannot write to standard output"
        print(f"rtgauge: {where} ({e.strerror or e}); free space or write elsewhere.", file=sys.stderr)
        stdout_closed()
        return EXIT_FAILED
    except SystemExit:            # argparse after --help or a usage error: its text is out, flush it
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            return stdout_closed()
        raise
    except UserError as e:
        print(f"rtgauge: {printable(e)}", file=sys.stderr)   # no raw control character
        return e.exit_status
    except KeyboardInterrupt:
        print("rtgauge: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
