"""`rtgauge completion bash|zsh|tcsh`: the shell's completion script for every command and
option, generated from the parser itself by shtab (so it cannot drift from the options)."""

from __future__ import annotations

import shtab

from rtgauge.cli import build_parser

SHELLS = ("bash", "zsh", "tcsh")


def register(sub) -> None:
    p = sub.add_parser("completion", help="print the shell completion script (bash, zsh or tcsh)",
                       description="Print a completion script for SHELL. Load it with, for bash: "
                       "eval \"$(rtgauge completion bash)\" (or save it under "
                       "~/.local/share/bash-completion/completions/rtgauge); for zsh: save it as "
                       "_rtgauge in a directory of your $fpath.")
    p.add_argument("shell", choices=SHELLS, metavar="SHELL", help="bash, zsh or tcsh")
    p.set_defaults(func=cmd_completion)


def cmd_completion(args) -> int:
    print(shtab.complete(build_parser(), shell=args.shell), end="")
    return 0
