"""One instance's forms of its model per bucket of input shapes: a frozen plan, its
CUDA graph (``cuda_graphs``), its compiled form (``torch_compile``).

A bucket's first call runs the module (a shape seen once costs no freezing and no
capture); its second builds the bucket's form (the plan, captured on a GPU) and asks
the compiler, if any, for the compiled plan; every later call runs the form, rebuilt
around the compiled plan once that is ready. The least recently used buckets are
dropped past a bound: a graph holds device memory. A bucket whose form cannot be built
(out of device memory, a shape the model refuses only there) is logged and runs what
it ran before: the request is not failed for an optimisation.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from serving.runners.frozen_plan import InputSpec, bucket_of
from serving.runners.plan_compiler import PENDING, PlanCompiler

log = logging.getLogger(__name__)

Tensor = torch.Tensor
Bucket = tuple[InputSpec, ...]
Form = Callable[[Sequence[Tensor]], tuple[Tensor, ...]]
# (bucket, the compiled plan or None for the frozen one) -> the bucket's form
BuildForm = Callable[[Bucket, Any], Form]

MAX_BUCKETS = 64


@dataclass
class _Entry:
    form: Form
    final: bool  # nothing more to wait for from the compiler
    compiled: bool = False


class BucketCache:
    """``cache(inputs)`` -> outputs: the module's, or the bucket's form's from its second call."""

    def __init__(
        self,
        module: Callable[..., tuple[Tensor, ...]],
        build: BuildForm,
        max_buckets: int = MAX_BUCKETS,
        compiler: PlanCompiler | None = None,
    ):
        self._module = module
        self._build = build
        self._max = max_buckets
        self._compiler = compiler
        self._seen: OrderedDict[Bucket, _Entry | None] = OrderedDict()

    def __call__(self, inputs: Sequence[Tensor]) -> tuple[Tensor, ...]:
        bucket = bucket_of(inputs)
        if bucket not in self._seen:
            self._remember(bucket)
            return self._module(*inputs)
        self._seen.move_to_end(bucket)
        entry = self._seen[bucket]
        if entry is None:
            entry = _Entry(self._built(bucket, None, lambda inputs: self._module(*inputs)), self._compiler is None)
            if self._compiler is not None:
                self._compiler.request(bucket)  # another instance on the device may have had it compiled
            self._seen[bucket] = entry
        if not entry.final:
            self._upgrade(bucket, entry)
        return entry.form(inputs)

    def _upgrade(self, bucket: Bucket, entry: _Entry) -> None:
        assert self._compiler is not None
        compiled = self._compiler.result(bucket)
        if compiled is PENDING:
            return
        entry.final = True
        if compiled is not None:
            before = entry.form
            entry.form = self._built(bucket, compiled, before)
            entry.compiled = entry.form is not before

    def _built(self, bucket: Bucket, compiled: Any, fallback: Form) -> Form:
        try:
            return self._build(bucket, compiled)
        except Exception as e:  # noqa: BLE001 - the module still answers: the form was an optimisation
            what = "the compiled plan's form" if compiled is not None else "the frozen plan or CUDA graph"
            log.warning("could not build %s for %s (%s: %s): it runs as before", what, bucket, type(e).__name__, e)
            return fallback

    def _remember(self, bucket: Bucket) -> None:
        self._seen[bucket] = None  # seen once: its form is built on its next call
        while len(self._seen) > self._max:
            self._seen.popitem(last=False)

    def __len__(self) -> int:
        return len(self._seen)

    @property
    def captured(self) -> int:
        """Buckets past their second call (with ``cuda_graphs``, each a captured graph)."""
        return sum(e is not None for e in self._seen.values())

    @property
    def compiled(self) -> int:
        """Buckets running their compiled plan."""
        return sum(e is not None and e.compiled for e in self._seen.values())

    def clear(self) -> None:
        self._seen.clear()
