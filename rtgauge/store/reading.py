"""What a reading command (show, compare, report, export, pwcet) reads: the database
--db names, resolved and parsed once at the command line's edge (`open_for_reading`),
and the runs its RUN arguments name. Looking creates nothing: with no database named
and no default file yet, the store opened holds no runs and says where it would be."""

from __future__ import annotations

from rtgauge.bounds import RUN_ID_MAX, run_range
from rtgauge.errors import UserError
from rtgauge.records import Run
from rtgauge.store.store import Store
from rtgauge.store.urls import database_to_read, display_url


class NoDatabaseYet:
    """The default database before anything made it: no runs, nothing created by looking.
    `made` tells it from a Store (whose every database exists)."""
    made = False
    abandoned: tuple = ()

    def __init__(self, url) -> None:
        self.url = display_url(url)

    def latest_run_id(self) -> None:
        return None

    def list_runs(self, limit: int | None = None) -> list:
        return []

    def get_run(self, run_id: int, documents: bool = True) -> None:
        return None

    def close(self) -> None:
        pass

    def __enter__(self) -> NoDatabaseYet:
        return self

    def __exit__(self, *exc) -> None:
        pass


def open_for_reading(given: str | None) -> Store | NoDatabaseYet:
    """The store a reading command reads: --db (GIVEN), else $RTGAUGE_DB, else the config
    file's db, else the default file, resolved and parsed once here (urls.database_to_read)."""
    url, there = database_to_read(given)
    if not there:
        return NoDatabaseYet(url)
    return Store(url)


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


def parse_run_argument(text: str | None) -> int | str | None:
    """One RUN argument: a run id, 'latest', or None (not given)."""
    if text is None or text == "latest":
        return text
    try:
        run_id = int(text) if len(text) < 30 else 0
    except ValueError:
        run_id = 0
    if not 0 < run_id <= RUN_ID_MAX:
        raise UserError(f"'{text[:40]}' is not a run; give a run id such as 3, or 'latest'; "
                        "`rtgauge show` lists the runs.")
    return run_id


def load_runs(store: Store | NoDatabaseYet, wanted: list[int | str], documents: bool = False) -> list[Run]:
    """The stored runs WANTED names (run ids and 'latest', as parse_run_ids gives them);
    with documents=True each measurement also carries its original engine document."""
    if not store.made:
        raise UserError(f"there are no runs in {store.url} yet; `rtgauge run` measures this machine, or give the "
                        "database with --db.")
    runs: list[Run] = []
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
