"""The examples at the end of each command's --help, and the help formatter that keeps
them (and the exit-status table) as written while it wraps the prose to the terminal."""

from __future__ import annotations

import argparse
import textwrap

from rtgauge.cli.common import subcommand_parsers

EXAMPLES: dict[str, list[tuple[str, str]]] = {
    "run": [("rtgauge run --profile quick --duration 30s", "idle and under CPU load, on every CPU"),
            ("rtgauge run --budget-us 100 --period-us 1000", "can it carry a 1 kHz job with a 100 µs budget?"),
            ("rtgauge run --rt-cpus 1 --load-cpus 0 --duration 24h --live", "a long partitioned soak")],
    "show": [("rtgauge show", "the stored runs"),
             ("rtgauge show latest", "the latest run in detail"),
             ("rtgauge show 3 --format tsv | cut -f1,9", "a table as tab-separated values")],
    "doctor": [("rtgauge doctor", "what on this machine spoils real-time, and what to change"),
               ("rtgauge doctor --strict", "exit status 1 when a check is bad (CI)"),
               ("rtgauge doctor --target ssh://root@board", "the same for a board, over SSH")],
    "tune": [("rtgauge tune --apply --rt-cpus 1-3", "tune for measuring on CPUs 1-3"),
             ("rtgauge tune --status", "what is applied now"),
             ("rtgauge tune --revert", "put every setting back")],
    "report": [("rtgauge report", "the latest run, as rtgauge-report.html"),
               ("rtgauge report 3 7 -o side-by-side.html", "two systems side by side"),
               ("rtgauge report 1-9 --trend -o trend.html", "how the figures moved over the runs")],
    "compare": [("rtgauge compare 3 7", "run 7 against baseline run 3: the answer first, then the detail"),
                ("rtgauge compare 3 7 --fail-on 'max_latency>+20%'", "exit status 3 when significantly worse"),
                ("rtgauge compare 3 7 --pwcet", "the probable worst cases side by side")],
    "pwcet": [("rtgauge pwcet latest", "the probable worst case of the latest run"),
              ("rtgauge pwcet 3 --exceedance 1e-12", "at another probability per cycle"),
              ("rtgauge pwcet --samples ti.bin", "from a raw samples file")],
    "export": [("rtgauge export 3 -o run3.json", "everything, for `rtgauge import` elsewhere"),
               ("rtgauge export 3 --format md", "the summary tables as Markdown"),
               ("rtgauge export 3 --format cyclictest -o run3.hist", "a cyclictest histogram file")],
    "import": [("rtgauge import results/", "a directory of engine documents"),
               ("rtgauge import ct.json --condition cpu", "cyclictest --json output, measured under CPU load"),
               ("rtgauge export 3 | ssh lab rtgauge import -", "a run from this machine into another's store")],
    "lab": [("rtgauge lab run lab.toml", "every board of the lab at once"),
            ("rtgauge lab emulate start", "boot the emulated lab (docs/lab.md)")],
    "completion": [('eval "$(rtgauge completion bash)"', "completion in this bash"),
                   ("rtgauge completion zsh > ~/.zfunc/_rtgauge", "for zsh, in a directory of $fpath")],
}


def examples_text(command: str) -> str:
    lines = ["examples:"]
    for cmd, what in EXAMPLES.get(command, []):
        lines += [f"  {cmd}", f"      {what}"]
    return "\n".join(lines) if len(lines) > 1 else ""


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, but a description's or epilog's indented lines (examples,
    the exit-status table) are kept as written; unindented lines are wrapped."""

    def _fill_text(self, text, width, indent):
        out, prose = [], []

        def flush():
            if prose:
                out.append(textwrap.fill(" ".join(prose), width, initial_indent=indent, subsequent_indent=indent))
                prose.clear()

        for line in text.splitlines():
            if not line.strip():
                flush()
                out.append("")
            elif line[:1].isspace() or line.rstrip().endswith(":"):
                flush()
                out.append(indent + line)
            else:
                prose.append(line.strip())
        flush()
        return "\n".join(out)


def add_examples(parser: argparse.ArgumentParser) -> None:
    """Every command's parser (and its subcommands') wraps prose and keeps examples; a
    command with examples ends its help with them."""
    for path, child in subcommand_parsers(parser):
        child.formatter_class = HelpFormatter
        text = examples_text(path[0]) if len(path) == 1 else ""
        if text:
            child.epilog = (child.epilog + "\n\n" if child.epilog else "") + text
