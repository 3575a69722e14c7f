"""The one gate for data from outside (`rtgauge import`, a spool file): parse strictly,
check against a JSON schema, then read it the way show, report, compare and export
will, all before anything is stored.

- parsing: NaN, Infinity and numbers that overflow a float are refused, integers must
  fit the store's 64-bit columns, nesting deeper than MAX_DEPTH is refused (a 10^5-deep
  document would otherwise overflow the interpreter's stack);
- the schema (EXPORT_SCHEMA, ENGINE_DOCUMENT_SCHEMA): the shape of an exported run and
  of an engine document (docs/engine.md), with every string bounded;
- the dry read: the run, as the store would give it back, is summarised, rendered as
  text and as HTML in memory; anything those readers cannot take is refused here
  rather than breaking `rtgauge show` or `report` later.

Each failure is one UserError sentence naming the file and the place in it."""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

import jsonschema
import numpy as np

from rtgauge.bounds import CPU_NUMBER_MAX
from rtgauge.errors import UserError
from rtgauge.records import EXPORT_FORMAT, Run
from rtgauge.store import codec, kinds
from rtgauge.store.store import measurement_row, verdict_rows_of

MAX_DEPTH = 64
INT_LIMIT = 2**63 - 1
NAME_MAX = 200          # job, test, condition, tool names; also a profile name
TEXT_MAX = 10_000       # notes, errors, doctor values and advice
# Bytes of one import file. Parsed JSON takes ~10-25x its text in Python objects, and the
# import holds the parsed run, its stored form and a dry read at once: bench/import.py
# measures resident memory per MiB of export; FILE_MAX keeps the whole import under
# MEMORY_BOUND_TEXT (docs/store.md, "Import").
FILE_MAX = 64 * 1024**2
MEMORY_BOUND_TEXT = "2 GiB"

INT64 = {"type": "integer", "minimum": -INT_LIMIT, "maximum": INT_LIMIT}
# a name (job, test, tool, condition, metric, verdict) holds no control character: C0, DEL,
# C1 (an ESC or a newline in a name breaks every table and terminal it reaches)
NAME_PATTERN = "^[^\\x00-\\x1f\\x7f-\\x9f]*\\Z"
NAME = {"type": "string", "minLength": 1, "maxLength": NAME_MAX, "pattern": NAME_PATTERN}
SHORT_NAME = {"type": ["string", "null"], "maxLength": NAME_MAX, "pattern": NAME_PATTERN}
SHORT = {"type": ["string", "null"], "maxLength": NAME_MAX}
TEXT = {"type": ["string", "null"], "maxLength": TEXT_MAX}
NUMBER_OR_NULL = {"type": ["number", "null"]}
COUNT = {"type": "integer", "minimum": 0, "maximum": INT_LIMIT}

