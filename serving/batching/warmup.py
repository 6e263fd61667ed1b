"""Warm-up before serving: every shape an op warms runs once on every
instance, and the batcher's cost model is seeded, so the first requests meet
warm kernels and a batcher that already knows what a batch costs."""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from serving.batching.stage import OpStage
from serving.config.engines import ENGINES
from serving.op import Runner

log = logging.getLogger(__name__)


def warm(stage: OpStage, runners: list[Runner]) -> None:
    """Run every warm-up shape once per instance (the first one at every predictor
    batch size too; twice where the engine prepares a shape on its second run), then
    seed the cost model with the first shape at batch 1 and at the largest batch of it
    that ``max_batch_units`` allows (warm-up must not run out of the memory the budget
    protects), timed by :func:`seed_seconds`."""
    items = list(stage.op.warmup_items())
    if not items:
        return
    conf = stage.conf.local_service_conf
    runs = ENGINES[conf.engine].warmup_runs(conf)
    max_batch = conf.max_batch_size
    largest = stage.batch_limit(items[0])
    if largest < max_batch:
        log.info(
            "op %s: max_batch_units %s holds %d of the first warm-up item; warm-up batches stop there",
            stage.name,
            stage.conf.local_service_conf.max_batch_units,
            largest,
        )
    # every shape, then the first one at every predictor batch size
    batches = [[item] for item in items] + [[items[0]] * size for size in stage.run_sizes if size <= largest]
    for runner in runners:
        for batch in batches:
            for _ in range(runs):
                stage.run_batch(runner, batch, record=False)
    for size in sorted({1, largest}):
        elapsed = seed_seconds(stage, runners, [items[0]] * size)
        # with units the seeds are kept for good: the runs sure to vary the item count at one item size
        units = size * math.prod(stage.item_extent(items[0])) if stage.counts_units else None
        stage.batcher.record_run(size, elapsed, units, seed=stage.counts_units)


def seed_seconds(stage: OpStage, runners: Sequence[Runner], batch: list[Any]) -> float:
    """Seconds ``batch`` takes on an instance while every instance runs it (the mean of the
    second, warm, of two runs started together). Timed alone, an instance has the caches to
    itself and a CPU batch looks cheaper than under load (docs/DESIGN_NOTES.md, "Adaptive dispatch")."""
    if len(runners) == 1:
        return _timed_twice(stage, runners[0], batch, None)
    start = threading.Barrier(len(runners))
    with ThreadPoolExecutor(len(runners), thread_name_prefix=f"{stage.name}-seed") as pool:
        futures = [pool.submit(_timed_twice, stage, runner, batch, start) for runner in runners]
    errors = [e for e in (f.exception() for f in futures) if e is not None]
    if errors:  # the instance that failed, not the ones it left waiting
        raise next((e for e in errors if not isinstance(e, threading.BrokenBarrierError)), errors[0])
    return sum(f.result() for f in futures) / len(futures)


def _timed_twice(stage: OpStage, runner: Runner, batch: list[Any], start: threading.Barrier | None) -> float:
    elapsed = 0.0
    try:
        for _ in range(2):  # the second run is the warm one
            if start is not None:
                start.wait()
            began = time.monotonic()
            stage.run_batch(runner, batch, record=False)
            elapsed = time.monotonic() - began
    except BaseException:
        if start is not None:
            start.abort()  # the other instances stop waiting for this one
        raise
    return elapsed
