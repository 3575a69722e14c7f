"""The clock that rtgauge's Python logic waits and measures time by.

Code that waits (a warm-up, a poll for a child process, a deadline, a ceiling on rounds)
takes a Clock instead of calling the time module, so a test can give it a FakeClock:
time that moves only when the code sleeps on it, without waiting for real. SYSTEM is
the real one (time.monotonic, time.sleep) and the default everywhere."""

from __future__ import annotations

import time
from typing import Callable


class Clock:
    """The system's monotonic clock."""

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


SYSTEM = Clock()


class FakeClock(Clock):
    """A clock for tests: monotonic() moves only by sleep() (by what is slept) and advance().
    on_sleep(clock) is called after each sleep, the test's way to act at a moment of the
    waiting code's own choosing (send a signal, let a process end). slept: every sleep asked."""

    def __init__(self, start: float = 1000.0, on_sleep: Callable[["FakeClock"], None] | None = None) -> None:
        self.now = float(start)
        self.on_sleep = on_sleep
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("sleep length must be non-negative")   # as time.sleep says
        self.slept.append(seconds)
        self.now += seconds
        if self.on_sleep is not None:
            self.on_sleep(self)

    def advance(self, seconds: float) -> None:
        self.now += seconds
