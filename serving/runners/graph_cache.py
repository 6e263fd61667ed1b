"""One instance's CUDA graphs, one per bucket of input shapes (``cuda_graphs``).

A bucket's first call runs the module (a shape seen once costs no freezing and no
capture); its second freezes the plan and captures it, and every later call replays
it. The least recently used buckets are dropped past a bound: a graph holds device
memory. A bucket whose capture fails (out of device memory, a shape the model refuses
only there) is logged and runs the module from then on: the request is not failed for it.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, Sequence

import torch

from serving.runners.frozen_plan import InputSpec, bucket_of

log = logging.getLogger(__name__)

Tensor = torch.Tensor
Compiled = Callable[[Sequence[Tensor]], tuple[Tensor, ...]]

MAX_BUCKETS = 64


class GraphCache:
    """``cache(inputs)`` -> outputs: the module's, or the bucket's captured graph's from its second call."""

    def __init__(
        self,
        module: Callable[..., tuple[Tensor, ...]],
        compile_bucket: Callable[[tuple[InputSpec, ...]], Compiled],
        max_buckets: int = MAX_BUCKETS,
    ):
        self._module = module
        self._compile = compile_bucket
        self._max = max_buckets
        self._seen: OrderedDict[tuple[InputSpec, ...], Compiled | None] = OrderedDict()

    def __call__(self, inputs: Sequence[Tensor]) -> tuple[Tensor, ...]:
        bucket = bucket_of(inputs)
        if bucket not in self._seen:
            self._remember(bucket)
            return self._module(*inputs)
        self._seen.move_to_end(bucket)
        compiled = self._seen[bucket]
        if compiled is None:
            compiled = self._compiled(bucket)
            self._seen[bucket] = compiled
        return compiled(inputs)

    def _compiled(self, bucket: tuple[InputSpec, ...]) -> Compiled:
        try:
            return self._compile(bucket)
        except Exception as e:  # noqa: BLE001 - the module still answers: the capture was an optimisation
            log.warning("no CUDA graph for %s (%s: %s): that shape runs the module", bucket, type(e).__name__, e)
            return lambda inputs: self._module(*inputs)

    def _remember(self, bucket: tuple[InputSpec, ...]) -> None:
        self._seen[bucket] = None  # seen once: captured on its next call
        while len(self._seen) > self._max:
            self._seen.popitem(last=False)

    def __len__(self) -> int:
        return len(self._seen)

    @property
    def captured(self) -> int:
        return sum(c is not None for c in self._seen.values())

    def clear(self) -> None:
        self._seen.clear()
