"""`rtgauge engine TEST ...`: run the engine built with the package, untouched
(or, with --target ssh://..., an engine built for that target, there)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

from rtgauge.enginebin import engine_path
from rtgauge.errors import UserError
from rtgauge.printable import printable
from rtgauge.records import Measurement


def cmd_engine(args) -> int:
    """The registry's handler. `rtgauge engine ...` reaches passthrough() before any parsing
    (rtgauge/cli/__init__.py, dispatch); this is the same call from a parsed command line."""
    return passthrough(args.args)


def passthrough(args: list[str]) -> int:
    """Replace this process with the engine so signals and exit status pass through.
    With --target ssh://... first, run it on that target instead (docs/cross.md)."""
    if args[:1] == ["--target"] or (args and args[0].startswith("--target=")):
        target, rest = (args[1] if len(args) > 1 else "", args[2:]) if args[0] == "--target" \
            else (args[0].split("=", 1)[1], args[1:])
        return on_target(target, rest)
    as_json = "--json" in args
    args = [a for a in args if a != "--json"]
    try:
        if args[:1] == ["latency"]:
            args = ["latency", *cyclictest_aliases(args[1:])]
        exe = engine_path()
    except UserError as e:
        print(f"rtgauge: {e}", file=sys.stderr)
        return e.exit_status
    if args[:1] == ["latency"] and not as_json and sys.stdout.isatty() and \
            not any(a in ("--help", "--out") or a.startswith("--out=") for a in args):
        return latency_on_terminal(exe, args)
    sys.stdout.flush()
    sys.stderr.flush()
    # Python ignores SIGPIPE and an ignored signal stays ignored across exec: give the
    # engine the default back, so `rtgauge engine ... | head` ends it as it ends any C tool
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    os.execv(exe, [exe, *args])
    return 127  # not reached


def latency_on_terminal(exe: str, args: list[str]) -> int:
    """`rtgauge engine latency` on a terminal: the engine runs as a child (Ctrl-C reaches
    it through the terminal and it ends with its document), and the document is summed
    up as cyclictest does: a line per thread and the `# Min/Avg/Max Latencies` lines.
    --json (or any stdout that is not a terminal) prints the document itself."""
    sys.stdout.flush()
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)     # the engine handles Ctrl-C and reports
    try:
        p = subprocess.run([exe, *args], stdout=subprocess.PIPE, text=True)
    finally:
        signal.signal(signal.SIGINT, old)
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        sys.stdout.write(p.stdout)          # not a document (an error, usage): as the engine said it
        return p.returncode
    for line in latency_summary(doc):
        print(line)
    return p.returncode


def latency_summary(doc: dict) -> list[str]:
    """cyclictest's summary of a latency document, in µs: `T:` a line per thread, then
    `# Min Latencies:` ... `# Max Latencies:` with a column per thread."""
    if not doc.get("ok", True) and doc.get("error"):
        return [f"rtgauge-engine latency failed: {printable(doc.get('error'))}"]
    metrics, env = doc.get("metrics") or {}, doc.get("env") or {}
    period = Measurement.from_dict({**doc, "name": "latency"}).period_us    # the cycle driver's env.period_ns
    interval = "?" if period is None else period
    threads = env.get("threads") or []
    keys = [f"#{t.get('index', i)}" for i, t in enumerate(threads)] or [""]
    head = (f"# rtgauge-engine latency: {len(keys)} thread{'s' if len(keys) != 1 else ''}, "
            f"{env.get('policy', '?')} {env.get('priority', '?')}, interval {interval} µs"
            + (", FALLBACK: not real-time" if env.get("fallback") else "")
            + (", interrupted" if doc.get("interrupted") else "") + "; figures in µs (--json: the document)")
    out = [head]

    def us(ns) -> str:
        return "-" if ns is None else f"{ns / 1000:.0f}"

    rows = []
    for i, key in enumerate(keys):
        ti = metrics.get(f"ti{key}") or {}
        t = threads[i] if i < len(threads) else {}
        cycles = (metrics.get(f"cycles{key}") or {}).get("value", ti.get("count"))
        misses = (metrics.get(f"misses{key}") or {}).get("value")
        rows.append((ti, misses))
        out.append(f"T:{i:2d} ({t.get('tid', '?'):>6}) P:{t.get('priority', env.get('priority', '?'))} "
                   f"I:{interval} C:{cycles if cycles is not None else '-':>8} "
                   f"Min:{us(ti.get('min')):>7} Avg:{us(ti.get('avg')):>7} Max:{us(ti.get('max')):>7}"
                   + (f" CPU:{t['cpu']}" if t.get("cpu") is not None else "")
                   + (f" Misses:{misses}" if misses else ""))
    for label, stat in (("Min", "min"), ("Avg", "avg"), ("Max", "max")):
        out.append(f"# {label} Latencies: " + " ".join(
            "-" if ti.get(stat) is None else f"{round(ti[stat] / 1000):05d}" for ti, _ in rows))
    if any(m is not None for _, m in rows):
        out.append("# Misses: " + " ".join("-" if m is None else str(m) for _, m in rows))
    return out


