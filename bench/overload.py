"""Overload: offer ~3x the measured capacity (open loop) and check that the
server sheds load instead of drowning.

    python -m bench.overload                        # fake-op image server, 60 s
    python -m bench.overload --duration 10          # the CI-sized run
    python -m bench.overload --max-queue-size 64    # try another admission limit
    python -m bench.overload --config configs/ocr.yml --image card.jpg

Steps (tests/support/reliability/overload.py; this script is its command line):
start the server; measure capacity with a short closed loop; offer
``--factor`` x capacity as Poisson arrivals for ``--duration`` seconds
(client.loadgen.run_open_loop); probe /health/ready once a second; sample the
server's RSS. Pass criteria (exit 0): every request got an HTTP answer; every
refusal is a 503 with Retry-After; the p99 latency of accepted requests (all
but the 503s) is within ``request_timeout_ms``; RSS after the run is within
``--rss-growth`` of the RSS before it.
"""

from __future__ import annotations

import argparse
import json
import sys

from tests.support.reliability.overload import format_summary, run
from tests.support.reliability.target import FAKE


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default=FAKE, help="config to serve (default: a fake-op image config)")
    ap.add_argument("--url", help="load an already running server (no RSS numbers)")
    ap.add_argument("--duration", type=float, default=60.0, help="seconds of overload (default 60)")
    ap.add_argument("--factor", type=float, default=3.0, help="offered load / capacity (default 3)")
    ap.add_argument("--capacity", type=float, help="skip measuring: capacity in req/s")
    ap.add_argument("--capacity-seconds", type=float, default=5.0)
    ap.add_argument("--capacity-concurrency", type=int)
    ap.add_argument("--image", help="image file to send (default: a generated PNG)")
    ap.add_argument("--timeout-ms", type=float, help="the server's request_timeout_ms (default: from the config)")
    ap.add_argument("--max-queue-size", type=int, help="fake server: dag.max_queue_size")
    ap.add_argument("--request-timeout-ms", type=int, help="fake server: dag.request_timeout_ms")
    ap.add_argument("--rss-growth", type=float, default=0.25, help="allowed RSS growth, fraction (default 0.25)")
    ap.add_argument("--json", help="write the summary as JSON here")
    args = ap.parse_args(argv)
    overrides = {}
    if args.max_queue_size:
        overrides["max_queue_size"] = args.max_queue_size
    if args.request_timeout_ms:
        overrides["request_timeout_ms"] = args.request_timeout_ms
    summary, problems = run(
        args.config,
        url=args.url,
        duration_s=args.duration,
        factor=args.factor,
        capacity=args.capacity,
        capacity_s=args.capacity_seconds,
        capacity_concurrency=args.capacity_concurrency,
        image_path=args.image,
        timeout_ms=args.timeout_ms,
        rss_growth=args.rss_growth,
        fake_overrides=overrides,
    )
    print(format_summary(summary))
    print("PASS" if not problems else "FAIL:\n  " + "\n  ".join(problems))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"summary": summary, "problems": problems}, f, indent=1)
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