HISTOGRAM = {
    "type": "object",
    "properties": {
        "scheme": {"type": "string", "maxLength": NAME_MAX},
        "sub_buckets": {"type": "integer", "minimum": 1, "maximum": 1 << 20},
        "bins": {"type": "array", "items": {"type": "array", "minItems": 3, "maxItems": 3,
                                            "prefixItems": [INT64, INT64, COUNT]}},
    },
}
LINEAR = {
    "type": "object",
    "properties": {
        "bucket_ns": {"type": "integer", "minimum": 1, "maximum": INT_LIMIT},
        "overflow": COUNT,
        "counts": {"type": "array", "items": COUNT},
    },
}
METRIC = {
    "type": "object",
    "properties": {
        "unit": {"type": ["string", "null"], "maxLength": NAME_MAX},
        "kind": {"type": "string", "maxLength": NAME_MAX},
        "value": {"type": ["number", "string", "boolean", "null"]},
        "count": {"type": ["integer", "null"], "minimum": 0, "maximum": INT_LIMIT},
        **{k: NUMBER_OR_NULL for k in ("min", "avg", "stddev", "p50", "p90", "p99", "p999", "p9999")},
        "max": {"type": ["number", "null", "array"], "items": NUMBER_OR_NULL},
        "histogram": HISTOGRAM,
        "linear": LINEAR,
        "window_ns": {"type": ["integer", "null"], "minimum": 0, "maximum": INT_LIMIT},
        "start_ns": {"type": ["integer", "null"], "minimum": -INT_LIMIT, "maximum": INT_LIMIT},
    },
    # a counter (unit "count": cycles, misses, skipped, …) is a non-negative integer
    "if": {"required": ["unit"], "properties": {"unit": {"const": "count"}}},
    "then": {"properties": {"value": {"type": ["integer", "null"], "minimum": 0, "maximum": INT_LIMIT}}},
}
VERDICT = {
    "type": "object",
    "required": ["pass"],
    "properties": {"pass": {"type": "boolean"}, "detail": TEXT},
}
ENV = {
    "type": "object",
    "properties": {
        **{k: SHORT for k in ("hostname", "kernel", "kernel_version", "machine", "preempt_model",
                             "preempt_mode", "clocksource", "policy", "clock", "dma_latency")},
        "online_cpus": {"type": ["integer", "null"], "minimum": 0, "maximum": 1 << 20},
        "fallback": {"type": ["boolean", "null"]},
        "threads": {"type": "array", "maxItems": CPU_NUMBER_MAX, "items": {"type": "object"}},
        "run_start_ns": {"type": ["integer", "null"]},
        "run_end_ns": {"type": ["integer", "null"]},
        "period_ns": {"type": ["integer", "null"], "minimum": 1, "maximum": INT_LIMIT},
    },
}
ENGINE_DOCUMENT_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "rtgauge engine document (docs/engine.md)",
    "type": "object",
    "required": ["schema", "test"],
    "properties": {
        "schema": {"type": "integer", "minimum": 1, "maximum": 1000},
        "test": NAME,
        "tool": SHORT_NAME,
        "ok": {"type": "boolean"},
        "interrupted": {"type": "boolean"},
        "error": TEXT,
        "params": {"type": "object"},
        "env": ENV,
        "metrics": {"type": "object", "propertyNames": {"maxLength": NAME_MAX, "pattern": NAME_PATTERN},
                    "additionalProperties": METRIC},
        "verdicts": {"type": "object", "propertyNames": {"maxLength": NAME_MAX, "pattern": NAME_PATTERN},
                     "additionalProperties": VERDICT},
    },
}
SYSTEM = {
    "type": "object",
    "properties": {
        **{k: SHORT for k in ("hostname", "machine_id", "kernel_release", "kernel_version", "arch",
                             "cpu_model", "preempt_model", "facts_source")},
        "cpus": {"type": ["integer", "null"], "minimum": 0, "maximum": 1 << 20},
    },
}
DOCTOR_CHECK = {
    "type": "object",
    "properties": {"name": SHORT, "status": SHORT, "value": TEXT, "advice": TEXT},
}
MEASUREMENT = {
    "type": "object",
    "required": ["name", "document"],
    "properties": {
        "name": NAME,
        "tool": SHORT_NAME, "test": SHORT_NAME, "condition": SHORT_NAME,
        "reference": {"type": ["boolean", "null"]},
        "round": {"type": ["integer", "null"], "minimum": 1, "maximum": 2**31 - 1},
        "segment": {"type": ["integer", "null"], "minimum": 1, "maximum": 2**31 - 1},
        "ok": {"type": ["boolean", "null"]},
        "interrupted": {"type": ["boolean", "null"]},
        "error": TEXT,
        "exit_status": {"type": ["integer", "null"], "minimum": -(2**31), "maximum": 2**31 - 1},
        "load": {"type": ["object", "null"]},
        "command": {"type": ["array", "null"], "items": {"type": "string", "maxLength": TEXT_MAX}},
        "started_at": SHORT,
        "duration_s": {"type": ["number", "null"], "minimum": 0},
        "document": ENGINE_DOCUMENT_SCHEMA,
    },
}
ORIGIN = {
    "type": ["object", "null"],
    "properties": {"format": SHORT, "file": {"type": ["string", "null"], "maxLength": 1000},
                   "identity": {"type": "string", "minLength": 1, "maxLength": 400},
                   "run": {"type": ["integer", "null"]}, "host": SHORT,
                   "original": {"type": "object", "properties": {
                       "run": {"type": ["integer", "null"]}, "started_at": SHORT, "machine": SHORT}},
                   "first": {"type": "object", "properties": {"format": SHORT, "identity": TEXT}}},
}
RUN = {
    "type": "object",
    "required": ["system", "measurements"],
    "properties": {
        "id": {"type": ["integer", "null"]},
        "origin": ORIGIN,
        "status": SHORT, "note": TEXT, "profile": SHORT, "profile_source": {"type": ["string", "null"]},
        "started_at": SHORT, "finished_at": SHORT,
        "argv": {"type": ["array", "null"], "items": {"type": "string", "maxLength": TEXT_MAX}},
        "system": SYSTEM,
        "doctor": {"type": ["array", "null"], "items": DOCTOR_CHECK},
        "measurements": {"type": "array", "items": MEASUREMENT},
    },
}
EXPORT_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": f"urn:rtgauge:export:{EXPORT_FORMAT}",
    "title": f"rtgauge export format {EXPORT_FORMAT} (rtgauge export RUN --format json)",
    "type": "object",
    "required": ["rtgauge_export", "run"],
    "properties": {"rtgauge_export": {"const": EXPORT_FORMAT}, "rtgauge_version": SHORT, "exported_at": SHORT,
                   "spooled_because": TEXT,
                   "run": RUN},
}


