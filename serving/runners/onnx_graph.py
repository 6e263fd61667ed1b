"""An ONNX model as a ``torch.nn.Module``: how ``engine: torch`` runs a model.

Constants, and nodes computable from them alone, are folded once on the CPU. Each
other node is one step of :data:`serving.runners.onnx_ops.OPS`, its arguments bound
when the module is built: a value computable from constants and shapes alone (a
``Shape``, the ``Gather``/``Concat``/``Slice`` on it) is a *host* value and its
steps run on the CPU; where a step reads a number (a reshape's target, a resize's
scales: ``HOST_INPUTS``) it is given the CPU copy; where it computes with a
constant, a buffer, which ``.to(device)`` moves with the weights. So on a GPU a
call reads nothing back from the device: the module runs end to end on ``meta``
tensors, where such a read fails. Each intermediate is dropped after its last use.
Why not onnx2torch: DESIGN_NOTES.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import onnx
import torch
from onnx import numpy_helper

from serving.runners.onnx_ops import DTYPES, HOST_INPUTS, OPS, Compute, UnsupportedNode
from serving.runners.step_precision import with_precision

# Constant node attributes other than ``value`` (a tensor), with their data types
CONSTANT_SCALARS = {"value_float": torch.float32, "value_floats": torch.float32}
CONSTANT_INTEGERS = ("value_int", "value_ints")
# float constants up to this many elements are also kept on the CPU, for the steps that read them as numbers
HOST_FLOATS = 64


def attributes(node: onnx.NodeProto) -> dict[str, Any]:
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def constant_value(node: onnx.NodeProto) -> torch.Tensor:
    """What a ``Constant`` node holds, as a CPU tensor."""
    attrs = attributes(node)
    if "value" in attrs:
        return torch.from_numpy(numpy_helper.to_array(attrs["value"]).copy())
    for key, dtype in CONSTANT_SCALARS.items():
        if key in attrs:
            return torch.tensor(attrs[key], dtype=dtype)
    for key in CONSTANT_INTEGERS:
        if key in attrs:
            return torch.tensor(attrs[key], dtype=torch.int64)
    raise UnsupportedNode(f"Constant {node.name!r} with attributes {sorted(attrs)}")


def default_opset(model: onnx.ModelProto) -> int:
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return int(entry.version)
    raise UnsupportedNode("the model imports no version of the default ONNX domain")


def unsupported_operators(graph: onnx.GraphProto) -> list[str]:
    return sorted({n.op_type for n in graph.node if n.op_type != "Constant" and n.op_type not in OPS})


class BoundStep(Protocol):
    """What :func:`run_steps` reads of a step (a module's :class:`Step`, a frozen plan's)."""

    run: Compute
    template: tuple[Any, ...]
    buffers: tuple[tuple[int, str], ...]
    slots: tuple[tuple[int, str], ...]
    outputs: tuple[str, ...]
    drop: tuple[str, ...]


def run_steps(steps: Sequence[BoundStep], values: dict[str, Any], buffers: Mapping[str, Any]) -> None:
    """Run ``steps`` in order, each with its template filled from ``buffers`` and ``values``, into
    ``values``, dropping each value after its last use."""
    for step in steps:
        args = list(step.template)
        for position, attribute in step.buffers:
            args[position] = buffers[attribute]
        for position, name in step.slots:
            args[position] = values[name]
        result = step.run(*args)
        if len(step.outputs) == 1:
            values[step.outputs[0]] = result
        else:
            values.update(zip(step.outputs, result))
        for name in step.drop:
            del values[name]


def plan_drops(steps: Sequence[BoundStep], keep: Sequence[str]) -> None:
    """Set each step's ``drop``: the values read last by it, but ``keep`` (the outputs)."""
    last_use: dict[str, int] = {}
    for index, step in enumerate(steps):
        for _, name in step.slots:
            last_use[name] = index
    for name in keep:
        last_use.pop(name, None)
    by_step: dict[int, list[str]] = {}
    for name, index in last_use.items():
        by_step.setdefault(index, []).append(name)
    for index, step in enumerate(steps):
        step.drop = tuple(by_step.get(index, ()))


