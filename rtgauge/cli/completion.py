"""`rtgauge completion bash|zsh|tcsh`: the shell's completion script for every command and
option, generated from the parser itself by shtab (so it cannot drift from the options)."""

from __future__ import annotations

import shtab

from rtgauge.cli import build_parser


def cmd_completion(args) -> int:
    print(shtab.complete(build_parser(), shell=args.shell), end="")
    return 0