# -- parsing -------------------------------------------------------------------------

def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is too large")
    return value


def _int64(text: str) -> int:
    # called for every integer of a file (millions in a long series): one int(), no copies
    if len(text) <= 20:
        value = int(text)
        if -INT_LIMIT <= value <= INT_LIMIT:
            return value
    raise ValueError(f"the integer {text[:40]}{'…' if len(text) > 40 else ''} does not fit 64 bits")


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number rtgauge stores")


def loads_strict(text: str):
    """json.loads that refuses NaN, Infinity, overflowing floats and integers beyond
    64 bits (ValueError), and deep nesting (RecursionError)."""
    return json.loads(text, parse_float=_finite, parse_int=_int64, parse_constant=_no_constant)


def depth_exceeds(value, limit: int = MAX_DEPTH) -> bool:
    """Whether a parsed value nests deeper than `limit` (its containers only are walked)."""
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if d > limit:
            return True
        items = v.values() if isinstance(v, dict) else v
        stack.extend((x, d + 1) for x in items if isinstance(x, (dict, list)))
    return False


_OPEN = np.zeros(256, np.int8)
_OPEN[[ord("["), ord("{")]] = 1
_OPEN[[ord("]"), ord("}")]] = -1
_CHUNK = 4 * 1024**2

# What a parsed JSON element takes in Python at most (CPython 3.11, 64-bit, pymalloc's
# 16-byte classes; the worst shapes of each measured with tracemalloc, and the whole
# parse's peak in bench/parse_bound.py): an object 64 B empty, 184 B with a key (its
# table); an array 56 B; an item's slot in its container plus its number (an int beyond
# 2^30 is 36 B, a float 24 B); a key's slot (a dict's resize holds old and new tables a
# moment); a string 49 B plus its characters at the text's widest character (1, 2 or 4
# bytes).
COST_OBJECT, COST_ARRAY, COST_KEY, COST_ITEM, COST_STRING = 256, 96, 48, 64, 64


@dataclass
class JsonCost:
    """What parsing a JSON text will take, read from its bytes before it is parsed:
    its depth, its elements, the size of its decoded text and an upper bound of the
    memory the parse holds (the bytes, the text and the parsed values)."""
    depth: int
    elements: int
    text_bytes: int
    memory: int


