"""Where the HTML report goes: its default file name and the one call that writes it
with a sentence when it cannot (report, compare --html, run's report, lab's)."""

from __future__ import annotations

from rtgauge import safefile
from rtgauge.errors import UserError
from rtgauge.printable import printable
from rtgauge.records import Run
from rtgauge.report.html import write_report


def default_output(prefix: str, runs: list[Run]) -> str:
    ids = [r.id for r in runs]
    tag = f"{ids[0]}" if len(ids) == 1 else (f"{ids[0]}-{ids[-1]}" if len(ids) > 3 else "-".join(map(str, ids)))
    return f"{prefix}-{tag}.html"


def write_html(path: str, runs: list[Run], fix: str = "choose another file with -o", **options) -> None:
    """fix: what the user does next, in the words of the command that wrote it."""
    try:
        write_report(runs, path, **options)
    except BrokenPipeError:
        raise                      # the reader of `-o -` went away: 141, as for any output
    except OSError as e:
        raise UserError(f"cannot write the report to {printable(path, 120)} ({safefile.reason(e)}); {fix}.") from None
