"""Served throughput and p99 against the number of closed-loop clients, batching on and
off (and the CPU reference, :mod:`.reference`) side by side: every server up at once, each
level measured on one after the other, the order reversing from level to level, so drift in
the machine's state falls on all alike (as bench/rec_curves.py does)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from bench.lib.measure import closed_loop
from bench.lib.script import BenchError, first_line
from serving.runners.gpus import Gpus

from .busy import GpuSampler
from .configs import BATCHING


def order(level_index: int, servers: Sequence[str] = BATCHING) -> tuple[str, ...]:
    """The order a level measures ``servers`` in: as given, then reversed, and so on."""
    return tuple(servers) if level_index % 2 == 0 else tuple(servers)[::-1]


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
    gpus: Gpus | None = None,
) -> list[dict[str, Any]]:
    """One row per client level: ``{"clients": c, "on": {...}, "off": {...}, "first": "on"}``,
    a key per server of ``urls``; ``measured(name, clients, server, summary)`` is told of each
    measurement as it ends. With ``gpus``, each summary has how busy they were (``gpu``:
    :mod:`.busy`) while it was measured."""
    rows = []
    for i, count in enumerate(clients):
        servers = order(i, list(urls))
        row: dict[str, Any] = {"clients": count, "first": servers[0]}
        for server in servers:
            sampler = GpuSampler(gpus, delay_s=warmup_s)  # the measured window only
            try:
                with sampler:
                    result = closed_loop(urls[server], name, payloads, count, duration_s, warmup_s)
            except BenchError as exc:  # no request answered at this level: the other levels still run
                row[server] = {"error": first_line(exc)}
            else:
                busy = sampler.summary()
                row[server] = level_summary(result) | ({"gpu": busy} if busy else {})
            if measured is not None:
                measured(name, count, server, row[server])
        rows.append(row)
    return rows
