"""Simulated batching on hardware we cannot run here: the real batcher
(tuning/simulate.py drives serving.batching.batcher.Batcher with its injectable
clock) on a cost curve, over a sweep of arrival rates, for three policies:
adaptive (ours), fixed (Triton-like: wait up to max_queue_delay unless the
batch is full) and no batching. A SIMULATION, not a measurement.

    python -m bench.simulate                                 # GPU-like: 20 ms + 2 ms/item
    python -m bench.simulate --fixed-ms 5 --per-item-ms 4    # CPU-like: little fixed share
    python -m bench.simulate --measured tune-report.json --op rec   # a curve batchline tune measured
    python -m bench.simulate --arrivals bursts --burst 8 --instances 2 --plot sim.png

The default curve is GPU-like: 20 ms fixed + 2 ms per item, so one instance
without batching saturates at ~45 requests/s (Paddle Serving's own T4 figure
without dynamic batching is 45 QPS). Prints, per rate and policy, throughput,
p50/p99 and the mean batch; then the highest rate each policy sustains with
p99 under --p99-ms, and their ratio to no batching.
"""

from __future__ import annotations

import argparse
import json
import sys

from bench.lib.results import write_result
from bench.lib.script import BenchError, run_main
from tuning.recommend import Option, max_rate
from tuning.simulate import (
    Settings,
    burst_arrivals,
    linear_cost,
    measured_cost,
    poisson_arrivals,
    simulate,
)


def policies(max_batch: int, delay_ms: float, instances: int) -> dict[str, Settings]:
    spread = instances > 1
    return {
        "adaptive": Settings(max_batch, delay_ms, policy="adaptive", instances=instances, spread=spread),
        "fixed": Settings(max_batch, delay_ms, policy="fixed", instances=instances, spread=spread),
        "none": Settings.no_batching(instances),
    }


def curve(args: argparse.Namespace):
    if args.measured:
        with open(args.measured, encoding="utf-8") as f:
            report = json.load(f)
        ops = {op["op"]: op for op in report["ops"]}
        if args.op not in ops:
            raise BenchError(f"{args.measured} has no op {args.op!r} (it has {', '.join(ops)})")
        op = ops[args.op]
        layout = args.layout or op["tuned"]["layout"]
        curves = {c["layout"]: c for c in op["curves"]}
        if layout not in curves:
            raise BenchError(f"no curve for layout {layout!r} (measured: {', '.join(curves)})")
        if args.instances is None:
            args.instances = int(layout.split(" x ")[0])
        points = curves[layout]["points_s"]
        return measured_cost({int(n): s for n, s in points.items()}), f"measured ({args.op}, {layout})"
    label = f"{args.fixed_ms:g} ms + {args.per_item_ms:g} ms/item"
    return linear_cost(args.fixed_ms / 1000, args.per_item_ms / 1000), label


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fixed-ms", type=float, default=20.0)
    ap.add_argument("--per-item-ms", type=float, default=2.0)
    ap.add_argument("--measured", help="a `batchline tune --json` report: use its measured curve")
    ap.add_argument("--op", default="rec", help="the op of --measured")
    ap.add_argument("--layout", help="the layout of --measured (default: the one tune chose)")
    ap.add_argument("--max-batch", type=int, default=32)
    ap.add_argument("--delay-ms", type=float, default=5.0)
    ap.add_argument("--instances", type=int, help="default: 1, or the --measured layout's")
    ap.add_argument("--arrivals", choices=("poisson", "bursts"), default="poisson")
    ap.add_argument("--burst", type=int, default=8)
    ap.add_argument("--rates", default="10,25,40,60,100,150,200,300,400")
    ap.add_argument("--requests", type=int, default=6000, help="simulated requests per point")
    ap.add_argument("--p99-ms", type=float, default=200.0)
    ap.add_argument("--plot", help="write a PNG of throughput and p99 against the rate")
    ap.add_argument("--name", default="simulate_gpu", help="results file bench/results/NAME.json")
    args = ap.parse_args()

    cost, label = curve(args)
    args.instances = args.instances or 1
    rates = [float(r) for r in args.rates.split(",")]
    runs = policies(args.max_batch, args.delay_ms, args.instances)

    def arrivals(rate: float) -> list[float]:
        if args.arrivals == "bursts":
            return burst_arrivals(rate, args.requests, args.burst, seed=1)
        return poisson_arrivals(rate, args.requests, seed=1)

    print(f"SIMULATION of one op: cost {label}, {args.instances} instance(s), {args.arrivals} arrivals")
    print(f"{'rate':>6} {'policy':>9} {'req/s':>8} {'p50 ms':>9} {'p99 ms':>9} {'batch':>6}")
    sweep = []
    for rate in rates:
        for name, settings in runs.items():
            r = simulate(settings, cost, arrivals(rate), seed=1)
            sweep.append({"rate": rate, "policy": name, **r.as_dict()})
            print(f"{rate:6g} {name:>9} {r.throughput_rps:8.1f} {r.p50_ms:9.1f} {r.p99_ms:9.1f} {r.mean_batch:6.1f}")
    best = {
        name: max_rate(Option(name, settings, cost), [1], args.p99_ms, requests=min(args.requests, 3000)).max_rps
        for name, settings in runs.items()
    }
    print(f"highest rate with p99 <= {args.p99_ms:g} ms (simulated):")
    for name, rate in best.items():
        ratio = rate / best["none"] if best["none"] else float("nan")
        print(f"  {name:>9}: {rate:7.1f} req/s  ({ratio:.2f}x no batching)")
    doc = {
        "simulation": True,
        "cost": label,
        "settings": {n: s.__dict__ for n, s in runs.items()},
        "arrivals": args.arrivals,
        "sweep": sweep,
        "max_rate_within_p99": best,
        "p99_ms": args.p99_ms,
        "command": "python -m bench.simulate " + " ".join(sys.argv[1:]),
    }
    print("wrote", write_result(args.name, doc))
    if args.plot:
        plot(sweep, args.plot, label)
        print("wrote", args.plot)
    return 0


def plot(sweep: list[dict], path: str, label: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for policy in ("adaptive", "fixed", "none"):
        rows = [r for r in sweep if r["policy"] == policy]
        left.plot([r["rate"] for r in rows], [r["throughput_rps"] for r in rows], marker="o", label=policy)
        line = right.plot([r["rate"] for r in rows], [r["p99_ms"] for r in rows], marker="o", label=f"{policy} p99")
        right.plot([r["rate"] for r in rows], [r["p50_ms"] for r in rows], ls="--", color=line[0].get_color())
    left.set(xlabel="offered requests/s", ylabel="served requests/s", title="throughput (simulated)")
    right.set(xlabel="offered requests/s", ylabel="ms", title="p99 (solid), p50 (dashed), simulated", yscale="log")
    left.legend()
    fig.suptitle(f"Simulated batching, cost {label}")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


if __name__ == "__main__":
    run_main(main)
