"""Predictor processes SIGKILLed under load: what clients see, per status.

Full OCR (configs/ocr.yml with det and rec as 2 predictor processes each),
``--clients`` closed-loop clients for ``--duration`` s, ``--kills`` predictor
processes SIGKILLed at intervals, alternating det and rec
(tests/support/reliability/kills.py, the same run the e2e test asserts on).
Prints the answers by status, their latencies, the restarts counted in
/metrics and how long readiness took to come back after the last kill.

    python -m bench.kills_under_load [--clients 8 --duration 40 --kills 4]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile

from bench.lib.results import write_result
from bench.lib.script import run_main
from tests.support.reliability.kills import kills_under_load


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--duration", type=float, default=40.0)
    ap.add_argument("--kills", type=int, default=4)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="batchline-kills-") as tmp:
        run = kills_under_load(tmp, clients=args.clients, duration_s=args.duration, kills=args.kills)
    for at, op, pid in run.kills:
        print(f"killed {op} predictor process {pid} at {at:.1f} s")
    by_status: dict[str, list[float]] = {}
    for status, seconds in run.outcomes:
        by_status.setdefault(str(status), []).append(seconds)
    for status, lat in sorted(by_status.items()):
        print(
            f"status {status}: {len(lat)} answers, latency median {statistics.median(lat):.2f} s, max {max(lat):.2f} s"
        )
    not_ready = sum(1 for _, code in run.readiness if code != 200)
    print(
        f"restarts in /metrics: {run.restarts}; /health/ready polled every 0.2 s: {not_ready} of "
        f"{len(run.readiness)} answers not 200; 200 again {run.ready_after_last_kill_s:.2f} s after the last kill"
    )
    print(f"server exit code after SIGTERM: {run.exit_code}")
    write_result(
        "kills_under_load",
        {
            "args": vars(args),
            "kills": run.kills,
            "statuses": {k: len(v) for k, v in by_status.items()},
            "ok_share": run.ok_share,
            "restarts": run.restarts,
            "ready_after_last_kill_s": run.ready_after_last_kill_s,
        },
    )
    print(f"RATIO kills under load: share answered 200 = {run.ok_share:.3f}")
    return 0


if __name__ == "__main__":
    run_main(main)
