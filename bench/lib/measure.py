"""Measuring: closed loops against a server (client.loadgen, with per-op stats
from its /metrics), timed loops in this process, a process's RSS."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from bench.lib.script import BenchError
from serving.runners.pids import stat_fields
from serving.runners.process_memory import process_tree, rss_bytes, tree_rss_bytes


def image_payloads(images: Sequence[bytes]) -> list[dict]:
    from client.pipeline_client import make_payload

    return [make_payload([("image", img)]) for img in images]


def answered(result: Mapping[str, Any]) -> int:
    """The successes a rate counts in a load level's result: for a closed loop
    run to its end, the answers that arrived inside the window
    (``window_ok``, see client.loadgen), else every success."""
    window_ok = result.get("window_ok")
    return int(result["ok"] if window_ok is None else window_ok)


def closed_loop(
    url: str,
    name: str,
    payloads: Sequence[dict],
    concurrency: int,
    duration_s: float,
    warmup_s: float = 1.0,
    timeout: float = 60.0,
    metrics: bool = True,
    keep_latencies: bool = False,
    unique_logids: bool = False,
) -> dict:
    """Closed loop against a batchline-compatible server (``POST /{name}/prediction``);
    returns LevelResult.to_dict() plus per-op stats from /metrics (when scrapeable).

    ``keep_latencies``: also return every successful request's latency
    (``latencies_s``), to pool percentiles over rounds. ``unique_logids``: send
    request ``i`` with ``logid`` ``i``: routing hashes the logid when a request
    has no route key, so one logid for all would send every request the same way."""
    from client.bench import scrape
    from client.loadgen import run_closed_loop
    from client.pipeline_client import PipelineClient
    from client.stats import op_stats

    def factory() -> PipelineClient:
        return PipelineClient(url, timeout=timeout, pool_size=2)

    def make_request(client: PipelineClient, i: int) -> None:
        payload = payloads[i % len(payloads)]
        client.predict_raw(name, {**payload, "logid": i} if unique_logids else payload)

    with factory() as admin:
        before = scrape(admin) if metrics else None
        res = run_closed_loop(factory, make_request, concurrency, duration_s=duration_s, warmup_s=warmup_s)
        after = scrape(admin) if metrics else None
    if before is not None and after is not None:
        res.op_stats = op_stats(before, after)
    out = res.to_dict()
    if keep_latencies:
        out["latencies_s"] = list(res.latencies_s)
    if res.ok == 0:
        raise BenchError(f"no request to {url}/{name} succeeded (errors: {res.errors})")
    return out


def scrape_metrics(url: str) -> Any:
    """A /metrics MetricsSnapshot of the server at ``url``."""
    from client.pipeline_client import PipelineClient
    from client.stats import MetricsSnapshot

    with PipelineClient(url) as client:
        return MetricsSnapshot.from_text(client.metrics_text())


def time_loop(fn: Callable[[int], int], duration_s: float, min_calls: int = 3) -> dict:
    """Call ``fn(i)`` (returns items done) until ``duration_s`` passed and at
    least ``min_calls`` calls; returns items/s and per-call latencies."""
    lat: list[float] = []
    items = 0
    start = time.perf_counter()
    i = 0
    while True:
        t0 = time.perf_counter()
        items += fn(i)
        lat.append(time.perf_counter() - t0)
        i += 1
        if i >= min_calls and time.perf_counter() - start >= duration_s:
            break
    elapsed = time.perf_counter() - start
    from client.stats import latency_summary

    return {
        "calls": i,
        "items": items,
        "seconds": elapsed,
        "items_per_s": items / elapsed,
        "latency_ms": latency_summary(lat),
    }


def tree_rss_kb(pid: int) -> int:
    """Resident memory of ``pid`` and every descendant, in kB."""
    return tree_rss_bytes(pid) // 1024


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) ``pid`` itself has used, from /proc/<pid>/stat."""
    fields = stat_fields(pid)
    if fields is None:
        raise ProcessLookupError(f"no process {pid}")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds(pids: Sequence[int]) -> dict[int, float]:
    """CPU seconds used so far by each process of the trees under ``pids`` (pid -> seconds);
    the difference of two calls is the CPU a setup used in between."""
    out: dict[int, float] = {}
    for root in pids:
        for p in process_tree(root):
            try:
                out[p] = cpu_seconds(p)
            except (OSError, IndexError, ValueError):
                continue
    return out


def cpu_used(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU seconds used between two :func:`tree_cpu_seconds` calls (processes that
    started in between count from 0; ones that exited are lost)."""
    return sum(t - before.get(p, 0.0) for p, t in after.items())


def rss_kb(pid: int) -> int:
    """Resident memory of ``pid`` in kB."""
    rss = rss_bytes(pid)
    if rss is None:
        raise BenchError(f"cannot read the resident memory of pid {pid}")
    return rss // 1024


class RunSpans:
    """Seconds spent in ``run_batch`` (collate + predictor run + uncollate) since
    the last :meth:`take`: in this process by wrapping it, in a server from its
    ``batchline_op_run_seconds`` (the same span)."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - t0

        return timed

    def take(self) -> float:
        seconds, self.seconds = self.seconds, 0.0
        return seconds


def served_run_seconds(client: Any) -> float:
    """A server's ``batchline_op_run_seconds`` sum so far (``client``: a PipelineClient)."""
    from client.stats import MetricsSnapshot

    return MetricsSnapshot.from_text(client.metrics_text()).value("batchline_op_run_seconds_sum")


def served_span(client: Any) -> Callable[[], float]:
    """A callable giving the server's run seconds since its previous call (the first: since now)."""
    last = [served_run_seconds(client)]

    def span() -> float:
        now = served_run_seconds(client)
        seconds, last[0] = now - last[0], now
        return seconds

    return span
