"""The rtgauge command line: one module a subcommand, each with register()."""

from __future__ import annotations

import argparse
import signal
import sys
import warnings

from rtgauge import __version__
from rtgauge.errors import UserError, run_reporting_errors
from rtgauge.redact import mask_text


def build_parser() -> argparse.ArgumentParser:
    from rtgauge.cli import compare, doctor, engine, export, importing, report, run, show
    from rtgauge.cli import hil, lab, pwcet, tune

    parser = argparse.ArgumentParser(
        prog="rtgauge",
        description="Measure whether this system can carry a real-time job, store the "
        "result and compare it with other systems and the published figures.",
    )
    parser.add_argument("--version", action="version", version=f"rtgauge {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in (run, show, doctor, engine, tune, report, compare, pwcet, export, importing, hil, lab):
        module.register(sub)
    return parser




def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # `rtgauge engine ...` passes everything after it to the engine untouched.
    if argv[:1] == ["engine"]:
        from rtgauge.cli.engine import passthrough

        return passthrough(argv[1:])
    # `rtgauge hil veth ...` passes the engine's hil options on untouched, the same way.
    if argv[:1] == ["hil"]:
        from rtgauge.cli.hil import passthrough as hil

        return hil(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    terminate_like_interrupt()
    # numpy's and scipy's RuntimeWarnings (overflow, invalid value) printed beside a result or
    # a sentence say nothing the result does not: a figure that cannot be computed is absent
    warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"(numpy|scipy)(\.|$)")
    warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"rtgauge\.analysis")
    return run_reporting_errors(lambda: masked_errors(args.func, args))


def terminate_like_interrupt() -> None:
    """SIGTERM stops any command as Ctrl-C does (KeyboardInterrupt), so its `finally`
    blocks run: temporary trees are removed, runs marked. A run installs its own
    handler for the time it measures (rtgauge/plan/execute.py)."""
    def stop(signum, frame):
        raise KeyboardInterrupt
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, stop)


def masked_errors(func, args):
    """func(args); a sentence that names a URL never shows its password (rtgauge/redact.py)."""
    try:
        return func(args)
    except UserError as e:
        e.args = (mask_text(str(e)),)
        raise


if __name__ == "__main__":
    sys.exit(main())
