"""Batch curves on the device: the time of one predictor call against its batch size.

One runner of an op is loaded in this process exactly as a predictor process loads it
(:func:`serving.runners.runner_modules.load_one` on the config's ``local_service_conf``), and fed
what the op itself feeds it: a committed sample page through det's preprocessing, a text
crop of that page through rec's, repeated to the batch size and collated by the op. A call
returns numpy arrays, so its time includes the copies to and from the GPU and waits for
the GPU to finish.
"""

from __future__ import annotations

import gc
import logging
import statistics
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench.lib.inprocess import load_op
from bench.lib.script import BenchError

log = logging.getLogger(__name__)


@dataclass
class Loaded:
    """An op (hooks only) and one runner of its model."""

    op: Any
    runner: Any


def load_runner(config_path: str, op_name: str) -> Any:
    """One runner of the op's model, on its first device (``load_one``'s default), as a
    predictor process loads it."""
    from serving.config import load_config
    from serving.runners.runner_modules import load_one

    return load_one(load_config(config_path).op[op_name].local_service_conf)


@contextmanager
def loaded(config_path: str, op_name: str) -> Iterator[Loaded]:
    """The op ``op_name`` of ``config_path`` and one runner of it; closed and its device
    memory given back on exit (the servers measured next need it)."""
    runner = load_runner(config_path, op_name)
    try:
        yield Loaded(load_op(config_path, op_name), runner)
    finally:
        runner.close()
        del runner
        gc.collect()
        free_device_cache()


def free_device_cache() -> None:
    try:
        import torch
    except ImportError:
        return
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def det_item(det: Loaded, page: np.ndarray) -> Any:
    """det's preprocessed item of one page (BGR)."""
    (payload,) = det.op.expand({"input": page})
    return det.op.preprocess(payload)


def page_crops(det: Loaded, page: np.ndarray) -> list[np.ndarray]:
    """The text crops det finds on ``page``, in reading order."""
    from ops.image import crop_boxes
    from serving.batching.direct import run_op_direct

    found = run_op_direct(det.op, det.runner, {"input": page})
    return crop_boxes(found["image"], found["boxes"], found.get("box_type", "quad"))


def rec_item(rec: Loaded, crops: Sequence[np.ndarray]) -> Any:
    """rec's preprocessed item of the crop of median width (padded to its width bucket)."""
    if not crops:
        raise BenchError("det found no text crop on the pages")
    crop = sorted(crops, key=lambda c: c.shape[1])[len(crops) // 2]
    return rec.op.preprocess(crop)


def feed_of(op: Any, item: Any, size: int) -> dict[str, np.ndarray]:
    """The op's own feed for ``size`` copies of ``item`` (one shape: one sub-batch)."""
    subs = op.collate([item] * size)
    if len(subs) != 1:
        raise BenchError(f"{size} copies of one item collated into {len(subs)} calls")
    return subs[0].feed


def call_ms(runner: Any, feed: dict[str, np.ndarray], warmup: int, repeats: int) -> list[float]:
    """``repeats`` timed calls after ``warmup`` untimed ones, in ms."""
    for _ in range(warmup):
        runner.run(feed)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        runner.run(feed)
        times.append((time.perf_counter() - start) * 1000.0)
    return times


def curve(loaded_op: Loaded, item: Any, sizes: Sequence[int], warmup: int, repeats: int) -> dict[str, Any]:
    """The op's curve: per batch size, the median call and the median per item."""
    points = []
    shape: list[int] = []
    for size in sizes:
        feed = feed_of(loaded_op.op, item, size)
        shape = list(next(iter(feed.values())).shape)
        times = call_ms(loaded_op.runner, feed, warmup, repeats)
        median = statistics.median(times)
        points.append(
            {
                "batch": size,
                "ms": round(median, 3),
                "ms_per_item": round(median / size, 3),
                "items_per_s": round(size * 1000.0 / median, 1),
                "ms_min": round(min(times), 3),
                "ms_max": round(max(times), 3),
            }
        )
        log.info("%s batch %d: %.2f ms", loaded_op.op.name, size, median)
    return {"input_per_item": shape[1:], "warmup": warmup, "repeats": repeats, "points": points}
