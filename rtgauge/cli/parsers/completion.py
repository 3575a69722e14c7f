"""`rtgauge completion`'s parser: its options and help, loaded without the command's implementation
(rtgauge/cli/completion.py, imported at dispatch: the registry in rtgauge/cli/__init__.py names both)."""

from __future__ import annotations

SHELLS = ("bash", "zsh", "tcsh")


def register(sub) -> None:
    p = sub.add_parser("completion", help="print the shell completion script (bash, zsh or tcsh)",
                       description="Print a completion script for SHELL. Load it with, for bash: "
                       "eval \"$(rtgauge completion bash)\" (or save it under "
                       "~/.local/share/bash-completion/completions/rtgauge); for zsh: save it as "
                       "_rtgauge in a directory of your $fpath.")
    p.add_argument("shell", choices=SHELLS, metavar="SHELL", help="bash, zsh or tcsh")
