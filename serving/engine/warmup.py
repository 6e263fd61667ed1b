"""Warm-up before serving: every shape an op warms runs once on every
instance, and the batcher's cost model is seeded, so the first requests meet
warm kernels and a batcher that already knows what a batch costs."""

from __future__ import annotations

import logging
import math
import time

from serving.engine.stage import OpStage
from serving.op import Runner

log = logging.getLogger(__name__)


def warm(stage: OpStage, runners: list[Runner]) -> None:
    """Run every warm-up shape once per instance (and the first one at every
    predictor batch size), then seed the batcher's cost model with the
    first shape at batch 1 and at the largest batch of it: max_batch_size, or
    fewer where max_batch_units holds fewer (warm-up must not run out of the
    memory the budget protects); in padded units where the batcher counts them."""
    items = list(stage.op.warmup_items())
    if not items:
        return
    max_batch = stage.conf.local_service_conf.max_batch_size
    largest = stage.batch_limit(items[0])
    if largest < max_batch:
        log.info(
            "op %s: max_batch_units %s holds %d of the first warm-up item; warm-up batches stop there",
            stage.name,
            stage.conf.local_service_conf.max_batch_units,
            largest,
        )
    for runner in runners:
        for item in items:
            stage.run_batch(runner, [item], record=False)
        for size in stage.run_sizes:  # the first shape at every predictor batch size
            if size <= largest:
                stage.run_batch(runner, [items[0]] * size, record=False)
    for size in sorted({1, largest}):
        elapsed = 0.0
        for _ in range(2):  # the second run is the warm one
            began = time.monotonic()
            stage.run_batch(runners[0], [items[0]] * size, record=False)
            elapsed = time.monotonic() - began
        # with units the seeds are kept for good: the runs sure to vary the item count at one item size
        units = size * math.prod(stage.item_extent(items[0])) if stage.counts_units else None
        stage.batcher.record_run(size, elapsed, units, seed=stage.counts_units)
