"""Rec served against the bare engine on the same crops: served / bare.

**bare**: one process per core, each pinned to its core, each with one
1-thread predictor built from the config's own ``local_service_conf``
(engine, precision; ``instance_num: 1``, ``thread_num: 1``, in-process,
through ``serving.runners.factory.create_runners``, so the bare loop follows
whatever engine the config names), each looping over the bench crops
(bench/lib/inputs.py ``bench_crops``) preprocessed and padded by the op's own
hooks beforehand: only predictor calls are timed. At batch 1 and at batch 8
(crops sorted by padded width, then taken 8 at a time, so a call holds one
width); the bare figure is the better of the two, in crops/s over all
processes.

**served**: ``batchline serve`` on the config as it is, 32 closed-loop
clients, one crop per request (the same crops, PNG), crops/s.

Rounds alternate bare and served (bare first, then served first). Prints each
round and the median served / bare.

    python bench/bare_rec.py [--config rec] [--clients 32] [--duration 10] [--rounds 2]
"""

from __future__ import annotations

import argparse
import dataclasses
import multiprocessing
import os
import statistics
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.lib.configs import pipeline_name, repo_config_path  # noqa: E402
from bench.lib.inputs import bench_crops  # noqa: E402
from bench.lib.measure import closed_loop, image_payloads  # noqa: E402
from bench.lib.results import verdict, write_result  # noqa: E402
from bench.lib.script import BenchError, run_main  # noqa: E402
from bench.lib.server import served  # noqa: E402

TARGET = 0.8
BATCHES = (1, 8)


def bare_conf(config_path: str, op_name: str) -> Any:
    """The op's ``local_service_conf`` as one in-process, 1-thread predictor."""
    from serving.config import load_config

    conf = load_config(config_path).op[op_name].local_service_conf
    return dataclasses.replace(conf, instance_num=1, thread_num=1, instance_mode="thread")


def feeds(op: Any, crops: list[bytes], batch: int) -> list[tuple[dict, int]]:
    """Predictor feeds of ``batch`` crops of one padded width each, with their crop count."""
    from bench.lib.inputs import decode_png
    from serving.engine.execute import predictor_calls

    items = [op.preprocess(p) for c in crops for p in op.expand({"input": decode_png(c)})]
    items.sort(key=lambda it: op.bucket_width(it.width) if it.pad_width is None else it.pad_width)
    out = []
    for start in range(0, len(items), batch):
        for sub in predictor_calls(op, items[start : start + batch], []):
            out.append((sub.feed, len(sub.indices)))
    return out


def _worker(config_path: str, op_name: str, cpu: int, batch: int, duration: float, start: Any, result: Any) -> None:
    """One bare process: pinned to ``cpu``, its own predictor, calls until ``duration`` passed."""
    os.sched_setaffinity(0, [cpu])
    from bench.lib.inprocess import make_op
    from serving.runners.factory import create_runners

    op, _ = make_op(config_path, op_name, instances=0)
    (runner,) = create_runners(bare_conf(config_path, op_name), 1)
    work = feeds(op, bench_crops(), batch)
    for feed, _n in work:  # every shape once, before the clock
        runner.run(feed)
    start.wait()
    crops, calls, i = 0, 0, 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < duration:
        feed, n = work[i % len(work)]
        runner.run(feed)
        crops += n
        calls += 1
        i += 1
    result.put((cpu, crops, calls, time.perf_counter() - t0))
    runner.close()


