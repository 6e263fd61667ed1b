"""The served-rec table's limit: the rec op of configs/rec.yml and its
OpenVINO runners in this process, no server. One thread per runner (one
1-thread instance per core), each taking the next crop and doing what a
server does with it: decode the PNG, preprocess, run the model on it alone,
postprocess. OpenVINO's infer releases the GIL, so the threads run in parallel.
:func:`engine_loop` is the served engine in this process, without HTTP."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from bench.lib.http_load import LoadResult, round_robin
from bench.lib.inputs import decode_png


def read_crop(op: Any, runner: Any, png: bytes) -> tuple[str, float]:
    """(text, score) of one PNG crop, as ``batchline serve`` computes it for configs/rec.yml."""
    from serving.batching.direct import run_op_direct

    out = run_op_direct(op, runner, {"input": decode_png(png)})
    return out["text"], out["score"]


def bare_engine_loop(
    op: Any, runners: Sequence[Any], crops: Sequence[bytes], *, duration_s: float, warmup_s: float
) -> LoadResult:
    """Crops read by ``len(runners)`` threads in a closed loop; the answers of the
    ``duration_s`` window after ``warmup_s`` are counted (latency: one crop's time)."""

    def reader(runner: Any) -> Callable[[bytes], str | None]:
        def read(png: bytes) -> None:
            read_crop(op, runner, png)  # a failure ends its thread, as it always did here

        return read

    return _closed_loop([reader(r) for r in runners], crops, "bare-rec", duration_s, warmup_s)


def engine_loop(
    config_path: str, crops: Sequence[bytes], *, clients: int, duration_s: float, warmup_s: float, texts: int = 0
) -> tuple[LoadResult, list[str]]:
    """The served-rec engine without HTTP: ``config_path``'s pipeline (batcher, instances,
    hand-offs, as ``batchline serve`` runs it) in this process, ``clients`` threads each
    submitting its next crop (decoded here, as the HTTP route decodes it) when the last
    was answered; and its texts of the first ``texts`` crops, read before the load. What
    separates the engine's cost from the HTTP front's."""
    from serving.batching.pipeline import Pipeline
    from serving.config import load_config

    images = [decode_png(png) for png in crops]
    pipeline = Pipeline(load_config(config_path))
    pipeline.start()

    def submit(image: Any) -> str | None:
        try:
            pipeline.submit(image).result()
        except Exception as exc:  # noqa: BLE001 - counted, as the HTTP client counts a failed answer
            return repr(exc)
        return None

    try:
        read = [pipeline.submit(image).result()["text"] for image in images[:texts]]
        result = _closed_loop([submit] * clients, images, "engine-rec", duration_s, warmup_s)
    finally:
        pipeline.shutdown(timeout=30)
    return result, read


def _closed_loop(
    serves: Sequence[Callable[[Any], str | None]], inputs: Sequence[Any], name: str, duration_s: float, warmup_s: float
) -> LoadResult:
    """One thread per ``serves`` entry, each calling it on the next of ``inputs`` (in turn, the
    threads together going round them) when its last call returned. The calls of the
    ``duration_s`` window after ``warmup_s`` are counted, with one call's time as latency; a
    call that returns an error text counts as an error (the first text kept)."""
    order = round_robin(len(inputs))
    lock = threading.Lock()
    result = LoadResult(len(serves), duration_s)
    began = time.monotonic()
    window = (began + warmup_s, began + warmup_s + duration_s)

    def client(serve: Callable[[Any], str | None]) -> None:
        while True:
            t0 = time.monotonic()
            if t0 >= window[1]:
                return
            with lock:
                value = inputs[next(order)]
            error = serve(value)
            t1 = time.monotonic()
            with lock:
                if error is not None:
                    result.errors += 1
                    result.first_error = result.first_error or error
                elif window[0] <= t0 and t1 <= window[1]:
                    result.ok += 1
                    result.latencies_s.append(t1 - t0)

    threads = [threading.Thread(target=client, args=(s,), name=f"{name}-{i}") for i, s in enumerate(serves)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return result
