"""Soak: steady open-loop load at ~70% of capacity; count errors and watch RSS.

    python -m bench.soak --minutes 10                  # fake-op image server
    python -m bench.soak --minutes 0.5                 # CI-sized
    python -m bench.soak --config configs/ocr.yml --image card.jpg --minutes 10
    python -m bench.soak --minutes 5 --leak-mb 2 --max-rss-mb 300   # leak soak: memory guard

Targets (exit 0): no failed request, and RSS drift below ``--max-drift``
(default 5%). Drift compares the server's RSS at the end with its RSS once
warm (after ``--warmup`` seconds of load, default 10% of the run, at most 60 s),
so one-off allocations at first use (thread stacks, arenas, caches) do not count
as a leak. The run itself is tests/support/reliability/soak.py; this script is
its command line.

A leak soak (``--leak-mb``, ``--max-rss-mb``) serves the fault-injection op
in a predictor process that keeps ``--leak-mb`` more memory per run, under
``max_rss_mb``: it passes with no failed request, processes replaced by the
memory guard, none above 1.5 x the limit, and a flat server process.
"""

from __future__ import annotations

import argparse
import json
import sys

from tests.support.reliability.soak import find_problems, format_summary, leak_overrides, run
from tests.support.reliability.target import FAKE


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
    ap.add_argument("--leak-mb", type=float, help="leak soak: MB the fault op keeps per run (fake config only)")
    ap.add_argument("--max-rss-mb", type=int, help="leak soak: the predictor process's max_rss_mb")
    ap.add_argument("--json", help="write the summary as JSON here")
    args = ap.parse_args(argv)
    if (args.leak_mb is None) != (args.max_rss_mb is None) or (args.leak_mb is not None and args.config != FAKE):
        ap.error("--leak-mb and --max-rss-mb go together, with the default (fake) config")
    s = run(
        args.config,
        url=args.url,
        minutes=args.minutes,
        load=args.load,
        rate=args.rate,
        image_path=args.image,
        warmup_s=args.warmup,
        fake_overrides=None if args.leak_mb is None else leak_overrides(args.leak_mb, args.max_rss_mb),
        max_rss_mb=args.max_rss_mb,
    )
    print(format_summary(s))
    problems = find_problems(s, args.max_drift)
    print("PASS" if not problems else "FAIL: " + "; ".join(problems))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(s, f, indent=1)
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
