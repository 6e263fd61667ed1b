"""The serving path alone, A/B: this tree's server against another checkout's,
and the bundled client against ``requests``, with a model-free op.

The op is tests/support/image_fakes.py's ``ImageStatsOp`` (decodes the image,
sums a row, a no-op "predictor"), so a request costs ~2 ms and no model time
varies: what is measured is the HTTP, JSON, base64, image decode and engine
hand-offs that every request pays, the part bench/idle_overhead.py's rec
figure holds besides the model. One crop of the rec bench, sequential
requests, all conditions in rotation:

* ``this``: a server of this tree, the bundled client;
* ``other``: a server of ``--other`` (e.g. /work/main), the bundled client;
* ``this, requests`` and ``other, requests``: the same servers through a
  ``requests.Session`` (the client before client/transport.py); every server
  gets the same traffic (a server sent more requests answered faster);
* the HTTP floors: ``GET /health/live`` on each server.

    python bench/served_overhead_ab.py --other /work/main [--requests 600] [--other-first]

Conditions run in a fresh random order every round. Run both start orders
(``--other-first``) and take the mean of "this - other".
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import statistics
import sys
import time
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.lib.configs import write_config  # noqa: E402
from bench.lib.inputs import bench_crops  # noqa: E402
from bench.lib.measure import image_payloads  # noqa: E402
from bench.lib.results import write_result  # noqa: E402
from bench.lib.script import run_main  # noqa: E402
from bench.lib.server import served  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--other", required=True, metavar="ROOT", help="the other checkout (e.g. /work/main)")
    ap.add_argument("--requests", type=int, default=600, help="requests per condition")
    ap.add_argument(
        "--other-first",
        action="store_true",
        help="start the other server first (run both orders and average)",
    )
    args = ap.parse_args()

    import requests
    import yaml

    from client.pipeline_client import PipelineClient
    from tests.support.image_fakes import image_config

    config = write_config(
        yaml.safe_load(image_config(delay_ms=0, per_item_ms=0, max_queue_delay=10, worker_num=16)), tag="overhead-ab"
    )
    crops = bench_crops()
    payload = image_payloads([crops[len(crops) // 2]])[0]
    with contextlib.ExitStack() as stack:
        if args.other_first:
            other = stack.enter_context(served(config, root=args.other))
            this = stack.enter_context(served(config))
        else:
            this = stack.enter_context(served(config))
            other = stack.enter_context(served(config, root=args.other))
        ct = stack.enter_context(PipelineClient(this.url, pool_size=1))
        co = stack.enter_context(PipelineClient(other.url, pool_size=1))
        session = stack.enter_context(requests.Session())
        calls: dict[str, Callable[[], object]] = {
            "this": lambda: ct.predict_raw("img", payload),
            "other": lambda: co.predict_raw("img", payload),
            "this, requests": lambda: session.post(this.url + "/img/prediction", json=payload).json(),
            "other, requests": lambda: session.post(other.url + "/img/prediction", json=payload).json(),
            "HTTP floor, this": ct.health_live,
            "HTTP floor, other": co.health_live,
        }
        for fn in calls.values():
            for _ in range(20):
                fn()
        lat: dict[str, list[float]] = {k: [] for k in calls}
        names = list(calls)
        rng = random.Random(7)
        for _ in range(args.requests):
            # a fresh order every round: with a rotation each condition would always follow
            # the same one (measured: ~0.1 ms slower after a requests call)
            rng.shuffle(names)
            for name in names:
                t0 = time.perf_counter()
                calls[name]()
                lat[name].append(time.perf_counter() - t0)
    p50 = {k: statistics.median(v) * 1000 for k, v in lat.items()}
    for k, v in p50.items():
        print(f"{k:20s} p50 {v:7.3f} ms")
    print(f"this - other (server): {p50['this'] - p50['other']:+.3f} ms")
    print(f"this - other (server), through requests: {p50['this, requests'] - p50['other, requests']:+.3f} ms")
    print(f"bundled client - requests (this server): {p50['this'] - p50['this, requests']:+.3f} ms")
    print(f"bundled client - requests (other server): {p50['other'] - p50['other, requests']:+.3f} ms")
    write_result("served_overhead_ab", {"args": vars(args), "p50_ms": p50})
    print(f"RATIO served p50 this / other with requests = {p50['this'] / p50['other, requests']:.2f}")
    return 0


if __name__ == "__main__":
    run_main(main)
