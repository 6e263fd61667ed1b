"""A frozen plan, or its compiled form, captured as a CUDA graph on an instance's stream: one
launch replays the whole model, with no Python per operator and no host read (the plan has none).

The graph reads fixed input buffers and writes fixed outputs: a call copies its inputs
in, replays, and the caller copies the outputs out before the instance's next call (an
instance runs one batch at a time). An instance's graphs share one memory pool, safe
since their replays never overlap.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import torch

from serving.runners.frozen_plan import InputSpec

Tensor = torch.Tensor

# plain runs before a capture: cuDNN's algorithm choice and the allocator settle outside the graph
WARMUP_RUNS = 2


class Capturable(Protocol):
    """A frozen plan or a compiled one: its bucket, and ``plan(*inputs)`` -> outputs."""

    @property
    def bucket(self) -> tuple[InputSpec, ...]: ...

    def __call__(self, *inputs: Tensor) -> tuple[Tensor, ...]: ...


class CapturedPlan:
    def __init__(self, plan: Capturable, device: torch.device, stream: torch.cuda.Stream, pool: Any):
        # held for the graph's life: its kernels read the device tensors the plan holds (numbers it placed once)
        self.plan = plan
        self._inputs = [torch.zeros(spec.shape, dtype=spec.dtype, device=device) for spec in plan.bucket]
        with torch.cuda.stream(stream):
            for _ in range(WARMUP_RUNS):
                plan(*self._inputs)
        stream.synchronize()
        self._graph = torch.cuda.CUDAGraph()
        # thread_local: the other instances' threads may launch work on the device meanwhile
        with torch.cuda.graph(self._graph, pool=pool, stream=stream, capture_error_mode="thread_local"):
            self._outputs = plan(*self._inputs)

    def __call__(self, inputs: Sequence[Tensor]) -> tuple[Tensor, ...]:
        for fixed, given in zip(self._inputs, inputs):
            fixed.copy_(given, non_blocking=True)
        self._graph.replay()
        return self._outputs


class GraphCapturer:
    """Captures an instance's plans on its stream, in its memory pool."""

    def __init__(self, device: torch.device, stream: torch.cuda.Stream):
        self._device = device
        self._stream = stream
        self._pool = torch.cuda.graph_pool_handle()

    def __call__(self, plan: Capturable) -> CapturedPlan:
        return CapturedPlan(plan, self._device, self._stream, self._pool)
