"""An :class:`~serving.runners.onnx_graph.OnnxGraph` frozen for one bucket of input
shapes: what a CUDA graph captures (``cuda_graphs``).

The module already reads nothing back from the device; a plan also fixes every shape.
Made by running the module once on ``meta`` tensors (shapes, no data), it computes the
host steps (``Shape`` and the shape arithmetic after it) then, once, and keeps only
the steps that compute tensors, with their numbers bound and the numbers they use as
tensors already on the device. A step that would read device data on the host fails
on ``meta``, and :class:`CaptureRefused` names it. The plan computes at the module's
precision (its steps' ``run``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from serving.runners.onnx_graph import OnnxGraph, Step, plan_drops, run_steps
from serving.runners.onnx_ops import HOST_INPUTS, Compute

Tensor = torch.Tensor


class CaptureRefused(ValueError):
    """A graph that cannot be frozen for a bucket: a step reads device data on the host, or
    computes on the host from device data. The message names the node."""


@dataclass(frozen=True)
class InputSpec:
    shape: tuple[int, ...]
    dtype: torch.dtype


def bucket_of(inputs: Sequence[Tensor]) -> tuple[InputSpec, ...]:
    """The key of a call's plan: its inputs' shapes and types."""
    return tuple(InputSpec(tuple(t.shape), t.dtype) for t in inputs)


class PlannedStep:
    """One step of a plan: ``run(*args)``, ``args`` the template with ``slots`` filled from the values."""

    __slots__ = ("run", "template", "buffers", "slots", "outputs", "drop", "node")

    def __init__(self, run: Compute, template: list[Any], slots: list[tuple[int, str]], step: Step):
        self.run = run
        self.template = tuple(template)
        self.buffers: tuple[tuple[int, str], ...] = ()  # the plan holds its constants in the template
        self.slots = tuple(slots)
        self.outputs = step.outputs
        self.drop: tuple[str, ...] = ()
        self.node = step.label


class FrozenPlan:
    """``plan(*inputs)`` (shaped and typed as the bucket) -> the graph's outputs, a tuple."""

    def __init__(
        self,
        graph: OnnxGraph,
        bucket: tuple[InputSpec, ...],
        steps: list[PlannedStep],
        fixed_outputs: Mapping[str, Tensor],
        output_specs: Sequence[InputSpec],
    ):
        self.input_names = tuple(graph.input_names)
        self.bucket = bucket
        self.steps = steps
        self.output_names = tuple(graph.output_names)
        self.fixed_outputs = dict(fixed_outputs)  # outputs that depend on shapes alone
        self._entry = graph.entry
        self.output_specs = tuple(output_specs)
        plan_drops(self.steps, self.output_names)

    def __call__(self, *inputs: Tensor) -> tuple[Tensor, ...]:
        if bucket_of(inputs) != self.bucket:
            raise ValueError(f"a plan for {self.bucket} was called with {bucket_of(inputs)}")
        values: dict[str, Tensor] = dict(zip(self.input_names, (self._entry(t) for t in inputs)))
        run_steps(self.steps, values, {})
        return tuple(values[n] if n in values else self.fixed_outputs[n] for n in self.output_names)

    def __repr__(self) -> str:
        return f"FrozenPlan({len(self.steps)} steps for {[s.shape for s in self.bucket]})"


def freeze(graph: OnnxGraph, bucket: tuple[InputSpec, ...], device: torch.device | str) -> FrozenPlan:
    """The plan of ``graph`` (its buffers on ``device``, at its compute type) for inputs of ``bucket``.

    Raises :class:`CaptureRefused` naming the node that reads device data on the host."""
    if len(bucket) != len(graph.input_names):
        raise ValueError(f"expected {len(graph.input_names)} inputs ({graph.input_names}), got {len(bucket)}")
    device = torch.device(device)
    buffers = dict(graph.named_buffers())
    host: dict[str, Tensor] = {}  # values computed from shapes: numbers, for this bucket
    entry = graph.compute_dtype or torch.float32
    shapes: dict[str, Tensor] = {
        name: torch.empty(spec.shape, dtype=entry if spec.dtype.is_floating_point else spec.dtype, device="meta")
        for name, spec in zip(graph.input_names, bucket)
    }
    steps: list[PlannedStep] = []
    for step in graph.steps:
        reads_numbers = HOST_INPUTS.get(step.op_type, frozenset())
        template = list(step.template)
        trial = list(step.template)
        slots: list[tuple[int, str]] = []
        for position, attribute in step.buffers:
            template[position] = buffers[attribute]
            trial[position] = buffers[attribute].to("meta")
        for position, name in step.slots:
            if name in shapes:
                slots.append((position, name))
                trial[position] = shapes[name]
            elif step.on_host or position in reads_numbers:
                template[position] = trial[position] = host[name]
            else:  # a number computed from shapes, used as a tensor: on the device once, not every call
                template[position] = host[name].to(device)
                trial[position] = host[name].to("meta")
        try:
            results = as_tuple(step.run(*trial))
        except (NotImplementedError, RuntimeError) as e:
            raise CaptureRefused(f"node {step.label} reads device data on the host: {e}") from None
        if step.on_host:
            host.update(zip(step.outputs, results))
            continue
        if not all(r.is_meta for r in results):
            raise CaptureRefused(f"node {step.label} computes on the host from device data")
        shapes.update(zip(step.outputs, results))
        steps.append(PlannedStep(step.run, template, slots, step))
    fixed = {n: buffers[a] for n, a in graph.constant_outputs.items()}
    fixed.update({n: host[n].to(device) for n in graph.output_names if n in host})
    final = {**fixed, **shapes}
    output_specs = [InputSpec(tuple(final[n].shape), final[n].dtype) for n in graph.output_names]
    return FrozenPlan(graph, bucket, steps, fixed, output_specs)


def as_tuple(result: Any) -> tuple[Tensor, ...]:
    return result if isinstance(result, tuple) else (result,)
