"""Per-call speed of several runners on one feed, measured in interleaved
rounds (A B C, then C B A, ...) so a change in the machine's background load
falls on all of them alike."""

from __future__ import annotations

import statistics
import time
from collections.abc import Mapping
from typing import Any

import numpy as np


def interleaved_call_ms(
    runners: Mapping[str, Any], feed: Mapping[str, np.ndarray], *, calls: int, rounds: int = 4
) -> dict[str, float]:
    """Median ms per ``run(feed)`` of each runner (each runs it once untimed first)."""
    for runner in runners.values():
        runner.run(feed)
    names = list(runners)
    times: dict[str, list[float]] = {name: [] for name in names}
    for k in range(rounds):
        for name in names if k % 2 == 0 else names[::-1]:
            for _ in range(calls):
                started = time.perf_counter()
                runners[name].run(feed)
                times[name].append(time.perf_counter() - started)
    return {name: 1000.0 * statistics.median(values) for name, values in times.items()}
