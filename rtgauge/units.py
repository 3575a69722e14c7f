"""Times on the command line take a unit wherever they are given, as the engine's time
options do (`--duration-s 5m`, `--interval-us 1ms`): a plain number counts in the
option's own unit (the end of its name), a number with a unit is converted to it."""

from __future__ import annotations

import argparse
import math
import re

SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
TIME = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?)\s*(ns|us|µs|ms|s|m|h|d)?\s*")


def parse_time(text: str, unit: str, whole: bool = False) -> float:
    """text ('250', '1ms', '2m') as a number of unit; ValueError with what to write."""
    m = TIME.fullmatch(str(text))
    if not m:
        raise ValueError(f"{text!r} is not a time; give a number of {unit}, or one with a unit "
                         "(ns, us, ms, s, m, h, d) like 500ms or 2m")
    value = float(m.group(1)) * (SECONDS[m.group(2)] / SECONDS[unit] if m.group(2) else 1.0)
    if not math.isfinite(value):
        return value            # the caller's range check refuses it with its own sentence
    if abs(value - round(value)) <= 1e-9 * max(1.0, abs(value)):
        value = float(round(value))
    if not math.isfinite(value) or (whole and value != int(value)):
        raise ValueError(f"{text!r} is not a whole number of {unit}; give e.g. 250 or 1ms")
    return value


def time_option(unit: str, whole: bool = True):
    """An argparse type: a time in unit (int when whole), units accepted."""
    def convert(text: str):
        try:
            value = parse_time(text, unit, whole)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
        return int(value) if whole and math.isfinite(value) else value
    convert.__name__ = f"time in {unit}"
    return convert