def json_cost(data: bytes) -> JsonCost:
    """The cost of parsing `data` (UTF-8 JSON), read with numpy in 4 MiB pieces (the look
    holds a few times a piece, never a copy of the text): which bytes are inside strings
    (a quote counts unless an odd run of backslashes is before it), the structure
    outside them, the depth of the brackets and the widest character."""
    arr = np.frombuffer(data, np.uint8)
    top = continuation = inside_bytes = quotes = depth = level = 0
    counts = dict.fromkeys(b"{[:,", 0)
    state = 0            # 1: the piece starts inside a string
    backslashes = 0      # the run of backslashes the piece starts after
    for i in range(0, arr.size, _CHUNK):
        piece = arr[i:i + _CHUNK]
        n = piece.size
        top = max(top, int(piece.max()))
        continuation += int(np.count_nonzero((piece & 0xC0) == 0x80))
        slash = piece == 92
        index = np.arange(n, dtype=np.int32)
        last_other = np.maximum.accumulate(np.where(slash, np.int32(-1), index))   # the last non-backslash up to i
        at = np.flatnonzero(piece == 34).astype(np.int32)       # quotes
        before = np.where(at > 0, last_other[np.maximum(at - 1, 0)], -1)
        run = (at - 1) - before                                  # backslashes right before each quote
        run = np.where(before < 0, run + backslashes, run)       # ... counting those ending the last piece
        real = at[(run & 1) == 0]
        del last_other, before, run
        toggle = np.zeros(n, np.uint8)
        toggle[real] = 1
        inside = np.bitwise_xor.accumulate(toggle) ^ np.uint8(state)   # 1 inside a string (its closing quote: 0)
        del toggle
        state = int(inside[-1])
        tail = np.flatnonzero(~slash)
        backslashes = n - 1 - int(tail[-1]) if tail.size else backslashes + n
        del tail, slash, index
        quotes += real.size
        inside_bytes += int(np.count_nonzero(inside))
        outside = piece[inside == 0]
        del inside
        for c in counts:
            counts[c] += int(np.count_nonzero(outside == c))
        steps = np.cumsum(_OPEN[outside], dtype=np.int64) + level
        if steps.size:
            depth, level = max(depth, int(steps.max())), int(steps[-1])
        del outside, steps
    width = 4 if top >= 0xF0 else 2 if top >= 0xC4 else 1      # the decoded str's bytes a character
    text_bytes = 49 + (len(data) - continuation) * width
    strings = (quotes + 1) // 2
    objects, arrays, keys, items = counts[ord("{")], counts[ord("[")], counts[ord(":")], counts[ord(",")] + 1
    parsed = (COST_OBJECT * objects + COST_ARRAY * arrays + COST_KEY * keys + COST_ITEM * items
              + COST_STRING * strings + inside_bytes * width)
    return JsonCost(depth, objects + arrays + keys + items + strings, text_bytes, len(data) + text_bytes + parsed)


def text_depth_exceeds(text: str, limit: int = MAX_DEPTH) -> bool:
    """Whether JSON text nests deeper than `limit`, read from the text before it is
    parsed (json_cost: in C and numpy; walking a parsed file of millions of values
    took seconds)."""
    return json_cost(text.encode("utf-8", "surrogatepass")).depth > limit


# Bytes of one document from a tool or a board (doc.json), and what its parse may hold
# (json_cost(...).memory): with the process's own ~100 MB, the bytes as read and the
# document stored as text, a run stays under the host's 512 MB whatever a board sends
# (docs/design.md "Bounded reads"; bench/parse_bound.py measures it).
DOCUMENT_MAX = 64 * 1024**2
DOCUMENT_PARSE_MAX = 256 * 1024**2
# What one import's parses may hold together (a file, or every document of a directory):
# the import holds its stored form and a dry read beside the parse, up to 3.5 times the
# cost on the worst shapes (floats, integers in params: bench/parse_bound.py), so this
# keeps an import under MEMORY_BOUND_TEXT; a valid export of a long window series passes
# up to about 53 MiB (8.4 bytes of cost a byte of its text).
IMPORT_PARSE_MAX = 448 * 1024**2


