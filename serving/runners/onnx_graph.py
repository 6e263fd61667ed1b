"""An ONNX model as a ``torch.nn.Module``: how ``engine: torch`` runs a model.

Constants, and nodes computable from them alone, are folded once on the CPU;
float ones become buffers (``.to(device)`` moves the weights), integer ones
(shapes, axes) stay on the CPU, where reading them never synchronises a device.
Every other node is one step of :data:`serving.runners.onnx_ops.OPS`, each
intermediate dropped after its last use. Why not onnx2torch: DESIGN_NOTES.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import onnx
import torch
from onnx import numpy_helper

from serving.runners.onnx_ops import DTYPES, OPS, Compute, UnsupportedNode

# Constant node attributes other than ``value`` (a tensor), with their data types
CONSTANT_SCALARS = {"value_float": torch.float32, "value_floats": torch.float32}
CONSTANT_INTEGERS = ("value_int", "value_ints")
# float constants up to this many elements also stay on the CPU (scales, epsilons): a frozen plan reads them there
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


class Step:
    """One node to compute at run time."""

    __slots__ = ("compute", "inputs", "outputs", "drop", "node", "op_type")

    def __init__(
        self, compute: Compute, inputs: Sequence[str], outputs: Sequence[str], node: str = "", op_type: str = ""
    ):
        self.compute = compute
        self.inputs = tuple(inputs)
        self.outputs = tuple(outputs)
        self.drop: tuple[str, ...] = ()  # values whose last use is this step
        self.node = node  # the ONNX node's name and operator, for messages
        self.op_type = op_type


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
        self._keep_constants(constants)
        self._plan_drops()

    def _keep_constants(self, constants: dict[str, torch.Tensor]) -> None:
        """Keep the constants the steps or outputs read: floats as buffers, the rest on the CPU;
        small floats (a Resize's scales) also on the CPU, where a frozen plan reads them."""
        used = {n for s in self._steps for n in s.inputs} | set(self.output_names)
        self._cpu_constants: dict[str, torch.Tensor] = {}
        self._host_floats: dict[str, torch.Tensor] = {}
        self._buffer_names: list[tuple[str, str]] = []  # (ONNX name, attribute)
        for i, (name, value) in enumerate(constants.items()):
            if name not in used:
                continue
            if value.is_floating_point():
                attribute = f"constant_{i}"
                self.register_buffer(attribute, value, persistent=False)
                self._buffer_names.append((name, attribute))
                if value.numel() <= HOST_FLOATS:
                    self._host_floats[name] = value.clone()
            else:
                self._cpu_constants[name] = value

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

    def host_constants(self) -> dict[str, torch.Tensor]:
        """The constants readable on the host without touching a device: integers and small floats."""
        return {**self._cpu_constants, **self._host_floats}

    def device_constants(self) -> dict[str, torch.Tensor]:
        """The float constants as the module holds them (on its device, in its dtype)."""
        return {name: getattr(self, attribute) for name, attribute in self._buffer_names}

    def lower_precision(self, dtype: torch.dtype, ops: frozenset[str]) -> None:
        """Cast to ``dtype``, once, the float constants that only the ``ops`` operators read (the
        weights of convolutions and matrix products); the others stay fp32, so the element-wise
        steps they meet compute in fp32, as autocast has them."""
        readers: dict[str, set[str]] = {}
        for step in self._steps:
            for name in step.inputs:
                readers.setdefault(name, set()).add(step.op_type)
        for name, attribute in self._buffer_names:
            if readers.get(name) and readers[name] <= ops:
                setattr(self, attribute, getattr(self, attribute).to(dtype))

    def _plan_drops(self) -> None:
        last_use: dict[str, int] = {}
        for index, step in enumerate(self._steps):
            for name in step.inputs:
                if name:
                    last_use[name] = index
        for name in self.output_names:
            last_use.pop(name, None)
        by_step: dict[int, list[str]] = {}
        for name, index in last_use.items():
            by_step.setdefault(index, []).append(name)
        for index, names in by_step.items():
            self._steps[index].drop = tuple(names)

    def forward(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        if len(inputs) != len(self.input_names):
            raise ValueError(f"expected {len(self.input_names)} inputs ({self.input_names}), got {len(inputs)}")
        values: dict[str, Any] = dict(self._cpu_constants)
        for name, attribute in self._buffer_names:
            values[name] = getattr(self, attribute)
        values.update(zip(self.input_names, inputs))
        for step in self._steps:
            result = step.compute(*[values[n] if n else None for n in step.inputs])
            if len(step.outputs) == 1:
                values[step.outputs[0]] = result
            else:
                values.update(zip(step.outputs, result))
            for name in step.drop:
                del values[name]
        return tuple(values[name] for name in self.output_names)
