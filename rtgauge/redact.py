"""Secrets out of everything rtgauge shows or keeps: database URLs are masked by their
structure (SQLAlchemy's URL parser: the userinfo password, and query parameters that
carry a secret such as ?password= or ?sslpassword=), never by replacing a substring,
which both leaks (`?password=` is not the userinfo password) and mangles unrelated
words. The password reaches rtgauge without appearing in argv through RTGAUGE_DB,
PGPASSWORD or ~/.pgpass (docs/store.md)."""

from __future__ import annotations

import re

from sqlalchemy.engine import make_url

MASK = "***"
# query parameters (libpq's and any driver's) whose value is a secret or says where one is
SECRET_KEYS = re.compile(r"pass|secret|token|sslkey|key$", re.IGNORECASE)
_URL_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>`]+")
# key=value pairs of a libpq connection string or a query ("password=x", "sslpassword='x y'")
_KEY_VALUE = re.compile(r"(?P<key>\b[A-Za-z_]*(?:pass|secret|token)[A-Za-z_]*)(?P<eq>\s*=\s*)"
                        r"(?P<value>'(?:[^'\\]|\\.)*'|[^\s&;,'\"]+)", re.IGNORECASE)


def has_secret(url: str) -> bool:
    return mask_url(url) != url


def mask_url(url: str) -> str:
    """url with its password and secret query parameters replaced by ***; unchanged when
    it carries none (so a URL without a secret is shown exactly as given)."""
    if "://" not in url:
        return url
    try:
        parsed = make_url(url)
    except Exception:
        return _mask_unparsed(url)
    changed = False
    if parsed.password is not None:
        parsed = parsed.set(password=MASK)
        changed = True
    query = dict(parsed.query)
    for key in query:
        if SECRET_KEYS.search(key):
            query[key] = MASK
            changed = True
    if not changed:
        return url
    rendered = parsed.set(query=query).render_as_string(hide_password=False)
    return rendered.replace("%2A%2A%2A", MASK)


def _mask_unparsed(url: str) -> str:
    """A URL SQLAlchemy cannot parse: hide the userinfo after its first ':' and any
    secret key=value, by position in the URL's structure (scheme://userinfo@host?query)."""
    scheme, _, rest = url.partition("://")
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        userinfo, _, host = authority.rpartition("@")
        if ":" in userinfo:
            userinfo = userinfo.split(":", 1)[0] + ":" + MASK
        authority = f"{userinfo}@{host}"
    return _KEY_VALUE.sub(_mask_pair, f"{scheme}://{authority}{slash}{path}")


def _mask_pair(m: re.Match) -> str:
    return f"{m['key']}{m['eq']}{MASK}"


def mask_text(text: str, secrets: tuple[str | None, ...] = ()) -> str:
    """A message with every URL in it masked (mask_url), every secret key=value pair
    masked, and each of `secrets` (a password rtgauge knows, of 6 characters or more) masked
    where it stands as a whole word between spaces or quotes, never inside another word or
    number (a password "1" must not turn 127.0.0.1 into ***.0.0.1)."""
    text = _URL_TOKEN.sub(lambda m: mask_url(m.group(0)), text)
    text = _KEY_VALUE.sub(_mask_pair, text)
    for secret in secrets:
        if secret and len(secret) >= 6:
            text = re.sub(rf"(?<![^\s'\"=:]){re.escape(secret)}(?![^\s'\",;])", MASK, text)
    return text


def redact_argv(argv: list[str]) -> list[str]:
    """argv as it may be stored or shown: every URL (`--db URL`, `--db=URL`) masked."""
    out = []
    for arg in argv:
        arg = str(arg)
        if "://" in arg:
            option, eq, value = arg.partition("=")
            if eq and option.startswith("-") and "://" in value:
                arg = f"{option}={mask_url(value)}"
            else:
                arg = mask_text(arg)
        out.append(arg)
    return out
