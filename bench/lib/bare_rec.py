"""The served-rec table's limit: the rec op of configs/rec.yml and its
OpenVINO runners in this process, no server. One thread per runner (one
1-thread instance per core), each taking the next crop and doing what a
server does with it: decode the PNG, preprocess, run the model on it alone,
postprocess. OpenVINO's infer releases the GIL, so the threads run in parallel.
:func:`engine_loop` is the served engine in this process, without HTTP."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

from bench.lib.http_load import LoadResult, round_robin
from bench.lib.inputs import decode_png


def read_crop(op: Any, runner: Any, png: bytes) -> tuple[str, float]:
    """(text, score) of one PNG crop, as ``batchline serve`` computes it for configs/rec.yml."""
    from serving.engine.direct import run_op_direct

    out = run_op_direct(op, runner, {"input": decode_png(png)})
    return out["text"], out["score"]


def bare_engine_loop(
    op: Any, runners: Sequence[Any], crops: Sequence[bytes], *, duration_s: float, warmup_s: float
) -> LoadResult:
    """Crops read by ``len(runners)`` threads in a closed loop; the answers of the
    ``duration_s`` window after ``warmup_s`` are counted (latency: one crop's time)."""
    order = round_robin(len(crops))
    lock = threading.Lock()
    result = LoadResult(len(runners), duration_s)
    began = time.monotonic()
    window = (began + warmup_s, began + warmup_s + duration_s)

    def work(runner: Any) -> None:
        while True:
            t0 = time.monotonic()
            if t0 >= window[1]:
                return
            with lock:
                png = crops[next(order)]
            read_crop(op, runner, png)
            t1 = time.monotonic()
            if window[0] <= t0 and t1 <= window[1]:
                with lock:
                    result.ok += 1
                    result.latencies_s.append(t1 - t0)

    threads = [threading.Thread(target=work, args=(r,), name=f"bare-rec-{i}") for i, r in enumerate(runners)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return result


def engine_loop(
    config_path: str, crops: Sequence[bytes], *, clients: int, duration_s: float, warmup_s: float, texts: int = 0
) -> tuple[LoadResult, list[str]]:
    """The served-rec engine without HTTP: ``config_path``'s pipeline (batcher, instances,
    hand-offs, as ``batchline serve`` runs it) in this process, ``clients`` threads each
    submitting its next crop (decoded here, as the HTTP route decodes it) when the last
    was answered; and its texts of the first ``texts`` crops, read before the load. What
    separates the engine's cost from the HTTP front's."""
    from serving.config import load_config
    from serving.engine.pipeline import Pipeline

    images = [decode_png(png) for png in crops]
    pipeline = Pipeline(load_config(config_path))
    pipeline.start()
    read = [pipeline.submit(image).result()["text"] for image in images[:texts]]
    order = round_robin(len(images))
    lock = threading.Lock()
    result = LoadResult(clients, duration_s)
    began = time.monotonic()
    window = (began + warmup_s, began + warmup_s + duration_s)

    def client() -> None:
        while True:
            t0 = time.monotonic()
            if t0 >= window[1]:
                return
            with lock:
                image = images[next(order)]
            try:
                pipeline.submit(image).result()
            except Exception as exc:  # noqa: BLE001 - counted, as the HTTP client counts a failed answer
                with lock:
                    result.errors += 1
                    result.first_error = result.first_error or repr(exc)
                continue
            t1 = time.monotonic()
            if window[0] <= t0 and t1 <= window[1]:
                with lock:
                    result.ok += 1
                    result.latencies_s.append(t1 - t0)

    threads = [threading.Thread(target=client, name=f"engine-rec-{i}") for i in range(clients)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        pipeline.shutdown(timeout=30)
    return result, read