class ParseBudget:
    """What the parses of one reading (a document, an import: every file of a directory
    together) may hold: each parse takes its json_cost from it before it is parsed."""

    def __init__(self, total: int, what: str, fix: str, fix_size: str):
        self.left, self.total, self.what, self.fix, self.fix_size = total, total, what, fix, fix_size

    def take(self, cost: "JsonCost", where: str) -> None:
        if cost.memory > self.left:
            spent = f" with what was read before it" if self.left < self.total else ""
            raise UserError(f"{where} would take about {cost.memory / 1024**2:,.0f} MiB of memory to read "
                            f"({cost.elements:,} JSON values){spent}, more than {self.what} may hold "
                            f"({self.total // 1024**2:,} MiB); {self.fix_size}")
        self.left -= cost.memory


def parse_json_bytes(data: bytes, where: str, budget: ParseBudget):
    """UTF-8 JSON bytes parsed strictly, after their cost is known and taken from budget:
    depth, elements and memory are bounded before anything is materialised."""
    try:
        cost = json_cost(data)
        if cost.depth > MAX_DEPTH:
            raise RecursionError
        budget.take(cost, where)
        text = data.decode("utf-8")
        value = loads_strict(text)
        del text
        return value
    except UnicodeDecodeError as e:
        raise UserError(f"{where} is not UTF-8 text (byte {e.start}); {budget.fix}") from None
    except RecursionError:
        raise UserError(f"{where} nests deeper than rtgauge reads ({MAX_DEPTH} levels); {budget.fix}") from None
    except json.JSONDecodeError as e:
        raise UserError(f"{where} is not valid JSON (line {e.lineno}: {e.msg}); {budget.fix}") from None
    except ValueError as e:
        raise UserError(f"{where}: {e}; rtgauge stores finite numbers and 64-bit integers only.") from None
    except MemoryError:
        raise UserError(f"{where} does not fit in the memory this process may use; raise the memory limit "
                        "or give a smaller file.") from None


def parse_document(data: bytes, where: str):
    """A tool's document (the engine's doc.json, here or from a board): at most
    DOCUMENT_MAX bytes and DOCUMENT_PARSE_MAX of parse, UTF-8, strict JSON (no NaN,
    64-bit integers), at most MAX_DEPTH deep; else UserError with one sentence."""
    if len(data) > DOCUMENT_MAX:
        raise UserError(f"{where} is larger than rtgauge reads ({DOCUMENT_MAX // 1024**2} MiB)")
    return parse_json_bytes(data, where, ParseBudget(DOCUMENT_PARSE_MAX, "a document",
                                                     "the tool did not write a document rtgauge reads.",
                                                     "the tool wrote more than a document rtgauge reads."))


def import_budget() -> ParseBudget:
    return ParseBudget(IMPORT_PARSE_MAX, "an import",
                       "give an rtgauge export, a database or engine documents.",
                       "split it, or import fewer documents at once.")