class Step:
    """One node to compute at run time: ``run(*args)``, ``args`` the template (host values bound
    at build) with ``buffers`` (constants on the module's device) and ``slots`` (values computed
    in the call) filled in."""

    __slots__ = (
        *("compute", "run", "inputs", "outputs", "node", "op_type"),
        *("on_host", "template", "buffers", "slots", "drop"),
    )

    def __init__(self, compute: Compute, inputs: Sequence[str], outputs: Sequence[str], node: str, op_type: str):
        self.compute = compute
        self.run = compute  # compute, or compute at the step's precision (OnnxGraph.lower_precision)
        self.inputs = tuple(inputs)
        self.outputs = tuple(outputs)
        self.node = node  # the ONNX node's name and operator, for messages
        self.op_type = op_type
        self.on_host = False  # its outputs are host values (shapes and what is computed from them)
        self.template: tuple[Any, ...] = ()
        self.buffers: tuple[tuple[int, str], ...] = ()
        self.slots: tuple[tuple[int, str], ...] = ()
        self.drop: tuple[str, ...] = ()  # values whose last use is this step

    @property
    def label(self) -> str:
        return f"{self.node!r} ({self.op_type})"


class OnnxGraph(torch.nn.Module):
    """``forward(*inputs)`` (in :attr:`input_names` order) -> a tuple in :attr:`output_names` order.

    Raises :class:`UnsupportedNode` at construction, naming every operator (or
    attribute value) it cannot compute, rather than computing it wrongly."""

    def __init__(self, model: onnx.ModelProto):
        super().__init__()
        graph = model.graph
        missing = unsupported_operators(graph)
        if missing:
            raise UnsupportedNode(f"engine: torch cannot run ONNX operator(s) {', '.join(missing)}")
        opset = default_opset(model)
        constants = {t.name: torch.from_numpy(numpy_helper.to_array(t).copy()) for t in graph.initializer}
        self.input_names = [i.name for i in graph.input if i.name not in constants]
        self._input_types = {i.name: i.type.tensor_type for i in graph.input if i.name not in constants}
        self.output_names = [o.name for o in graph.output]
        self.compute_dtype: torch.dtype | None = None  # the weights' type where lowered, else fp32
        steps: list[Step] = []
        for node in graph.node:
            if node.op_type == "Constant":
                constants[node.output[0]] = constant_value(node)
                continue
            try:
                compute = OPS[node.op_type](attributes(node), opset)
            except UnsupportedNode as e:
                raise UnsupportedNode(f"node {node.name!r}: {e}") from None
            if all(not name or name in constants for name in node.input):
                # computable now, once: the same CPU kernels would give the same values at run time
                result = compute(*[constants[n] if n else None for n in node.input])
                results = result if isinstance(result, tuple) else (result,)
                constants.update(zip(node.output, results))
            else:
                steps.append(Step(compute, node.input, node.output, node.name, node.op_type))
        self._steps = steps
        self._constant_outputs: dict[str, str] = {}
        self._bind(constants)
        plan_drops(self._steps, self.output_names)

    def _bind(self, constants: dict[str, torch.Tensor]) -> None:
        """Decide, per step and argument, where each constant is read: a CPU copy (host steps, and
        the arguments an operator reads as numbers) or a buffer on the module's device."""
        # numbers: integer constants and small float ones (weights and tables are tensors)
        host = {n for n, v in constants.items() if not v.is_floating_point() or v.numel() <= HOST_FLOATS}
        attributes: dict[str, str] = {}

        def buffer(name: str) -> str:
            if name not in attributes:
                attributes[name] = f"constant_{len(attributes)}"
                self.register_buffer(attributes[name], constants[name], persistent=False)
            return attributes[name]

        for step in self._steps:
            step.on_host = step.op_type == "Shape" or all(not n or n in host for n in step.inputs)
            if step.on_host:
                host.update(step.outputs)
            reads_numbers = HOST_INPUTS.get(step.op_type, frozenset())
            template: list[Any] = []
            buffers, slots = [], []
            for position, name in enumerate(step.inputs):
                value = None
                if name in constants:
                    held = constants[name]
                    as_number = step.on_host or position in reads_numbers
                    if as_number and (not held.is_floating_point() or held.numel() <= HOST_FLOATS):
                        value = held
                    else:
                        buffers.append((position, buffer(name)))
                elif name:
                    slots.append((position, name))
                template.append(value)
            step.template, step.buffers, step.slots = tuple(template), tuple(buffers), tuple(slots)
        for name in self.output_names:
            if name in constants:
                self._constant_outputs[name] = buffer(name)

    def input_specs(self, free: int, batch: int) -> list[tuple[tuple[int, ...], torch.dtype]]:
        """Each input's shape as the model declares it, its first free axis ``batch`` and any other
        ``free``, and its type (float32 where undeclared): a shape to probe the graph with."""
        specs = []
        for name in self.input_names:
            declared = self._input_types[name]
            dims = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else 0 for d in declared.shape.dim]
            shape = tuple(d or (batch if i == 0 else free) for i, d in enumerate(dims))
            specs.append((shape, DTYPES.get(declared.elem_type, torch.float32)))
        return specs

    @property
    def steps(self) -> tuple[Step, ...]:
        return tuple(self._steps)

    @property
    def constant_outputs(self) -> dict[str, str]:
        """Outputs that are constants -> their buffers' names."""
        return dict(self._constant_outputs)

    def host_operands(self) -> list[str]:
        """The device steps given a host value as a tensor operand (copied to the device on
        every call of the module; a frozen plan places it once): named, for diagnostics."""
        host = {o for s in self._steps if s.on_host for o in s.outputs}
        return [
            s.label
            for s in self._steps
            if not s.on_host
            for position, name in s.slots
            if name in host and position not in HOST_INPUTS.get(s.op_type, frozenset())
        ]

    def lower_precision(self, dtype: torch.dtype, ops: frozenset[str]) -> None:
        """Compute at ``dtype`` from now on: the float buffers only ``ops`` operators read (the
        weights of convolutions and matrix products) cast once, each step's compute type fixed
        (:mod:`serving.runners.step_precision`)."""
        readers: dict[str, set[str]] = {}
        for step in self._steps:
            for _, attribute in step.buffers:
                readers.setdefault(attribute, set()).add(step.op_type)
        for attribute, ops_reading in readers.items():
            held = self._buffers[attribute]
            if held is not None and held.is_floating_point() and ops_reading <= ops:
                self._buffers[attribute] = held.to(dtype)
        heads = set(self.output_names)
        for step in self._steps:
            head = any(o in heads for o in step.outputs)
            step.run = with_precision(step.compute, step.op_type, dtype, head)
        self.compute_dtype = dtype

    def entry(self, t: torch.Tensor) -> torch.Tensor:
        """An input as the steps take it: floats in the compute type."""
        if self.compute_dtype is not None and t.is_floating_point():
            return t.to(self.compute_dtype)
        return t

    def forward(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        if len(inputs) != len(self.input_names):
            raise ValueError(f"expected {len(self.input_names)} inputs ({self.input_names}), got {len(inputs)}")
        buffers = self._buffers
        values: dict[str, Any] = dict(zip(self.input_names, (self.entry(t) for t in inputs)))
        run_steps(self._steps, values, buffers)
        for name, attribute in self._constant_outputs.items():
            values[name] = buffers[attribute]
        return tuple(values[name] for name in self.output_names)