# cyclictest's short options a user of it types on `rtgauge engine latency`, each with
# cyclictest's meaning: option -> (the engine's options, whether it takes a value).
# -a and -t without a value mean what the engine does anyway (every allowed CPU, one
# thread each); -q (print only the summary at the end) is what the engine always does.
CYCLICTEST_ALIASES: dict[str, tuple[tuple[str, ...], str]] = {
    "-i": (("--interval-us",), "value"),            # interval, µs
    "-p": (("--priority",), "value"),               # SCHED_FIFO priority
    "-a": (("--cpus",), "optional"),                # affinity: a CPU list, or all
    "-t": (("--threads",), "optional"),             # threads: N, or one per CPU
    "-D": (("--duration-s",), "value"),             # duration, with cyclictest's units (5m, 1h)
    "-h": (("--histogram",), "value"),              # histogram up to US
    "-b": (("--max-latency-us", "--break"), "value"),  # stop at the first latency above US
    "-q": ((), "none"),                             # quiet: the engine prints only its document
}


def cyclictest_aliases(args: list[str]) -> list[str]:
    """`rtgauge engine latency -i 200 -p 95 -a 1-3 -D 1m -h 400 -b 150 -q`: cyclictest's
    short options as the engine's long ones. A short option cyclictest has and the
    engine has not is refused in one sentence; the engine's own options pass untouched."""
    out: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if not (len(arg) >= 2 and arg[0] == "-" and arg[1] != "-" and not arg[1].isdigit()):
            out.append(arg)
            continue
        flag, attached = arg[:2], arg[2:].lstrip("=")
        if flag not in CYCLICTEST_ALIASES:
            raise UserError(f"{flag} has no equivalent in the engine's latency test (rtgauge maps cyclictest's "
                            f"{' '.join(CYCLICTEST_ALIASES)}); `rtgauge engine latency --help` lists its options.")
        engine_options, takes = CYCLICTEST_ALIASES[flag]
        value = attached or None
        if value is None and takes == "value":
            if i >= len(args):
                raise UserError(f"{flag} needs a value, as in cyclictest (e.g. {flag} 100); "
                                "`rtgauge engine latency --help` prints the help.")
            value, i = args[i], i + 1
        elif value is None and takes == "optional" and i < len(args) and args[i][:1].isdigit():
            value, i = args[i], i + 1
        if takes == "none" or (takes == "optional" and value is None):
            continue
        out += [engine_options[0], value, *engine_options[1:]]
    return out


def on_target(target: str, args: list[str]) -> int:
    """`rtgauge engine --target ssh://[user@]host[:port] TEST ...`: the engine built
    for the target's machine runs there; its document is printed here."""
    # needs asyncssh (the ssh extra): imported only when a target is given
    from rtgauge.remote import ssh as remote

    try:
        if not args or args[0].startswith("-"):
            raise UserError("name the test to run after --target ADDRESS, e.g. "
                            "rtgauge engine --target ssh://root@board latency --duration-s 10.")
        if any(a == "--out" or a.startswith("--out=") for a in args):
            raise UserError("--out is not available with --target; redirect the output instead (> FILE).")
        run = remote.run_engine(target, args)
    except UserError as e:
        print(f"rtgauge: {e}", file=sys.stderr)
        return e.exit_status
    except KeyboardInterrupt:
        print(f"rtgauge: interrupted before the engine ran on {target}; nothing was measured.", file=sys.stderr)
        return 130
    if run.stderr:
        print(run.stderr, file=sys.stderr)
    if run.document is not None:
        print(json.dumps(run.document))
    return run.status
