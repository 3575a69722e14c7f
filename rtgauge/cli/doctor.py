"""`rtgauge doctor`: what on this machine stands between it and real-time, and what to change."""

from __future__ import annotations

import argparse
import json
import os
import textwrap

from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from rtgauge.errors import UserError
from rtgauge.plan.session import stale_tuning_check
from rtgauge.printable import printable as visible
from rtgauge.report import safe
from rtgauge.report.safe import markup
from rtgauge.sysinfo import collect_facts, run_doctor
from rtgauge.sysinfo.checks import count_statuses

STATUS_STYLE = {"ok": "green", "info": "cyan", "warn": "yellow", "bad": "bold red"}


def doctor(args: argparse.Namespace) -> int:
    target = getattr(args, "target", None)
    if target in ("", "local"):
        target = None
    if target is not None:
        if args.root != "/":
            raise UserError("--root and --target exclude each other; give one.")
        # needs asyncssh (the ssh extra): imported only when a target is given
        from rtgauge.remote.ssh import parse
        from rtgauge.remote.session import TargetSession
        with TargetSession(str(parse(target)), needs_engine=False) as session:
            facts = session.facts()
            from rtgauge.remote.tune import tuning_check   # asyncssh too, as above
            tuning = tuning_check(session)
        checks = run_doctor(facts) + ([tuning] if tuning else [])
    elif not os.path.isdir(os.path.join(args.root, "proc")):
        raise UserError(f"--root {args.root} has no proc directory; give the root of a system tree (default /).")
    else:
        facts = collect_facts(args.root)
        checks = run_doctor(facts)
    if target is None and os.path.realpath(args.root) == "/":
        tuning = stale_tuning_check()
        if tuning:
            checks.append(tuning)
    if args.json:
        print(json.dumps({"facts": facts, "checks": checks}, indent=2, ensure_ascii=False))
    else:
        print_table(facts, checks, args.format)
    return 1 if args.strict and count_statuses(checks)["bad"] else 0


def print_table(facts: dict, checks: list[dict], fmt: str | None = None) -> None:
    """On a terminal, a block per check: its status, name and value, then its advice,
    every command in it (the `backquoted` parts) whole on a line of its own, so that it
    can be pasted. Into a pipe or a file (or --format tsv), one tab-separated line a check."""
    console = safe.table_console(fmt)   # looked up on the module: tests replace it
    title = (
        f"{facts.get('hostname') or '?'}: Linux {facts.get('kernel_release') or '?'}, "
        f"{facts.get('cpus')} CPUs, {facts.get('cpu_model') or 'unknown CPU'}"
    )
    counts = count_statuses(checks)
    summary = (f"{counts['bad']} bad, {counts['warn']} warn, {counts['info']} info, {counts['ok']} ok"
               + ("" if counts["bad"] or counts["warn"] else ": nothing stands in the way"))
    if console.plain:
        table = Table(title=title)
        for col in ("check", "status", "value", "advice"):
            table.add_column(col)
        for c in checks:
            table.add_row(escape(c["name"]), escape(c["status"]), escape(c["value"]), escape(c["advice"]))
        console.print(table)
        console.file.write(f"# {summary}\n")
        return
    console.print(Text(printable(title), style="bold"))
    width = max((len(c["status"]) for c in checks), default=2)
    for c in checks:
        head = f"{c['status']:<{width}} {printable(c['name'])}: {printable(c['value'])}"
        lines = textwrap.wrap(head, console.width, subsequent_indent=" " * (width + 1),
                              break_long_words=False, break_on_hyphens=False) or [head]
        first = Text(lines[0][:width], style=STATUS_STYLE.get(c["status"], ""))
        first.append(lines[0][width:])
        console.print(first, soft_wrap=True)
        for line in lines[1:]:
            console.print(Text(line), soft_wrap=True)
        for kind, part in advice_parts(c["advice"]):
            if kind == "command":      # whole, never wrapped by rtgauge: the terminal's own wrap pastes as one line
                console.print(Text(" " * (width + 3) + printable(part), style="cyan"), soft_wrap=True)
            else:
                console.print(Padding(Text(printable(part)), (0, 0, 0, width + 1)))
    console.print(f"[bold red]{counts['bad']} bad[/], [yellow]{counts['warn']} warn[/], "
                  f"{counts['info']} info, {counts['ok']} ok"
                  + ("" if counts["bad"] or counts["warn"] else ": nothing stands in the way"))


COMMAND_INLINE_MAX = 16    # a `backquoted` word this short (`update-grub`, `--cpus 1`) stays in the sentence


def advice_parts(advice: str) -> list[tuple[str, str]]:
    """The advice as ("text", ...) and ("command", ...) parts: a backquoted part longer
    than COMMAND_INLINE_MAX is a command (or a kernel command line) to paste, on its own
    line; a short one stays in the sentence with its backquotes."""
    pieces = advice.split("`")
    if len(pieces) % 2 == 0:          # an unpaired backquote: the advice is prose as it is
        return [("text", advice)] if advice.strip() else []
    parts: list[tuple[str, str]] = []
    text = ""
    for i, piece in enumerate(pieces):
        if i % 2 and len(piece) > COMMAND_INLINE_MAX:
            if text.strip():
                parts.append(("text", text.strip()))
            parts += [("command", line) for line in shell_lines(piece)]
            text = ""
        else:
            text += f"`{piece}`" if i % 2 else piece
    if text.strip(" ,.;"):
        parts.append(("text", text.strip()))
    return parts


def shell_lines(command: str) -> list[str]:
    """A command line split at its top-level `; ` (not inside parentheses or quotes) into
    lines that, pasted one after another, do the same; anything else stays one line."""
    out, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(command):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == ";" and depth == 0 and command[i + 1:i + 2] == " ":
            out.append(command[start:i].strip())
            start = i + 1
    out.append(command[start:].strip())
    return [line for line in out if line]


def printable(text) -> str:
    return visible(str(text), None)


def escape(text: str) -> str:
    return markup(text)
