"""Small ONNX graphs built in code for the torch engine's tests: a builder, and a conv net
that computes shapes from its input as det and rec do."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(3)
FLOAT = TensorProto.FLOAT


def floats(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def model(nodes, inputs, outputs, initializers=(), opset=13):
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(name, dtype, shape) for name, dtype, shape in inputs],
        [helper.make_tensor_value_info(name, TensorProto.UNDEFINED, None) for name in outputs],
        [numpy_helper.from_array(np.asarray(v), name) for name, v in initializers],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def nearest_resize(source: str, out: str, scales: str = "scales", **attrs):
    """A Resize node as det's (nearest, asymmetric, floor) by the ``scales`` input."""
    return helper.make_node(
        "Resize",
        [source, "", scales],
        [out],
        mode="nearest",
        coordinate_transformation_mode="asymmetric",
        nearest_mode="floor",
        **attrs,
    )


def conv_net(weight_scale=1.0):
    """Conv -> BN -> Resize (constant scales) -> a reshape to (N, C, H*W) from the input's own
    shape (Shape, Gather, Concat) -> Softmax: what det and rec do with shapes."""
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "gamma", "beta", "mean", "var"], ["n"], epsilon=1e-5),
        nearest_resize("n", "r"),
        helper.make_node("Shape", ["r"], ["s"]),
        helper.make_node("Gather", ["s", "first_two"], ["nc"], axis=0),
        helper.make_node("Concat", ["nc", "minus_one"], ["target"], axis=0),
        helper.make_node("Reshape", ["r", "target"], ["flat"]),
        helper.make_node("Softmax", ["flat"], ["y"], axis=-1),
    ]
    initializers = [
        ("w", floats(6, 4, 3, 3) * np.float32(weight_scale)),
        ("b", floats(6)),
        ("gamma", floats(6)),
        ("beta", floats(6)),
        ("mean", floats(6)),
        ("var", np.abs(floats(6)) + 0.5),
        ("scales", np.array([1, 1, 2, 2], dtype=np.float32)),
        ("first_two", np.array([0, 1], dtype=np.int64)),
        ("minus_one", np.array([-1], dtype=np.int64)),
    ]
    return model(nodes, [("x", FLOAT, ["n", 4, "h", "w"])], ["y"], initializers)
