"""One instance's frozen plans, one per bucket of input shapes, the least recently used
dropped past a bound (a plan on a GPU may hold a CUDA graph and its memory).

A bucket's first call freezes its plan and runs it; with graphs on, its second call
captures the graph and every later call replays it, so a shape seen once costs no capture.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence

import torch

from serving.runners.frozen_plan import FrozenPlan, InputSpec, bucket_of

Tensor = torch.Tensor
Compiled = Callable[[Sequence[Tensor]], tuple[Tensor, ...]]

MAX_BUCKETS = 64


class BucketEntry:
    __slots__ = ("plan", "calls", "compiled")

    def __init__(self, plan: FrozenPlan):
        self.plan = plan
        self.calls = 0
        self.compiled: Compiled | None = None


class PlanCache:
    """``cache(inputs)`` -> outputs: the bucket's plan, or its captured graph from its second call."""

    def __init__(
        self,
        freeze: Callable[[tuple[InputSpec, ...]], FrozenPlan],
        capture: Callable[[FrozenPlan], Compiled] | None = None,
        max_buckets: int = MAX_BUCKETS,
    ):
        self._freeze = freeze
        self._capture = capture
        self._max = max_buckets
        self._entries: OrderedDict[tuple[InputSpec, ...], BucketEntry] = OrderedDict()

    def __call__(self, inputs: Sequence[Tensor]) -> tuple[Tensor, ...]:
        entry = self.entry(bucket_of(inputs))
        entry.calls += 1
        if entry.compiled is None and self._capture is not None and entry.calls >= 2:
            entry.compiled = self._capture(entry.plan)
        if entry.compiled is not None:
            return entry.compiled(inputs)
        return entry.plan(*inputs)

    def entry(self, bucket: tuple[InputSpec, ...]) -> BucketEntry:
        entry = self._entries.get(bucket)
        if entry is not None:
            self._entries.move_to_end(bucket)
            return entry
        entry = BucketEntry(self._freeze(bucket))
        self._entries[bucket] = entry
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)
        return entry

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def captured(self) -> int:
        return sum(e.compiled is not None for e in self._entries.values())

    def clear(self) -> None:
        self._entries.clear()
