"""Per-call speed of several runners, measured in interleaved rounds (A B C, then C B A,
...) so a change in the machine's background load falls on all of them alike."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

#: (runner, calls) -> the ms of each of ``calls`` timed calls
CallTimer = Callable[[Any, int], list[float]]


def wall_call_ms(runner: Any, feed: Mapping[str, np.ndarray], calls: int) -> list[float]:
    """ms of each of ``calls`` calls of ``runner.run(feed)``, by the wall clock."""
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        runner.run(feed)
        times.append(1000.0 * (time.perf_counter() - started))
    return times


def interleaved_call_ms(
    runners: Mapping[str, Any],
    feed: Mapping[str, np.ndarray],
    *,
    calls: int,
    rounds: int = 4,
    timer: CallTimer | None = None,
) -> dict[str, float]:
    """Median ms per call of each runner (each is called once untimed first): ``run(feed)`` by
    the wall clock, or as ``timer`` times it (its own feed, device events)."""
    timed: CallTimer = timer or (lambda runner, n: wall_call_ms(runner, feed, n))
    for runner in runners.values():
        timed(runner, 1)
    names = list(runners)
    times: dict[str, list[float]] = {name: [] for name in names}
    for k in range(rounds):
        for name in names if k % 2 == 0 else names[::-1]:
            times[name] += timed(runners[name], calls)
    return {name: statistics.median(values) for name, values in times.items()}
