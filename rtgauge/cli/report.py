"""`rtgauge report [RUN ...] -o FILE`: the self-contained HTML report of stored runs
(default: the latest run); and the run loading that compare and export share."""

from __future__ import annotations

import sys
import time

from rtgauge.bounds import run_range
from rtgauge.errors import UserError
from rtgauge.config import DB_HELP
from rtgauge.records import Run


def add_db_argument(p) -> None:
    p.add_argument("--db", metavar="URL", default=None, help=DB_HELP)


def register(sub) -> None:
    p = sub.add_parser("report", help="write the HTML report of stored runs",
                       description="Write one self-contained HTML file (plots inline, no network) for the given "
                       "runs side by side; without RUN, the latest run.")
    p.add_argument("runs", nargs="*", metavar="RUN", help="run ids, ranges such as 3-7, or 'latest'")
    add_db_argument(p)
    p.add_argument("-o", "--output", metavar="FILE", default=None,
                   help="the HTML file to write (default: rtgauge-report-RUNS.html here); - or /dev/stdout: "
                   "standard output")
    p.add_argument("--budget-us", type=float, default=None, metavar="US",
                   help="the job's worst-case wake-up latency, µs: the report opens with the verdict against it "
                   "(default: a rating against 100 µs, no verdict)")
    p.add_argument("--period-us", type=float, default=None, metavar="US", help="the job's period, µs")
    p.add_argument("--miss-rate", type=float, default=None, metavar="RATE",
                   help="the share of cycles allowed later than the budget (default: none, hard)")
    p.add_argument("--trend", action="store_true",
                   help="add the trend: max, p99 and the credible worst case of each system and condition over "
                   "the runs' start times, significant changes marked")
    p.set_defaults(func=cmd_report)


def parse_run_ids(texts: list[str]) -> list[int | str]:
    """'7', '3-5', 'latest' -> [7, 3, 4, 5, 'latest'] (order kept, duplicates dropped)."""
    out: list[int | str] = []
    for text in texts:
        for part in str(text).split(","):
            part = part.strip()
            if part == "latest":
                ids = ["latest"]
            else:
                lo, dash, hi = part.partition("-")
                try:
                    lo_id, hi_id = int(lo), int(hi) if dash else int(lo)
                except ValueError:
                    lo_id = hi_id = 0
                ids = list(run_range(part, lo_id, hi_id))
            seen = set(out)
            out += [i for i in ids if i not in seen]
    return out


def load_runs(db: str | None, texts: list[str], default_latest: bool = True,
              documents: bool = False) -> list[Run]:
    """The stored runs named by texts (the latest one when texts is empty); with
    documents=True each measurement also carries its original engine document."""
    from rtgauge.store.urls import database_to_read, display_url, normalise_url
    from rtgauge.store import open_store
    wanted = parse_run_ids(texts) or (["latest"] if default_latest else [])
    url = database_to_read(db)
    if url is None:
        raise UserError(f"there are no runs in {display_url(normalise_url(None))} yet; `rtgauge run` measures "
                        "this machine, or give the database with --db.")
    runs = []
    with open_store(db) as store:
        from rtgauge.cli.show import tell_abandoned
        tell_abandoned(store)
        for w in wanted:
            run_id = store.latest_run_id() if w == "latest" else w
            run = None if run_id is None else store.get_run(run_id, documents=documents)
            if run is None:
                if run_id is None:
                    raise UserError(f"there are no runs in {store.url} yet; `rtgauge run` makes one.")
                raise UserError(f"no run {run_id} in {store.url}; `rtgauge show` lists the runs.")
            if all(r.id != run.id for r in runs):
                runs.append(run)
    return runs


def budget_options(args) -> dict:
    if getattr(args, "period_us", None) is not None or getattr(args, "miss_rate", None) is not None:
        from rtgauge.analysis.verdict import make_budget
        budget = make_budget(args.budget_us, args.period_us, args.miss_rate)
        return {"budget_us": budget.latency_us, "budget": budget}
    if args.budget_us is None:
        return {}
    if not 1 <= args.budget_us <= 1e7:
        raise UserError(f"--budget-us {args.budget_us:g} is out of range 1..10000000; give the worst-case "
                        "wake-up latency your job tolerates, in µs.")
    return {"budget_us": args.budget_us}


def check_writable(option: str, path: str | None) -> None:
    """A file written at the end (-o) is checked before anything is read or printed, by
    the one writer's rule (rtgauge/safefile.py: a link, device, FIFO or directory refused)."""
    from rtgauge import safefile
    safefile.check_option(option, path, "give a regular file path, - or /dev/stdout")


def default_output(prefix: str, runs: list[Run]) -> str:
    ids = [r.id for r in runs]
    tag = f"{ids[0]}" if len(ids) == 1 else (f"{ids[0]}-{ids[-1]}" if len(ids) > 3 else "-".join(map(str, ids)))
    return f"{prefix}-{tag}.html"


def write_html(path: str, runs: list[Run], fix: str = "choose another file with -o", **options) -> None:
    """fix: what the user does next, in the words of the command that wrote it."""
    from rtgauge.report.html import write_report
    from rtgauge import safefile
    from rtgauge.printable import printable
    try:
        write_report(runs, path, **options)
    except BrokenPipeError:
        raise                      # the reader of `-o -` went away: 141, as for any output
    except OSError as e:
        raise UserError(f"cannot write the report to {printable(path, 120)} ({safefile.reason(e)}); {fix}.") from None


def cmd_report(args) -> int:
    options = budget_options(args)
    check_writable("-o", args.output)
    if options.get("budget_us") is not None and "budget" not in options:
        from rtgauge.analysis.verdict import make_budget
        options["budget"] = make_budget(options["budget_us"])
    if args.trend:
        options["trend"] = True
    runs = load_runs(args.db, args.runs)
    path = args.output or default_output("rtgauge-report", runs)
    t0 = time.monotonic()
    write_html(path, runs, **options)
    from rtgauge import safefile
    from rtgauge.printable import printable
    stream = sys.stderr if safefile.stream_fd(path) == 1 else sys.stdout
    print(f"Report of {len(runs)} run{'s' if len(runs) != 1 else ''} written to {printable(path, 120)} "
          f"({time.monotonic() - t0:.2f} s).", file=stream)
    from rtgauge.analysis.conclusions import check_conclusions, summary_line
    from rtgauge.analysis.published import studies
    found = studies(runs)
    if found:
        print(f"The studies' {summary_line(check_conclusions(runs, {st.source for st, _ in found}))} "
              "(the report's published section says which and why).", file=stream)
    return 0
