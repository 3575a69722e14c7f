"""Where the results database is: default location and URL normalisation."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from rtgauge import config
from rtgauge.config import DB_FORMS
from rtgauge.errors import UserError
from rtgauge.redact import mask_url


def default_db_path() -> Path:
    """$XDG_DATA_HOME/rtgauge/rtgauge.db, the XDG default being ~/.local/share."""
    base = os.environ.get("XDG_DATA_HOME", "")
    # The XDG spec says a relative value is invalid and must be ignored.
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".local" / "share"
    return root / "rtgauge" / "rtgauge.db"


def default_db_url() -> str:
    return f"sqlite:///{default_db_path()}"


def is_plain_path(text: str) -> bool:
    return "://" not in text


def normalise_url(url: str | None) -> URL:
    """An SQLAlchemy URL for what the user gave: None (the configured database: $RTGAUGE_DB,
    else the config file's, else the default file), a file path, sqlite:///path, or
    postgresql://... (driven by psycopg 3). The environment keeps a password out of argv
    (ps, stored runs); docs/store.md."""
    url = config.database(url)
    return parse_url(default_db_url() if url is None else url)


def parse_url(url: str) -> URL:
    """The URL of a database already chosen (normalise_url's second half: no lookup of
    $RTGAUGE_DB or the config file)."""
    url = url.strip()
    if not url:
        raise UserError("the database URL is empty; give a file path, sqlite:///PATH or postgresql://HOST/DB.")
    check_encodable(url)
    if is_plain_path(url):
        try:
            path = Path(url).expanduser().resolve()
        except (OSError, RuntimeError, ValueError) as e:      # ~nosuchuser: RuntimeError; a NUL: ValueError
            raise UserError(f"the database path {ascii(url[:80])} cannot be used ({getattr(e, 'strerror', None) or e}); "
                            "give another --db.") from None
        check_path_length(str(path))
        return URL.create("sqlite", database=str(path))
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        raise UserError(f"'{mask_unparsed(url)}' is not a database URL; give a file path, "
                        "sqlite:///PATH or postgresql://USER@HOST/DB.") from None
    backend = parsed.get_backend_name()
    if backend in ("postgresql", "postgres"):
        # SQLAlchemy's default PostgreSQL driver is psycopg2; we ship psycopg 3.
        if parsed.drivername in ("postgresql", "postgres"):
            parsed = parsed.set(drivername="postgresql+psycopg")
        elif parsed.drivername == "postgres+psycopg":
            parsed = parsed.set(drivername="postgresql+psycopg")
        if parsed.drivername == "postgresql+psycopg" and importlib.util.find_spec("psycopg") is None:
            raise UserError("a PostgreSQL database needs the psycopg package, which is not installed; "
                            "install rtgauge's postgres extra: pip install 'rtgauge[postgres]'.")
        return parsed
    if backend == "sqlite":
        if parsed.database in (None, "", ":memory:") or "mode=memory" in (parsed.database or "") \
                or parsed.query.get("mode") == "memory":
            raise UserError(f"'{mask_url(url)[:80]}' is an in-memory database, which keeps nothing after the "
                            "command; give a file path or sqlite:///PATH.")
        if parsed.database and parsed.database != ":memory:" and not parsed.database.startswith("file:"):
            check_path_length(parsed.database)
        return parsed
    raise UserError(f"rtgauge stores results in SQLite or PostgreSQL, not '{parsed.drivername}'; "
                    "give a file path, sqlite:///PATH or postgresql://USER@HOST/DB.")


def database_to_read(given: str | None) -> tuple[URL, bool]:
    """The database a reading command (show, compare, report, export, pwcet) reads, the
    choice resolved (--db, $RTGAUGE_DB, the config file) and parsed once, and whether it
    is there: False when nobody named one and the default file does not exist yet (there
    are no runs yet). A database that was named and is not there is an error, not an
    empty list, and nothing is created by looking."""
    chosen = config.database(given)
    url = parse_url(default_db_url() if chosen is None else chosen)
    path = sqlite_file(url)
    if path is None or path.exists():
        return url, True
    if chosen is None:
        return url, False
    source = "--db" if given is not None else (config.ENV_DB if config.ENV_DB in os.environ and
                                                 os.environ[config.ENV_DB] else "the config file's db")
    relative = (f" ({chosen} is relative to this directory: three slashes)"
                if "://" in chosen and not path.is_absolute() else "")
    raise UserError(f"there is no results database at {path.absolute()}{relative}, as {source} says; give an "
                    f"existing one ({DB_FORMS}), or `rtgauge run` with that database makes it.")


def check_encodable(url: str) -> None:
    """A --db that is not valid UTF-8 (bytes the shell passed through) cannot be a URL."""
    try:
        url.encode("utf-8")
    except UnicodeEncodeError:
        shown = url.encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace")
        raise UserError(f"the database path {shown[:80]} is not valid UTF-8; rename the directory or give "
                        "another --db.") from None


def check_path_length(path: str) -> None:
    name_max = max(len(part.encode()) for part in path.split("/"))
    if name_max > 255 or len(path.encode()) > 4095:
        raise UserError(f"the database path {path[:60]}… is longer than the file system allows (255 bytes a "
                        "name, 4095 in all); give a shorter --db.")


def mask_unparsed(url: str) -> str:
    """A URL SQLAlchemy could not parse, with its secrets hidden (rtgauge/redact.py)."""
    return mask_url(url)


def display_url(url: URL) -> str:
    """The URL to show the user: password hidden, and our default driver left out
    so it reads as the postgresql://... they typed."""
    if url.drivername == "postgresql+psycopg":
        url = url.set(drivername="postgresql")
    return mask_url(url.render_as_string(hide_password=False))


def sqlite_file(url: URL) -> Path | None:
    """The file behind an SQLite URL; None for other backends and in-memory."""
    if url.get_backend_name() != "sqlite":
        return None
    database = url.database or ""
    if database in ("", ":memory:") or database.startswith("file:"):
        return None
    return Path(database)
