"""Soak: steady open-loop load at ~70% of capacity; count errors and watch RSS.

Targets (no problems): no failed request, and RSS drift below ``max_drift``.
Drift compares the server's RSS at the end with its RSS once warm (after
``warmup_s`` of load, default 10% of the run, at most 60 s), so one-off
allocations at first use (thread stacks, arenas, caches) do not count as a
leak. CLI: bench/soak.py.

A leak soak (``max_rss_mb``: the fake op is the fault-injection op, leaking in
predictor processes under that limit) has other targets: no failed request,
the memory guard replaced processes, no predictor process above
``LEAK_BOUND`` x the limit, and the server process itself (without its
children, whose memory saws up and down) within ``max_drift``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from tests.support.reliability.load import measure_capacity, offer, pct_ms
from tests.support.reliability.overload import FAKE_SERVER as OVERLOAD_FAKE
from tests.support.reliability.rss_sampler import RssSampler, mb
from tests.support.reliability.target import FAKE, load_target

FAKE_SERVER = dict(OVERLOAD_FAKE, max_queue_size=128)
#: a predictor process may pass max_rss_mb by this factor: the guard checks every 0.5 s and
#: the old process serves (and leaks) while its replacement starts and warms
LEAK_BOUND = 1.5


def leak_overrides(leak_mb: float, max_rss_mb: int, instances: int = 1) -> dict[str, Any]:
    """Fake-server settings of a leak soak: the fault-injection op in predictor
    processes, leaking ``leak_mb`` per run, under ``max_rss_mb``."""
    from tests.support.fault_op import FAULT_OP

    return {
        "op_class": FAULT_OP,
        "params": {"leak_mb": leak_mb},
        "instance_num": instances,
        "service": {"instance_mode": "process", "max_rss_mb": max_rss_mb},
    }


def run(
    config: str = FAKE,
    *,
    url: str | None = None,
    minutes: float = 10.0,
    load: float = 0.7,
    rate: float | None = None,
    capacity_s: float = 5.0,
    image_path: str | None = None,
    warmup_s: float | None = None,
    rss_interval_s: float = 5.0,
    fake_overrides: dict | None = None,
    max_rss_mb: int | None = None,
    log: Callable[[str], Any] = print,
) -> dict:
    """Start (or use) the server and offer ``load`` x its capacity (or ``rate``
    req/s) for ``minutes``; returns the summary. ``max_rss_mb``: a leak soak
    (see the module doc; ``leak_overrides`` makes its fake server)."""
    fake = dict(FAKE_SERVER, **(fake_overrides or {}))
    if max_rss_mb is not None:
        rss_interval_s = min(rss_interval_s, 0.5)  # often enough to see a process's peak
    with load_target(config, url, fake, image_path) as target:
        url, pid, name, image = target.url, target.pid, target.name, target.image
        capacity = None
        if rate is None:
            capacity, _ = measure_capacity(
                url, name, image, concurrency=target.capacity_concurrency(config), duration_s=capacity_s
            )
            rate = load * capacity
            log(f"capacity {capacity:.1f} req/s -> soak at {rate:.1f} req/s for {minutes:g} min")
        duration_s = minutes * 60.0
        warm = warmup_s if warmup_s is not None else min(60.0, 0.1 * duration_s)
        with RssSampler(pid or -1, interval_s=min(rss_interval_s, max(1.0, duration_s / 20))) as rss:
            began = time.monotonic()
            result, outcomes = offer(url, name, image, rate, duration_s, max_in_flight=256, client_timeout_s=60)
            elapsed = time.monotonic() - began
        statuses = outcomes.by_status()
        rss_warm, rss_end = rss.at(warm), rss.samples[-1][1] if rss.samples else 0
        own_warm, own_end = rss.at(warm, rss.own), rss.own[-1][1] if rss.own else 0
        counters = _instance_counters(url)
        return {
            "capacity_rps": round(capacity, 1) if capacity else None,
            "rate_rps": round(rate, 1),
            "duration_s": round(elapsed, 1),
            "requests": len(outcomes.items),
            "statuses": statuses,
            "errors": sum(n for s, n in statuses.items() if s != 200),
            "dropped_client_side": result.dropped,
            "latency_ms": pct_ms(outcomes.latencies(lambda s: s == 200)),
            "rss_start": rss.samples[0][1] if rss.samples else 0,
            "rss_warm": rss_warm,
            "rss_end": rss_end,
            "rss_peak": rss.peak(),
            "warmup_s": warm,
            "drift": (rss_end - rss_warm) / rss_warm if rss_warm else None,
            "own_warm": own_warm,
            "own_end": own_end,
            "own_drift": (own_end - own_warm) / own_warm if own_warm else None,
            "predictor_peak": rss.peak(rss.largest_child),
            "max_rss_mb": max_rss_mb,
            **counters,
            "rss_samples_mb": [(round(t), round(s / (1 << 20), 1)) for t, s in rss.samples],
        }


def _instance_counters(url: str) -> dict[str, float]:
    """Predictor processes restarted (died) and recycled (memory guard), over all ops."""
    import requests

    from client.stats import MetricsSnapshot

    snap = MetricsSnapshot.from_text(requests.get(url + "/metrics", timeout=10).text)
    return {
        "restarts": snap.value("batchline_op_instance_restarts_total"),
        "recycles": snap.value("batchline_op_instance_recycles_total"),
    }


def find_problems(s: dict, max_drift: float) -> list[str]:
    """What misses the targets (empty: passed)."""
    problems = []
    if s["errors"]:
        problems.append(f"{s['errors']} failed requests")
    limit = s.get("max_rss_mb")
    drift = s["drift"] if limit is None else s["own_drift"]
    if drift is not None and drift > max_drift:
        what = "RSS" if limit is None else "server process RSS (without its predictor processes)"
        problems.append(f"{what} drift {drift * 100:.1f}% > {max_drift * 100:.0f}%")
    if limit is not None:
        if not s["recycles"]:
            problems.append("the memory guard replaced no predictor process")
        if s["predictor_peak"] > LEAK_BOUND * (limit << 20):
            problems.append(f"a predictor process reached {mb(s['predictor_peak'])} > {LEAK_BOUND} x {limit} MB")
    return problems


def format_summary(s: dict) -> str:
    lat = s["latency_ms"]
    lines = [
        f"{s['requests']} requests at {s['rate_rps']} req/s over {s['duration_s']} s "
        f"(capacity {s['capacity_rps']}); statuses {s['statuses']}; client-side drops {s['dropped_client_side']}",
        f"latency p50 {lat['p50']} / p90 {lat['p90']} / p99 {lat['p99']} / max {lat['max']} ms",
    ]
    if s["rss_warm"]:
        lines += [
            f"RSS start {mb(s['rss_start'])}, warm (t={s['warmup_s']:.0f}s) {mb(s['rss_warm'])}, "
            f"end {mb(s['rss_end'])}, peak {mb(s['rss_peak'])}; drift {s['drift'] * 100:+.2f}%",
            "RSS samples (s, MB): " + " ".join(f"{t}:{m}" for t, m in s["rss_samples_mb"]),
        ]
    if s.get("max_rss_mb") is not None:
        lines.append(
            f"memory guard at {s['max_rss_mb']} MB: {s['recycles']:.0f} processes replaced, "
            f"{s['restarts']:.0f} died; largest predictor process {mb(s['predictor_peak'])}; "
            f"server process alone {mb(s['own_warm'])} -> {mb(s['own_end'])} ({s['own_drift'] * 100:+.2f}%)"
        )
    return "\n".join(lines)
