"""Served throughput and p99 against the number of closed-loop clients, batching on and
off side by side: both servers up at once, each level measured on one then the other,
the order alternating from level to level, so drift in the machine's state falls on
both alike (as bench/rec_curves.py does)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from bench.lib.measure import closed_loop
from bench.lib.script import BenchError, first_line

from .configs import BATCHING


def order(level_index: int) -> tuple[str, ...]:
    """Which server a level measures first: on, off, then off, on, ..."""
    return BATCHING if level_index % 2 == 0 else BATCHING[::-1]


def level_summary(result: Mapping[str, Any]) -> dict[str, Any]:
    """A closed loop's requests/s, latencies and errors, and each op's mean batch size."""
    latency = result["latency_ms"]
    ops = result.get("op_stats") or {}
    return {
        "req_per_s": round(result["qps"], 2),
        "p50_ms": round(latency["p50"], 2),
        "p99_ms": round(latency["p99"], 2),
        "ok": result["ok"],
        "failed": result["failed"],
        "errors": result["errors"],
        "mean_batch": {op: stats.get("mean_batch_size") for op, stats in ops.items()},
    }


def levels(
    urls: Mapping[str, str],
    name: str,
    payloads: Sequence[dict],
    clients: Sequence[int],
    duration_s: float,
    warmup_s: float,
    measured: Callable[[str, int, str, dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """One row per client level: ``{"clients": c, "on": {...}, "off": {...}, "first": "on"}``;
    ``measured(name, clients, batching, summary)`` is told of each measurement as it ends."""
    rows = []
    for i, count in enumerate(clients):
        row: dict[str, Any] = {"clients": count, "first": order(i)[0]}
        for batching in order(i):
            try:
                result = closed_loop(urls[batching], name, payloads, count, duration_s, warmup_s)
            except BenchError as exc:  # no request answered at this level: the other levels still run
                row[batching] = {"error": first_line(exc)}
            else:
                row[batching] = level_summary(result)
            if measured is not None:
                measured(name, count, batching, row[batching])
        rows.append(row)
    return rows