def bare(config_path: str, op_name: str, batch: int, duration: float) -> dict:
    """Crops/s of one bare process per core running at once."""
    cpus = sorted(os.sched_getaffinity(0))
    ctx = multiprocessing.get_context("spawn")
    start, result = ctx.Barrier(len(cpus)), ctx.Queue()
    procs = [
        ctx.Process(target=_worker, args=(config_path, op_name, cpu, batch, duration, start, result)) for cpu in cpus
    ]
    for p in procs:
        p.start()
    try:
        rows = [result.get(timeout=600) for _ in procs]
    finally:
        for p in procs:
            p.join(30)
            if p.is_alive():
                p.kill()
    if any(p.exitcode for p in procs):
        raise BenchError(f"a bare rec process failed (exit codes {[p.exitcode for p in procs]})")
    rate = sum(crops / seconds for _, crops, _, seconds in rows)
    calls = sum(c for _, _, c, _ in rows)
    per_call = sum(r[1] for r in rows) / calls
    return {"batch": batch, "processes": len(rows), "crops_per_s": rate, "rows_per_call": per_call}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default="rec", help="a configs/ name or a path")
    ap.add_argument("--op", default="rec")
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--duration", type=float, default=10.0, help="seconds per measurement")
    ap.add_argument("--warmup", type=float, default=3.0, help="unmeasured seconds before each served measurement")
    ap.add_argument("--prime", type=float, default=10.0, help="unmeasured served load before the rounds")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()

    config_path = args.config if os.path.isfile(args.config) else repo_config_path(args.config)
    conf = bare_conf(config_path, args.op)
    engine = "openvino" if conf.use_openvino else ("onednn" if conf.use_mkldnn else "plain")
    engine = getattr(conf, "engine", None) or engine
    name = pipeline_name(config_path)
    payloads = image_payloads(bench_crops())
    bare_rates: dict[int, list[float]] = {b: [] for b in BATCHES}
    served_rates: list[float] = []
    batches: list[float] = []
    with served(config_path) as srv:
        if args.prime > 0:
            closed_loop(srv.url, name, payloads, args.clients, args.prime, 0.0, metrics=False)
        for rnd in range(args.rounds):
            order = ("bare", "served") if rnd % 2 == 0 else ("served", "bare")
            for who in order:
                if who == "bare":
                    for b in BATCHES:
                        res = bare(config_path, args.op, b, args.duration)
                        bare_rates[b].append(res["crops_per_s"])
                        print(
                            f"round {rnd} bare   batch {b}: {res['crops_per_s']:7.2f} crops/s "
                            f"({res['processes']} processes x 1 thread, {res['rows_per_call']:.1f} crops/call)",
                            flush=True,
                        )
                else:
                    res = closed_loop(srv.url, name, payloads, args.clients, args.duration, args.warmup)
                    served_rates.append(res["qps"])
                    batch = (res.get("op_stats") or {}).get(args.op, {}).get("mean_batch_size")
                    batches.append(batch or float("nan"))
                    print(
                        f"round {rnd} served {args.clients} clients: {res['qps']:7.2f} crops/s, "
                        f"p50 {res['latency_ms']['p50']:.1f} ms, mean batch {batch or float('nan'):.1f}",
                        flush=True,
                    )
    best = {b: statistics.median(v) for b, v in bare_rates.items()}
    best_batch = max(best, key=lambda b: best[b])
    ratios = [s / max(bare_rates[b][i] for b in BATCHES) for i, s in enumerate(served_rates)]
    ratio = statistics.median(ratios)
    write_result(
        "bare_rec",
        {
            "args": vars(args),
            "engine": engine,
            "precision": conf.precision,
            "bare_crops_per_s": {str(b): v for b, v in bare_rates.items()},
            "served_crops_per_s": served_rates,
            "served_mean_batch": batches,
            "ratios": ratios,
            "ratio": ratio,
            "target": TARGET,
        },
    )
    print(
        f"bare ({engine}, {conf.precision}, one 1-thread process per core): batch 1 {best[1]:.2f}, "
        f"batch 8 {best[8]:.2f} crops/s (best: batch {best_batch})"
    )
    rate = statistics.median(served_rates)
    print(f"served ({os.path.basename(config_path)} as it is, {args.clients} clients): {rate:.2f} crops/s")
    rounds = ", ".join(f"{r:.2f}x" for r in ratios)
    print(f"served / bare per round: {rounds} (target >= {TARGET}: {verdict(ratio, TARGET)})")
    print(f"RATIO rec served / bare = {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    run_main(main)
