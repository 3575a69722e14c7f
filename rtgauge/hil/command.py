"""The hil command line, for `rtgauge hil` (cli/hil.py) and its alias `python3 -m rtgauge.hil`:
its usage, its parsers and its dispatch. What each mode does is rtgauge/hil/actions.py,
loaded only when a mode is dispatched, so that `--help` of either loads neither the
store nor the engine's runners (tests/test_cli_startup.py).

Kept in the hil package so that the alias needs nothing above it (hil must not import cli:
cli imports hil)."""

from __future__ import annotations

import sys

from rtgauge.argparsing import Parser, add_db_option, suggestion
from rtgauge.errors import UserError, run_reporting_errors
from rtgauge.units import time_option


def sustained_main(argv: list[str], prog: str = "rtgauge hil") -> int:
    p = Parser(prog=f"{prog} sustained")
    p.add_argument("--payload", default="none", help="none, work or tire (the engine's hil --payload)")
    p.add_argument("--sizes", default="0", help="comma list: work-us (work) or masses (tire)")
    p.add_argument("--frames", type=int, default=1_000_000)
    p.add_argument("--start-us", type=time_option("us"), default=1000, help="first period (a unit may be given: 1ms)")
    p.add_argument("--min-us", type=time_option("us"), default=None,
                   help="default: the engine's shortest hil --period-us")
    p.add_argument("--max-us", type=time_option("us"), default=100_000)
    p.add_argument("--precision", type=float, default=0.05)
    p.add_argument("--retries", type=int, default=1)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--store", action="store_true", help="keep the result in the results store")
    add_db_option(p)
    a = p.parse_args(argv)
    try:
        sizes = [int(s) for s in a.sizes.split(",")]
    except ValueError:
        raise UserError(f"--sizes {a.sizes!r} is not a comma list of whole numbers; give e.g. 100,300.")
    from rtgauge.hil import actions     # the implementation, at dispatch (the docstring)
    return actions.sustained(a, sizes)


USAGE = """usage: {prog} veth [ENGINE hil OPTIONS]    the loop across a veth pair (root)
       {prog} sustained [--payload ...]    the sustained-rate sweep

Each prints one JSON document (the engine's contract). `sustained --store` also
keeps it in the results store as a run of its own (one measurement, hil-sustained).
docs/hil.md tells both.

examples:
  {prog} veth --period-us 1000 --duration-s 10 > loop.json      # the loop over veth
  {prog} sustained --payload tire --sizes 100,1000 --store      # the shortest period held"""


VETH_HELP = """usage: {prog} veth [ENGINE hil OPTIONS]

Run the engine's hil test with --role sim in one network namespace and --role device
in another, joined by a veth pair (root), and print their merged JSON document. The
namespaces are made for the run and removed after it. The options are the engine's
hil options (rtgauge engine hil --help lists them), given to both sides.
docs/hil.md tells more."""

MODES = ("veth", "sustained")


def asks_for_help(options: list[str]) -> bool:
    """-h or --help anywhere among the options: help is printed and nothing is done."""
    return any(o in ("-h", "--help") for o in options)


def main(argv: list[str], prog: str = "rtgauge hil") -> int:
    if argv[:1] == ["veth"] and asks_for_help(argv[1:]):
        print(VETH_HELP.format(prog=prog))
        return 0
    if argv[:1] == ["veth"]:
        from rtgauge.hil import actions     # the implementation, at dispatch (the docstring)
        return run_reporting_errors(lambda: actions.veth(argv[1:]))
    if argv[:1] == ["sustained"]:
        return run_reporting_errors(lambda: sustained_main(argv[1:], prog))
    if argv[:1] in (["-h"], ["--help"]):
        print(USAGE.format(prog=prog))
        return 0
    if argv:
        hint = suggestion(argv[0], MODES)
        print(f"rtgauge: unknown hil mode {argv[0]!r}; choose veth or sustained{hint or '.'}", file=sys.stderr)
    print(USAGE.format(prog=prog), file=sys.stderr)
    return 2
