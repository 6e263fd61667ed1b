"""Overload: offer ~3x the measured capacity (open loop) and check that the
server sheds load instead of drowning.

Pass criteria (no problems): every request got an HTTP answer; every
refusal is a 503 with Retry-After; the p99 latency of accepted requests (all
but the 503s) is within ``request_timeout_ms``; RSS after the run is within
``rss_growth`` of the RSS before it. CLI: bench/overload.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from serving.runners.process_memory import tree_rss_bytes
from tests.support.reliability.load import HealthProbe, Outcomes, measure_capacity, offer, pct_ms
from tests.support.reliability.rss_sampler import RssSampler, mb
from tests.support.reliability.target import FAKE, load_target

# the fake server: a batch of n costs 50 + 10 n ms on one instance -> ~60 requests/s at batch 8
FAKE_SERVER = {
    "delay_ms": 50,
    "per_item_ms": 10,
    "max_batch_size": 8,
    "max_queue_delay": 5,
    "instance_num": 1,
    "concurrency": 2,
    "worker_num": 16,
    "request_timeout_ms": 5000,
    "max_queue_size": 512,
}


def run(
    config: str = FAKE,
    *,
    url: str | None = None,
    duration_s: float = 60.0,
    factor: float = 3.0,
    capacity: float | None = None,
    capacity_s: float = 5.0,
    capacity_concurrency: int | None = None,
    image_path: str | None = None,
    timeout_ms: float | None = None,
    rss_growth: float = 0.25,
    fake_overrides: dict | None = None,
    log: Callable[[str], Any] = print,
) -> tuple[dict, list[str]]:
    """Start (or use) the server, measure capacity, offer ``factor`` x it for
    ``duration_s``; returns (summary, problems)."""
    fake = dict(FAKE_SERVER, **(fake_overrides or {}))
    with load_target(config, url, fake, image_path) as target:
        url, pid, name, image = target.url, target.pid, target.name, target.image
        if timeout_ms is None:
            if config == FAKE:
                timeout_ms = fake["request_timeout_ms"]
            elif target.started:
                from serving.config import load_config

                timeout_ms = load_config(config).dag.request_timeout_ms
            else:
                timeout_ms = 30000  # an external server: pass --timeout-ms
        if capacity_concurrency is None:
            capacity_concurrency = target.capacity_concurrency(config)
        if capacity is None:
            capacity, lat = measure_capacity(url, name, image, concurrency=capacity_concurrency, duration_s=capacity_s)
            log(f"capacity: {capacity:.1f} req/s at concurrency {capacity_concurrency} (latency {lat})")
        rate = factor * capacity
        max_queue = fake["max_queue_size"] if config == FAKE else 512
        max_in_flight = min(1024, max_queue + 128)
        rss_before = tree_rss_bytes(pid) if pid else 0
        log(f"offering {rate:.1f} req/s for {duration_s:.0f} s (client max_in_flight {max_in_flight}) ...")
        with RssSampler(pid or -1) as rss, HealthProbe(url) as health:
            result, outcomes = offer(
                url,
                name,
                image,
                rate,
                duration_s,
                max_in_flight=max_in_flight,
                client_timeout_s=timeout_ms / 1000.0 + 30,
            )
            time.sleep(1.0)  # let the server settle before the last RSS sample
        summary = summarize(result, outcomes, timeout_ms, rss, rss_before, health, capacity, rate)
        return summary, find_problems(summary, rss_growth)


def summarize(
    result: Any,
    outcomes: Outcomes,
    timeout_ms: float,
    rss: RssSampler,
    rss_before: int,
    health: HealthProbe,
    capacity: float,
    rate: float,
) -> dict:
    statuses = outcomes.by_status()
    ok_lat = outcomes.latencies(lambda s: s == 200)
    accepted_lat = outcomes.latencies(lambda s: s not in (503, 0))
    rejected_lat = outcomes.latencies(lambda s: s == 503)
    no_retry_after = sum(1 for s, _, ra in outcomes.items if s == 503 and not ra)
    rss_after = rss.samples[-1][1] if rss.samples else 0
    return {
        "capacity_rps": round(capacity, 1),
        "offered_rps": round(rate, 1),
        "duration_s": round(result.duration_s, 1),
        "sent": len(outcomes.items),
        "dropped_client_side": result.dropped,
        "statuses": statuses,
        "accepted": sum(n for s, n in statuses.items() if s not in (503, 0)),
        "rejected_503": statuses.get(503, 0),
        "no_answer": statuses.get(0, 0),
        "goodput_rps": round(len(ok_lat) / result.duration_s, 1) if result.duration_s else 0.0,
        "latency_ok_ms": pct_ms(ok_lat),
        "latency_accepted_ms": pct_ms(accepted_lat),
        "latency_503_ms": pct_ms(rejected_lat),
        "latency_by_status_ms": {str(st): pct_ms(outcomes.latencies(lambda s, st=st: s == st)) for st in statuses},
        "503_without_retry_after": no_retry_after,
        "health_ready_ms": pct_ms([lat for _, lat in health.results]),
        "health_not_200": sum(1 for s, _ in health.results if s != 200),
        "request_timeout_ms": timeout_ms,
        "rss_before": rss_before,
        "rss_after": rss_after,
        "rss_peak": rss.peak(),
    }


def find_problems(summary: dict, rss_growth: float) -> list[str]:
    """What breaks the pass criteria (empty: passed)."""
    problems = []
    if summary["no_answer"]:
        problems.append(f"{summary['no_answer']} requests got no HTTP answer")
    other = {s: n for s, n in summary["statuses"].items() if s not in (200, 503)}
    if other:
        problems.append(f"statuses other than 200/503: {other}")
    if summary["503_without_retry_after"]:
        problems.append(f"{summary['503_without_retry_after']} 503s without Retry-After")
    p99 = summary["latency_accepted_ms"]["p99"]
    if p99 == p99 and p99 > summary["request_timeout_ms"]:  # p99 != p99: NaN, nothing was accepted
        problems.append(f"p99 of accepted requests {p99:.0f} ms > request_timeout_ms {summary['request_timeout_ms']}")
    if summary["rss_before"] and summary["rss_after"] > summary["rss_before"] * (1 + rss_growth):
        problems.append(f"RSS grew from {mb(summary['rss_before'])} to {mb(summary['rss_after'])}")
    return problems


def format_summary(s: dict) -> str:
    def pct(d: dict) -> str:
        return f"p50 {d['p50']:.0f} / p90 {d['p90']:.0f} / p99 {d['p99']:.0f} / max {d['max']:.0f} ms (n={d['n']})"

    return "\n".join(
        [
            f"capacity {s['capacity_rps']} req/s (closed loop); "
            f"offered {s['offered_rps']} req/s for {s['duration_s']} s",
            f"sent {s['sent']} (client-side drops {s['dropped_client_side']}); statuses {s['statuses']}",
            f"accepted {s['accepted']}, rejected 503 {s['rejected_503']}, no answer {s['no_answer']}; "
            f"goodput {s['goodput_rps']} req/s",
            f"200 latency:       {pct(s['latency_ok_ms'])}",
            f"accepted latency:  {pct(s['latency_accepted_ms'])}  (request_timeout_ms {s['request_timeout_ms']})",
            f"503 latency:       {pct(s['latency_503_ms'])}; 503 without Retry-After: {s['503_without_retry_after']}",
            *[f"  status {st}: {pct(d)}" for st, d in s["latency_by_status_ms"].items() if st not in ("200", "503")],
            f"/health/ready:     {pct(s['health_ready_ms'])}; not 200: {s['health_not_200']}",
            f"server RSS before {mb(s['rss_before'])}, after {mb(s['rss_after'])}, peak {mb(s['rss_peak'])}",
        ]
    )