def read_bytes_file(path: Path, total: list[int] | None = None) -> bytes:
    """A file's bytes, at most FILE_MAX (and, given `total`, at most what is left of
    the FILE_MAX of a whole directory: total[0] bytes); one sentence for whatever is wrong."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > FILE_MAX:
                raise UserError(f"{path} is {size / 1024**2:,.0f} MiB, more than an import takes "
                                f"({FILE_MAX // 1024**2} MiB, which keeps the import under {MEMORY_BOUND_TEXT} "
                                "of memory); split it or export fewer runs.")
            data = f.read(FILE_MAX + 1)
        if len(data) > FILE_MAX:
            raise UserError(f"{path} grew past {FILE_MAX // 1024**2} MiB while being read; import a finished file.")
        if total is not None:
            total[0] -= len(data)
            if total[0] < 0:
                raise UserError(f"the files of {path.parent} are more than an import takes together "
                                f"({FILE_MAX // 1024**2} MiB); import them in smaller directories.")
        return data
    except MemoryError:
        raise UserError(f"{path} does not fit in the memory this process may use; raise the memory limit "
                        "or import a smaller file.") from None
    except OSError as e:
        raise UserError(f"cannot read {path} ({e.strerror}); check the path.") from None


def read_text_file(path: Path) -> str:
    """A file's text (a tool's text output), at most FILE_MAX bytes, UTF-8, and at most
    twice that decoded (a character beyond U+FFFF makes Python's text 4 bytes a
    character); one sentence for whatever is wrong."""
    data = read_bytes_file(path)
    try:
        if json_cost(data).text_bytes > 2 * FILE_MAX:
            raise UserError(f"{path} holds characters that would take more than {2 * FILE_MAX // 1024**2} MiB "
                            "as text; give the tool's output unchanged.")
        text = data.decode("utf-8")
        del data
        other = sorted(c for c in set(text) if c.isdigit() and not c.isascii())
        if other:        # int() reads '٣' as 3: a tool writes its numbers in ASCII digits
            raise UserError(f"{path} holds digits of another script than ASCII ({ascii(other[0])}), which no tool "
                            "rtgauge reads writes; give the tool's output unchanged.")
        return text
    except UnicodeDecodeError as e:
        raise UserError(f"{path} is not UTF-8 text (byte {e.start}); give an rtgauge export or an engine "
                        "document.") from None
    except MemoryError:
        raise UserError(f"{path} does not fit in the memory this process may use; raise the memory limit "
                        "or import a smaller file.") from None


def read_json_file(path: Path, budget: ParseBudget | None = None, total: list[int] | None = None):
    """A file's JSON, strictly parsed, its cost taken from `budget` (an import's, by
    default a new one) before it is parsed; one sentence for whatever is wrong with it."""
    data = read_bytes_file(path, total)
    return parse_json_bytes(data, str(path), budget or import_budget())


# -- the schema ----------------------------------------------------------------------

def where_in(error: jsonschema.ValidationError) -> str:
    parts = [str(p) for p in error.absolute_path]
    return "/".join(parts) if parts else "the top level"


JSON_TYPES = {dict: "an object", list: "a list", str: "text", bool: "a boolean", int: "an integer",
              float: "a number", type(None): "null"}


def short(value) -> str:
    text = json.dumps(value) if not isinstance(value, (dict, list)) else JSON_TYPES[type(value)]
    return text if len(text) <= 40 else text[:40] + "…"


def describe(error: jsonschema.ValidationError) -> str:
    """The schema error in words, without echoing a huge value."""
    v, limit, value = error.validator, error.validator_value, error.instance
    if v == "maxLength":
        return f"the text is {len(value):,} characters long, more than {limit:,}"
    if v == "type":
        wanted = " or ".join(limit) if isinstance(limit, list) else limit
        return f"{short(value)} is {JSON_TYPES.get(type(value), 'something else')}, expected {wanted}"
    if v in ("minimum", "maximum"):
        return f"{short(value)} is out of range ({v} {limit})"
    if v == "pattern" and limit == NAME_PATTERN:
        return f"the name {short(shown_place(str(value)))} holds a control character, which a name may not hold"
    if v in ("const", "enum"):
        return f"{short(value)} is not {'one of ' + ', '.join(map(str, limit)) if v == 'enum' else limit}"
    message = error.message
    return message if len(message) <= 160 else message[:160] + "…"


def check_schema(data, schema: dict, where: str, what: str, fix: str) -> None:
    validator = jsonschema.Draft202012Validator(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is not None:
        raise UserError(f"{where} is not a valid {what}: at {where_in(error)}, {describe(error)}; {fix}")


def first_at(value, bad, path: str = "") -> str | None:
    """Where the first string, key or number for which bad(x) holds is in value (None if
    nowhere), as a path of keys and indices."""
    stack = [(value, path)]
    while stack:
        v, p = stack.pop()
        if isinstance(v, dict):
            for k, x in v.items():
                if bad(k):
                    return f"{p}/{k!r}".lstrip("/")
                stack.append((x, f"{p}/{k}".lstrip("/")))
        elif isinstance(v, list):
            stack.extend((x, f"{p}/{i}".lstrip("/")) for i, x in enumerate(v))
        elif bad(v):
            return p or "the top level"
    return None


def nul_at(value, path: str = "") -> str | None:
    """Where a NUL character is in value's strings or keys (None if nowhere). Whether
    there is one is asked first of the value's JSON text (made in C, where a NUL is
    written \\u0000): the walk that names the place, seconds on millions of values, is
    taken only when there is one."""
    try:
        if "\\u0000" not in json.dumps(value):
            return None
    except (TypeError, ValueError):
        pass                      # not JSON-able (a value not from a file): walked
    return first_at(value, lambda x: isinstance(x, str) and "\x00" in x, path)


def shown_place(place: str) -> str:
    """A place in a file as one printable line (a key may hold anything)."""
    text = place[:200].encode("utf-8", "backslashreplace").decode("utf-8")
    return re.sub(r"[\x00-\x1f\x7f-\x9f]", lambda m: f"\\x{ord(m.group()):02x}", text)


def _lone_surrogate(x) -> bool:
    if not isinstance(x, str):
        return False
    try:
        x.encode("utf-8")
        return False
    except UnicodeEncodeError:
        return True


def _not_finite(x) -> bool:
    return isinstance(x, float) and not math.isfinite(x)


def check_clean(data, where: str) -> None:
    """What every backend stores and every reader shows, before anything is stored: no
    NaN or Infinity (a tool's text can say 1e999), no NUL (PostgreSQL cannot store it in
    text; it cuts terminals and CSV short), no lone surrogate (a "\\ud800" escape, a file
    name that is not UTF-8: UTF-8 cannot encode it, so SQLite and PostgreSQL failed
    mid-store). One sentence naming the place; the JSON text, made in C, is asked first."""
    try:
        text = json.dumps(data, allow_nan=False, ensure_ascii=False)
    except ValueError:
        place = first_at(data, _not_finite)
        raise UserError(f"{where} holds a number that is not finite (NaN or Infinity) at {shown_place(place or '?')}, "
                        "which rtgauge does not store; give the tool's output unchanged.") from None
    except (TypeError, RecursionError):
        return
    if "\\u0000" in text:
        check_no_nul(data, where)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        place = first_at(data, _lone_surrogate)
        raise UserError(f"{where} holds text that is not Unicode (a lone surrogate, such as \\ud800) at "
                        f"{shown_place(place or '?')}, which rtgauge does not store; remove it from the file.") from None


def check_no_nul(data, where: str) -> None:
    """PostgreSQL cannot store a NUL character in text; SQLite can but the readers of its
    text (terminals, the report, CSV) are cut short by it. Refused on every backend alike."""
    found = nul_at(data)
    if found is not None:
        raise UserError(f"{where} holds a NUL character (\\u0000) at {shown_place(found)}, which rtgauge does not "
                        "store; remove it from the file.")


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def check_values(doc: dict, where: str) -> None:
    """The figures of each metric agree with one another: min <= avg <= max (a
    distribution whose average is above its maximum is not one that was measured)."""
    for name, metric in (doc.get("metrics") or {}).items():
        if not isinstance(metric, dict):
            continue
        lo, avg, hi = metric.get("min"), metric.get("avg"), metric.get("max")
        known = [v for v in (lo, avg, hi) if _number(v)]
        slack = 1e-9 * max((abs(v) for v in known), default=0)
        if len(known) >= 2 and any(a > b + slack for a, b in zip(known, known[1:])):
            shown = ", ".join(f"{k} {short(v)}" for k, v in (("min", lo), ("avg", avg), ("max", hi)) if _number(v))
            raise UserError(f"{where} is not a valid engine document: at metrics/{shown_place(str(name))}, {shown} "
                            "do not hold min <= avg <= max; give the tool's output unchanged.")


# Metrics an older engine labelled "count" though they are means (engines before
# 2026-12-02: the tire solvers' nswitch_per_step, unplanned switches per thread and step).
# Their stored documents carry fractional values under "count", which the counter rule
# refuses; read as the engine labels them now.
RELABELLED = {"nswitch_per_step": "count/step"}


def relabel_legacy(metrics) -> None:
    """In place: a RELABELLED metric stored under unit "count" gets its unit now."""
    if not isinstance(metrics, dict):
        return
    for name, unit in RELABELLED.items():
        m = metrics.get(name)
        if isinstance(m, dict) and m.get("unit") == "count":
            m["unit"] = unit


def check_export(data, where: str) -> dict:
    run = data.get("run") if isinstance(data, dict) else None
    for m in (run.get("measurements") if isinstance(run, dict) else None) or []:
        if isinstance(m, dict):
            relabel_legacy(m.get("metrics"))
            relabel_legacy((m.get("document") or {}).get("metrics") if isinstance(m.get("document"), dict) else None)
    check_clean(data, where)
    check_schema(data, EXPORT_SCHEMA, where, "rtgauge export",
                 "make it with `rtgauge export RUN --format json`.")
    for i, m in enumerate(data["run"]["measurements"]):
        check_values(m["document"], f"{where} measurement {i + 1}")
    return data["run"]


def check_engine_document(doc, where: str) -> dict:
    if isinstance(doc, dict):
        relabel_legacy(doc.get("metrics"))
    check_clean(doc, where)
    check_schema(doc, ENGINE_DOCUMENT_SCHEMA, where, "engine document",
                 "give the engine's --out file unchanged.")
    check_values(doc, where)
    return doc


# -- the dry read ----------------------------------------------------------------------

def as_stored(run: dict) -> Run:
    """The run as Store.get_run would return it after storing (same conversions, the
    same record)."""
    measurements = []
    for i, m in enumerate(run.get("measurements") or []):
        doc = m["document"]
        row = measurement_row(0, {k: m.get(k) for k in ("name", "tool", "test", "condition", "reference",
                                                         "round", "segment", "load", "started_at", "duration_s",
                                                         "exit_status", "command", "error")}, doc)
        out = {k: v for k, v in row.items() if k != "run_id" and (v is not None or k not in ("round", "segment"))}
        out["id"] = i + 1
        for key in ("params", "env", "load"):
            out[key] = json.loads(out[key])
        out["command"] = json.loads(out["command"])
        out["document"] = json.loads(out["document"])
        metrics = {}
        info = kinds.declared_test(m, doc)
        for name, metric in (doc.get("metrics") or {}).items():
            if isinstance(metric, dict):
                mrow, arrays = codec.metric_rows(str(name), metric, kinds.metric_kind(info, str(name), metric))
                back = codec.metric_from_rows(mrow, [{"layout": a.layout, **a.row} for a in arrays])
                metrics[str(name)] = {"kind": mrow["kind"], **back}
        out["metrics"] = metrics
        out["verdicts"] = {v["name"]: {"pass": v["pass"], "detail": v["detail"]}
                           for v in verdict_rows_of(0, doc.get("verdicts"))}
        measurements.append(out)
    system = run.get("system") or {}
    return Run.from_dict({
        "id": run.get("id") or 0, "status": str(run.get("status") or "complete"),
        "note": str(run.get("note") or ""), "profile": str(run.get("profile") or "imported"),
        "profile_source": str(run.get("profile_source") or ""), "started_at": run.get("started_at"),
        "finished_at": run.get("finished_at"), "argv": list(run.get("argv") or []),
        "system": system, "doctor": list(run.get("doctor") or []),
        "hostname": str(system.get("hostname") or ""), "kernel_release": str(system.get("kernel_release") or ""),
        "measurements": measurements})
