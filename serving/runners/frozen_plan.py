"""An :class:`~serving.runners.onnx_graph.OnnxGraph` frozen for one bucket of input shapes.

Every value computable from the constants and the inputs' shapes (``Shape``, and the
``Slice``, ``Concat``, ``Gather``, ``Cast`` ... on shapes; a ``Resize``'s scales) is
computed once, on the CPU, when the plan is made. The plan keeps only the steps that
compute tensors, each shape-like argument already a host value and each constant operand
already on the device, so a call reads nothing back from the device and every shape in
it is fixed: what a CUDA graph capture needs. The plan is made by running the graph on
``meta`` tensors, which hold shapes and no data: a step that would read data on the
host fails there, and :class:`CaptureRefused` names it.

Reduced precision is decided here too, once per step: with fp16/bf16 weights
(:meth:`OnnxGraph.lower_precision`), convolutions and matrix products take their inputs
in that type, the reductions (softmax, layer norm's means, powers and roots) and the
steps that give the graph's outputs (the DB and CTC heads) compute in fp32.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import torch

from serving.runners.onnx_graph import OnnxGraph, Step
from serving.runners.onnx_ops import Compute

Tensor = torch.Tensor

# the input positions each operator reads as host values (shapes, axes, scales), never as tensors
HOST_INPUTS: Mapping[str, frozenset[int]] = MappingProxyType(
    {
        "Reshape": frozenset({1}),
        "Slice": frozenset({1, 2, 3, 4}),
        "Expand": frozenset({1}),
        "Squeeze": frozenset({1}),
        "Unsqueeze": frozenset({1}),
        "ReduceMean": frozenset({1}),
        "CumSum": frozenset({1}),
        "Resize": frozenset({1, 2, 3}),
    }
)
# operators computed in fp32 whatever the weights' type: reductions and what feeds them
FP32_OPS = frozenset({"Softmax", "ReduceMean", "Pow", "Sqrt", "Erf", "CumSum"})
# operators whose float inputs are cast to the weights' reduced type
LOW_OPS = frozenset({"Conv", "ConvTranspose", "MatMul", "BatchNormalization"})


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
    """One step of a plan: ``compute(*args)`` with ``args`` the template, ``slots`` filled from the values."""

    __slots__ = ("compute", "template", "slots", "outputs", "drop", "node")

    def __init__(self, compute: Compute, template: list[Any], slots: list[tuple[int, str]], step: Step):
        self.compute = compute
        self.template = tuple(template)
        self.slots = tuple(slots)
        self.outputs = step.outputs
        self.drop: tuple[str, ...] = ()
        self.node = f"{step.node} ({step.op_type})"


class FrozenPlan:
    """``plan(*inputs)`` (shaped and typed as the bucket) -> the graph's outputs, a tuple."""

    def __init__(
        self,
        input_names: Sequence[str],
        bucket: tuple[InputSpec, ...],
        steps: list[PlannedStep],
        outputs: Sequence[str],
        fixed_outputs: Mapping[str, Tensor],
        compute_dtype: torch.dtype | None,
        output_specs: Sequence[InputSpec],
    ):
        self.input_names = tuple(input_names)
        self.bucket = bucket
        self.steps = steps
        self.output_names = tuple(outputs)
        self.fixed_outputs = dict(fixed_outputs)  # outputs that depend on shapes alone
        self.compute_dtype = compute_dtype
        self.output_specs = tuple(output_specs)
        self._plan_drops()

    def _plan_drops(self) -> None:
        last_use: dict[str, int] = {}
        for index, step in enumerate(self.steps):
            for _, name in step.slots:
                last_use[name] = index
        for name in self.output_names:
            last_use.pop(name, None)
        for name, index in last_use.items():
            self.steps[index].drop += (name,)

    def __call__(self, *inputs: Tensor) -> tuple[Tensor, ...]:
        if bucket_of(inputs) != self.bucket:
            raise ValueError(f"a plan for {self.bucket} was called with {bucket_of(inputs)}")
        values: dict[str, Tensor] = dict(zip(self.input_names, (self._entry(t) for t in inputs)))
        for step in self.steps:
            args = list(step.template)
            for position, name in step.slots:
                args[position] = values[name]
            result = step.compute(*args)
            if len(step.outputs) == 1:
                values[step.outputs[0]] = result
            else:
                values.update(zip(step.outputs, result))
            for name in step.drop:
                del values[name]
        return tuple(values[n] if n in values else self.fixed_outputs[n] for n in self.output_names)

    def _entry(self, t: Tensor) -> Tensor:
        if self.compute_dtype is not None and t.is_floating_point():
            return t.to(self.compute_dtype)
        return t

    def __repr__(self) -> str:
        return f"FrozenPlan({len(self.steps)} steps for {[s.shape for s in self.bucket]})"


