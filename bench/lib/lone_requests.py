"""Lone requests against several targets, one at a time, in a fresh random
order every round: the median latency of each (what a sub-millisecond change
on the serving path moves)."""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable, Mapping


def lone_p50_ms(
    calls: Mapping[str, Callable[[], object]],
    rounds: int,
    *,
    warmup: int = 20,
    seed: int = 7,
) -> dict[str, float]:
    """Each call ``warmup`` times, then ``rounds`` rounds of every call once;
    returns the median milliseconds per name."""
    seconds = lone_seconds(calls, rounds, warmup=warmup, seed=seed)
    return {name: statistics.median(v) * 1000 for name, v in seconds.items()}


def lone_seconds(
    calls: Mapping[str, Callable[[], object]],
    rounds: int,
    *,
    warmup: int = 20,
    seed: int = 7,
) -> dict[str, list[float]]:
    """As :func:`lone_p50_ms`, but every measured call's seconds, per name."""
    for fn in calls.values():
        for _ in range(warmup):
            fn()
    names = list(calls)
    seconds: dict[str, list[float]] = {name: [] for name in names}
    rng = random.Random(seed)
    for _ in range(rounds):
        # a fresh order every round: in a fixed rotation each call would always follow the
        # same one (measured: ~0.1 ms slower after a `requests` call)
        rng.shuffle(names)
        for name in names:
            began = time.perf_counter()
            calls[name]()
            seconds[name].append(time.perf_counter() - began)
    return seconds
