"""Batch normalisation folded into the convolution before it, once at load: what reduced
precision runs (one fewer pass over the activations, and the folded weights are cast once).

``BatchNormalization(Conv(x, W, B))`` with constant weights and statistics, the
convolution's output read by nothing else, becomes ``Conv(x, W * s, (B - mean) * s + beta)``
with ``s = gamma / sqrt(var + eps)`` per output channel (computed in float64). fp32 keeps
the graph as exported, so its numbers stay the reference engine's.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import onnx
from onnx import helper, numpy_helper

FOLDABLE = ("Conv", "ConvTranspose")


def constant_arrays(graph: onnx.GraphProto) -> dict[str, np.ndarray]:
    """The initializers and ``Constant`` node values of ``graph`` by name."""
    values = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
            values[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    return values


def output_channel_axis(conv: onnx.NodeProto) -> int | None:
    """The weight axis of the output channels: 0 for Conv, 1 for an ungrouped ConvTranspose."""
    if conv.op_type == "Conv":
        return 0
    group = next((helper.get_attribute_value(a) for a in conv.attribute if a.name == "group"), 1)
    return 1 if group == 1 else None


def fold_batch_norms(model: onnx.ModelProto) -> tuple[onnx.ModelProto, int]:
    """A copy of ``model`` with each foldable batch norm folded, and how many were."""
    folded_model = onnx.ModelProto()
    folded_model.CopyFrom(model)
    graph = folded_model.graph
    constants = constant_arrays(graph)
    readers = Counter(name for node in graph.node for name in node.input)
    readers.update(o.name for o in graph.output)
    producer = {out: node for node in graph.node for out in node.output}
    dropped: list[onnx.NodeProto] = []
    new_initializers: list[onnx.TensorProto] = []
    for node in graph.node:
        if node.op_type != "BatchNormalization" or len(node.output) != 1:
            continue
        conv = producer.get(node.input[0])
        if conv is None or conv.op_type not in FOLDABLE or readers[conv.output[0]] != 1:
            continue
        axis = output_channel_axis(conv)
        params = [constants.get(name) for name in node.input[1:5]]
        weight = constants.get(conv.input[1])
        if axis is None or weight is None or any(p is None for p in params):
            continue
        gamma, beta, mean, var = (np.asarray(p, dtype=np.float64) for p in params)
        eps = next((helper.get_attribute_value(a) for a in node.attribute if a.name == "epsilon"), 1e-5)
        scale = gamma / np.sqrt(var + eps)
        bias = constants.get(conv.input[2]) if len(conv.input) > 2 and conv.input[2] else None
        shape = [1] * weight.ndim
        shape[axis] = -1
        new_weight = (weight.astype(np.float64) * scale.reshape(shape)).astype(weight.dtype)
        base = np.zeros_like(mean) if bias is None else bias.astype(np.float64)
        new_bias = ((base - mean) * scale + beta).astype(weight.dtype)
        prefix = f"{node.output[0]}.folded"
        new_initializers += [
            numpy_helper.from_array(new_weight, f"{prefix}.weight"),
            numpy_helper.from_array(new_bias, f"{prefix}.bias"),
        ]
        inputs = [conv.input[0], f"{prefix}.weight", f"{prefix}.bias"]
        del conv.input[:]
        conv.input.extend(inputs)
        conv.output[0] = node.output[0]
        dropped.append(node)
    for node in dropped:
        graph.node.remove(node)
    graph.initializer.extend(new_initializers)
    return folded_model, len(dropped)