def with_precision(compute: Compute, step: Step, dtype: torch.dtype | None, head: bool) -> Compute:
    """``compute`` with its float tensor inputs cast to the type the step computes in."""
    if dtype is None:
        return compute
    if step.op_type in FP32_OPS or head:
        target = torch.float32
    elif step.op_type in LOW_OPS:
        target = dtype
    else:
        return compute

    def cast(*args: Any) -> Any:
        return compute(*[a.to(target) if isinstance(a, Tensor) and a.is_floating_point() else a for a in args])

    return cast


def freeze(
    graph: OnnxGraph, bucket: tuple[InputSpec, ...], device: torch.device | str, compute_dtype: torch.dtype | None
) -> FrozenPlan:
    """The plan of ``graph`` (its constants on ``device``) for inputs of ``bucket``.

    Raises :class:`CaptureRefused` naming the node that reads device data on the host."""
    if len(bucket) != len(graph.input_names):
        raise ValueError(f"expected {len(graph.input_names)} inputs ({graph.input_names}), got {len(bucket)}")
    device = torch.device(device)
    host = graph.host_constants()
    on_device = graph.device_constants()
    placed: dict[str, Tensor] = {}  # host constants read as operands, put on the device once

    def operand(name: str) -> Tensor:
        if name in on_device:
            return on_device[name]
        if name not in placed:
            placed[name] = host[name].to(device)
        return placed[name]

    entry = compute_dtype or torch.float32
    shapes: dict[str, Tensor] = {
        name: torch.empty(spec.shape, dtype=entry if spec.dtype.is_floating_point else spec.dtype, device="meta")
        for name, spec in zip(graph.input_names, bucket)
    }
    heads = set(graph.output_names)
    steps: list[PlannedStep] = []
    for step in graph.steps:
        if all(not n or n in host for n in step.inputs):
            results = as_tuple(step.compute(*[host[n] if n else None for n in step.inputs]))
            host.update(zip(step.outputs, results))
            continue
        host_positions = HOST_INPUTS.get(step.op_type, frozenset())
        template: list[Any] = []
        slots: list[tuple[int, str]] = []
        trial: list[Any] = []
        for position, name in enumerate(step.inputs):
            if not name:
                value: Any = None
                trial_value: Any = None
            elif name in shapes:
                slots.append((position, name))
                value, trial_value = None, shapes[name]
            elif position in host_positions and name in host:
                value = trial_value = host[name]
            else:
                value = operand(name)
                trial_value = value.to("meta")
            template.append(value)
            trial.append(trial_value)
        compute = with_precision(step.compute, step, compute_dtype, any(o in heads for o in step.outputs))
        try:
            results = as_tuple(compute(*trial))
        except (NotImplementedError, RuntimeError) as e:
            raise CaptureRefused(f"node {step.node!r} ({step.op_type}) reads device data on the host: {e}") from None
        if not any(r.is_meta for r in results):  # from shapes alone (a Shape of a computed tensor)
            host.update(zip(step.outputs, results))
            continue
        if not all(r.is_meta for r in results):
            raise CaptureRefused(f"node {step.node!r} ({step.op_type}) computes on the host from device data")
        shapes.update(zip(step.outputs, results))
        steps.append(PlannedStep(compute, template, slots, step))
    fixed = {n: operand(n) for n in graph.output_names if n not in shapes}
    final = {**fixed, **shapes}
    output_specs = [InputSpec(tuple(final[n].shape), final[n].dtype) for n in graph.output_names]
    return FrozenPlan(graph.input_names, bucket, steps, graph.output_names, fixed, compute_dtype, output_specs)


def as_tuple(result: Any) -> tuple[Tensor, ...]:
    return result if isinstance(result, tuple) else (result,)
