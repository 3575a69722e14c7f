"""`rtgauge doctor`: what on this machine stands between it and real-time, and what to change."""

from __future__ import annotations

import argparse
import os

from rtgauge.errors import UserError

STATUS_STYLE = {"ok": "green", "info": "cyan", "warn": "yellow", "bad": "bold red"}


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "doctor",
        help="check this system for what spoils real-time measurements, and how to fix it",
        description="Check privileges, RT throttling, governor, SMT, isolated CPUs, idle states, "
        "preemption model, clocksource, swap, THP, irqbalance and tracer availability; "
        "each gets a status (ok/info/warn/bad) and what to change. Exit status 0: it is advice.",
    )
    p.add_argument("--json", action="store_true", help='print {"facts": ..., "checks": [...]} as JSON')
    p.add_argument("--strict", action="store_true", help="exit with status 1 when a check is bad")
    p.add_argument(
        "--root", default="/", metavar="DIR",
        help="read /proc, /sys and /etc under DIR instead of / (a copied or fake tree)",
    )
    p.add_argument(
        "--target", default=None, metavar="ssh://[user@]host[:port]",
        help="check that machine over SSH: its /proc, /sys and /etc are read over the connection",
    )
    p.set_defaults(func=doctor)


def doctor(args: argparse.Namespace) -> int:
    import json
    from rtgauge.sysinfo import collect_facts, run_doctor
    from rtgauge.sysinfo.checks import count_statuses

    target = getattr(args, "target", None)
    if target in ("", "local"):
        target = None
    if target is not None:
        if args.root != "/":
            raise UserError("--root and --target exclude each other; give one.")
        from rtgauge.remote.ssh import parse
        from rtgauge.remote.session import TargetSession
        with TargetSession(str(parse(target)), needs_engine=False) as session:
            facts = session.facts()
            from rtgauge.remote.tune import tuning_check
            tuning = tuning_check(session)
        checks = run_doctor(facts) + ([tuning] if tuning else [])
    elif not os.path.isdir(os.path.join(args.root, "proc")):
        raise UserError(f"--root {args.root} has no proc directory; give the root of a system tree (default /).")
    else:
        facts = collect_facts(args.root)
        checks = run_doctor(facts)
    if target is None and os.path.realpath(args.root) == "/":
        from rtgauge.plan.session import stale_tuning_check
        tuning = stale_tuning_check()
        if tuning:
            checks.append(tuning)
    if args.json:
        print(json.dumps({"facts": facts, "checks": checks}, indent=2, ensure_ascii=False))
    else:
        print_table(facts, checks)
    return 1 if args.strict and count_statuses(checks)["bad"] else 0


def print_table(facts: dict, checks: list[dict]) -> None:
    from rtgauge.report.safe import SafeConsole as Console
    from rich.table import Table

    from rtgauge.sysinfo.checks import count_statuses

    console = Console()
    title = (
        f"{facts.get('hostname') or '?'}: Linux {facts.get('kernel_release') or '?'}, "
        f"{facts.get('cpus')} CPUs, {facts.get('cpu_model') or 'unknown CPU'}"
    )
    table = Table(title=title, show_lines=True)
    table.add_column("check", no_wrap=True)
    table.add_column("status", no_wrap=True)
    # fold, never truncate: advice lines carry commands the user copies.
    table.add_column("value", ratio=2, overflow="fold")
    table.add_column("advice", ratio=3, overflow="fold")
    for c in checks:
        style = STATUS_STYLE.get(c["status"], "")
        # Advice holds shell commands with [brackets]; keep rich from reading them as markup.
        table.add_row(c["name"], f"[{style}]{c['status']}[/]", escape(c["value"]), escape(c["advice"]))
    console.print(table)
    counts = count_statuses(checks)
    console.print(
        f"[bold red]{counts['bad']} bad[/], [yellow]{counts['warn']} warn[/], "
        f"{counts['info']} info, {counts['ok']} ok"
        + ("" if counts["bad"] or counts["warn"] else ": nothing stands in the way")
    )


def escape(text: str) -> str:
    from rtgauge.report.safe import markup

    return markup(text)
