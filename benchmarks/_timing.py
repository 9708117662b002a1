"""The timing loop the benchmarks share: a call timed once, or repeated and summarised by its median.

Wall time is ``time.perf_counter``; a benchmark whose tool measures time itself (the
Gradescope emulator) still runs its repetitions through :func:`repeated` and reads that tool's
numbers from the results.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Timed(Generic[T]):
    """What one call returned and how long it took."""

    value: T
    seconds: float


def timed(call: Callable[[], T]) -> Timed[T]:
    """Run ``call`` once and time it."""
    started = time.perf_counter()
    value = call()
    return Timed(value, time.perf_counter() - started)


def repeated(call: Callable[[int], T], times: int) -> list[Timed[T]]:
    """Run ``call(index)`` for index 0 .. ``times`` - 1, each timed."""
    return [timed(lambda index=index: call(index)) for index in range(times)]


def median_seconds(runs: list[Timed[T]]) -> float:
    """The median wall time of ``runs`` (at least one)."""
    return statistics.median(run.seconds for run in runs)
