"""Translate one contract METRIC (scalar, distribution or series) to table rows
and back. Known fields go to typed columns; anything a column cannot hold exactly
(an unknown key, an explicit null, a huge integer) goes to an `extra` JSON column,
so a metric read back equals the metric written."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

STAT_FIELDS = ("min", "avg", "stddev", "p50", "p90", "p99", "p999", "p9999", "max")
# Floats represent integers exactly only up to 2**53; larger ones go to extra.
EXACT_FLOAT_LIMIT = 2**53


@dataclass
class ArrayRows:
    """One histograms row (and, for log-linear, its bin rows)."""

    layout: str
    row: dict
    bins: list[tuple[int, int, int]] = field(default_factory=list)


def to_json(value) -> str:
    return json.dumps(value, separators=(",", ":"), default=str)


def from_json(text: str | None, default=None):
    return default if text is None else json.loads(text)


def is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def fits_float_column(value) -> bool:
    if isinstance(value, float):
        return True
    return is_int(value) and abs(value) <= EXACT_FLOAT_LIMIT


def fits_int_column(value) -> bool:
    return is_int(value) and abs(value) < 2**63


def shape_kind(metric: dict) -> str:
    """The kind a metric's keys show: the fallback for a document no catalogue
    describes (another tool's, rtgauge's own Python-side measurements, a metric this
    engine does not declare; rtgauge/store/kinds.py)."""
    if "histogram" in metric or "count" in metric:
        return "distribution"
    if "window_ns" in metric or isinstance(metric.get("max"), list):
        return "series"
    if "value" in metric:
        return "scalar"
    return "other"


def split_fields(source: dict, columns: dict) -> tuple[dict, dict]:
    """columns maps key -> predicate saying whether a value fits that key's column.
    Returns (column values, leftovers for the extra JSON)."""
    row, extra = {}, {}
    for key, value in source.items():
        fits = columns.get(key)
        if fits is not None and value is not None and fits(value):
            row[key] = value
        else:
            extra[key] = value
    return row, extra


def is_text(value) -> bool:
    return isinstance(value, str)


def metric_rows(name: str, metric: dict, kind: str) -> tuple[dict, list[ArrayRows]]:
    """The metrics row for one metric of KIND (distribution, series, scalar, other)
    and the array rows hanging off it."""
    body = dict(metric)
    arrays: list[ArrayRows] = []
    if kind == "distribution":
        if isinstance(body.get("histogram"), dict):
            arrays.append(log_linear_rows(body.pop("histogram")))
        if isinstance(body.get("linear"), dict):
            arrays.append(linear_rows(body.pop("linear")))
        columns = {"unit": is_text, "count": fits_int_column}
        columns.update({k: fits_float_column for k in STAT_FIELDS})
    elif kind == "series":
        arrays.append(series_rows(body))
        body = {k: v for k, v in body.items() if k not in ("window_ns", "start_ns", "max")}
        columns = {"unit": is_text}
    elif kind == "scalar":
        columns = {"unit": is_text, "value": fits_float_column}
    else:
        columns = {"unit": is_text}
    row, extra = split_fields(body, columns)
    row.update(name=name, kind=kind, extra=to_json(extra) if extra else None)
    return row, arrays


def log_linear_rows(hist: dict) -> ArrayRows:
    bins = hist.get("bins") if isinstance(hist.get("bins"), list) else []
    rest = {k: v for k, v in hist.items() if k != "bins"}
    row, extra = split_fields(rest, {"scheme": is_text, "sub_buckets": fits_int_column})
    row.update(data=to_json(bins), extra=to_json(extra) if extra else None)
    bin_rows = [
        (int(b[0]), int(b[1]), int(b[2]))
        for b in bins
        if isinstance(b, (list, tuple)) and len(b) == 3 and all(isinstance(x, (int, float)) for x in b)
    ]
    return ArrayRows("log-linear", row, bin_rows)


def linear_rows(linear: dict) -> ArrayRows:
    counts = linear.get("counts") if isinstance(linear.get("counts"), list) else []
    rest = {k: v for k, v in linear.items() if k != "counts"}
    row, extra = split_fields(rest, {"bucket_ns": fits_int_column, "overflow": fits_int_column})
    row.update(data=to_json(counts), extra=to_json(extra) if extra else None)
    return ArrayRows("linear", row)


def series_rows(metric: dict) -> ArrayRows:
    values = metric.get("max") if isinstance(metric.get("max"), list) else []
    rest = {k: metric[k] for k in ("window_ns", "start_ns", "max") if k in metric and k != "max"}
    if "max" in metric and not isinstance(metric["max"], list):
        rest["max"] = metric["max"]
    row, extra = split_fields(rest, {"window_ns": fits_int_column, "start_ns": fits_int_column})
    row.update(data=to_json(values), extra=to_json(extra) if extra else None)
    return ArrayRows("series", row)


def number_back(value):
    """Float columns hand integers back as floats; the tool wrote them as ints."""
    if isinstance(value, float) and value.is_integer() and abs(value) <= EXACT_FLOAT_LIMIT:
        return int(value)
    return value


def metric_from_rows(row: dict, arrays: list[dict]) -> dict:
    """Rebuild the contract METRIC from its metrics row and histograms rows."""
    metric: dict = {}
    if row.get("unit") is not None:
        metric["unit"] = row["unit"]
    kind = row["kind"]
    if kind == "scalar" and row.get("value") is not None:
        metric["value"] = number_back(row["value"])
    if kind == "distribution":
        if row.get("count") is not None:
            metric["count"] = row["count"]
        for key in STAT_FIELDS:
            if row.get(key) is not None:
                value = row[key]
                metric[key] = value if key in ("avg", "stddev") else number_back(value)
    for array in arrays:
        layout = array["layout"]
        if layout == "log-linear":
            metric["histogram"] = array_dict(array, ("scheme", "sub_buckets"), "bins")
        elif layout == "linear":
            metric["linear"] = array_dict(array, ("bucket_ns", "overflow"), "counts")
        elif layout == "series":
            metric.update(array_dict(array, ("window_ns", "start_ns"), "max"))
    metric.update(from_json(row.get("extra"), {}))
    return metric


def array_dict(array: dict, columns: tuple[str, ...], data_key: str) -> dict:
    out = {k: array[k] for k in columns if array.get(k) is not None}
    out[data_key] = from_json(array["data"], [])
    out.update(from_json(array.get("extra"), {}))
    return out
