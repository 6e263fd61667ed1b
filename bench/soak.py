"""Soak: steady open-loop load at ~70% of capacity; count errors and watch RSS.

    python bench/soak.py --minutes 10                  # fake-op image server
    python bench/soak.py --minutes 0.5                 # CI-sized
    python bench/soak.py --config configs/ocr.yml --image card.jpg --minutes 10

Targets (exit 0): no failed request, and RSS drift below ``--max-drift``
(default 5%). Drift compares the server's RSS at the end with its RSS once
warm (after ``--warmup`` seconds of load, default 10% of the run, at most 60 s),
so one-off allocations at first use (thread stacks, arenas, caches) do not count
as a leak.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from bench.overload import FAKE_SERVER as OVERLOAD_FAKE  # noqa: E402
from bench.overload import offer  # noqa: E402
from bench.reliability_common import FAKE, RssSampler, load_target, mb, measure_capacity, pct_ms  # noqa: E402

FAKE_SERVER = dict(OVERLOAD_FAKE, max_queue_size=128)


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
    log=print,
) -> dict:
    fake = dict(FAKE_SERVER, **(fake_overrides or {}))
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
            "rss_samples_mb": [(round(t), round(s / (1 << 20), 1)) for t, s in rss.samples],
        }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default=FAKE, help="config to serve (default: a fake-op image config)")
    ap.add_argument("--url", help="load an already running server (no RSS numbers)")
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--load", type=float, default=0.7, help="fraction of measured capacity (default 0.7)")
    ap.add_argument("--rate", type=float, help="req/s (skips measuring capacity)")
    ap.add_argument("--image", help="image file to send (default: a generated PNG)")
    ap.add_argument("--warmup", type=float, help="seconds before the RSS baseline (default 10%% of the run, <= 60)")
    ap.add_argument("--max-drift", type=float, default=0.05, help="allowed RSS drift, fraction (default 0.05)")
    ap.add_argument("--json", help="write the summary as JSON here")
    args = ap.parse_args(argv)
    s = run(
        args.config,
        url=args.url,
        minutes=args.minutes,
        load=args.load,
        rate=args.rate,
        image_path=args.image,
        warmup_s=args.warmup,
    )
    print(
        f"{s['requests']} requests at {s['rate_rps']} req/s over {s['duration_s']} s "
        f"(capacity {s['capacity_rps']}); statuses {s['statuses']}; client-side drops {s['dropped_client_side']}"
    )
    lat = s["latency_ms"]
    print(f"latency p50 {lat['p50']} / p90 {lat['p90']} / p99 {lat['p99']} / max {lat['max']} ms")
    if s["rss_warm"]:
        print(
            f"RSS start {mb(s['rss_start'])}, warm (t={s['warmup_s']:.0f}s) {mb(s['rss_warm'])}, "
            f"end {mb(s['rss_end'])}, peak {mb(s['rss_peak'])}; drift {s['drift'] * 100:+.2f}%"
        )
        print("RSS samples (s, MB): " + " ".join(f"{t}:{m}" for t, m in s["rss_samples_mb"]))
    problems = []
    if s["errors"]:
        problems.append(f"{s['errors']} failed requests")
    if s["drift"] is not None and s["drift"] > args.max_drift:
        problems.append(f"RSS drift {s['drift'] * 100:.1f}% > {args.max_drift * 100:.0f}%")
    print("PASS" if not problems else "FAIL: " + "; ".join(problems))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(s, f, indent=1)
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
