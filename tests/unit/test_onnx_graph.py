"""``engine: torch``'s ONNX graph module (serving.runners.onnx_graph, onnx_ops)
against ONNX's own reference evaluator, operator by operator, on small graphs
built here: each attribute form our models use, and the ones refused."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from serving.runners.onnx_graph import OnnxGraph
from serving.runners.onnx_ops import OPS, UnsupportedNode
from tests.support.onnx_nets import nearest_resize

RNG = np.random.default_rng(7)
FLOAT = TensorProto.FLOAT
INT64 = TensorProto.INT64


def model(nodes, inputs, outputs, initializers=(), opset=14):
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(name, dtype, None) for name, dtype in inputs],
        [helper.make_tensor_value_info(name, TensorProto.UNDEFINED, None) for name in outputs],
        [numpy_helper.from_array(np.asarray(v), name) for name, v in initializers],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def ours(m, *arrays):
    with torch.inference_mode():
        return [t.numpy() for t in OnnxGraph(m)(*[torch.from_numpy(a) for a in arrays])]


def reference(m, *arrays):
    names = [i.name for i in m.graph.input]
    return ReferenceEvaluator(m).run(None, dict(zip(names, arrays)))


def assert_agrees(m, *arrays, atol=1e-5):
    got, want = ours(m, *arrays), reference(m, *arrays)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
        np.testing.assert_allclose(g, w, atol=atol, rtol=1e-5)


def floats(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def one_node(op, n_inputs=1, initializers=(), opset=14, **attrs):
    names = [f"x{i}" for i in range(n_inputs)]
    node = helper.make_node(op, names + [name for name, _ in initializers], ["y"], **attrs)
    return model([node], [(n, FLOAT) for n in names], ["y"], initializers, opset)


@pytest.mark.parametrize(
    "attrs",
    [
        {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2]},
        {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "group": 4},
        {"kernel_shape": [1, 3], "pads": [0, 1, 0, 1], "strides": [1, 1]},
        {"kernel_shape": [5, 5], "pads": [2, 2, 2, 2], "strides": [2, 1], "group": 4},
    ],
)
def test_conv_with_and_without_bias(attrs):
    groups = attrs.get("group", 1)
    w, b = floats(8, 4 // groups, *attrs["kernel_shape"]), floats(8)
    assert_agrees(one_node("Conv", initializers=[("w", w), ("b", b)], **attrs), floats(2, 4, 9, 11))
    assert_agrees(one_node("Conv", initializers=[("w", w)], **attrs), floats(1, 4, 7, 8))


def test_conv_transpose_batch_norm_and_pools():
    w = floats(4, 3, 2, 2)
    assert_agrees(
        one_node("ConvTranspose", initializers=[("w", w)], kernel_shape=[2, 2], strides=[2, 2]), floats(2, 4, 5, 6)
    )
    stats = [("s", floats(4)), ("b", floats(4)), ("m", floats(4)), ("v", np.abs(floats(4)) + 0.1)]
    assert_agrees(one_node("BatchNormalization", initializers=stats, epsilon=1e-3), floats(2, 4, 3, 3))
    x = floats(2, 3, 9, 8)
    assert_agrees(one_node("AveragePool", kernel_shape=[3, 2], strides=[3, 2]), x)
    assert_agrees(one_node("MaxPool", kernel_shape=[2, 2], strides=[2, 2]), x)
    assert_agrees(one_node("GlobalAveragePool"), x)


@pytest.mark.parametrize("op", ["Relu", "Sigmoid", "Tanh", "Erf", "HardSwish", "Identity"])
def test_unary(op):
    assert_agrees(one_node(op), floats(3, 5))


def test_hard_sigmoid_keeps_its_own_slope():
    for alpha in (0.2, 1 / 6):
        assert_agrees(one_node("HardSigmoid", alpha=alpha, beta=0.5), floats(4, 6) * 4)


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "MatMul"])
def test_binary_broadcasts(op):
    a, b = floats(2, 3, 4), floats(4) if op != "MatMul" else floats(4, 5)
    assert_agrees(one_node(op, 2), a, b)


def test_integer_division_truncates_and_pow_and_sqrt():
    node = helper.make_node("Div", ["a", "b"], ["y"])
    a, b = np.array([7, -7, 9], np.int64), np.array([2, 2, -4], np.int64)
    assert_agrees(model([node], [("a", INT64), ("b", INT64)], ["y"]), a, b)
    assert_agrees(one_node("Pow", 2), np.abs(floats(3)) + 0.5, floats(3))
    assert_agrees(one_node("Sqrt"), np.abs(floats(3, 2)))


def coerced_softmax(x, axis):
    """Softmax as ONNX defines it before opset 13: over the input flattened from ``axis`` on
    (onnx's reference evaluator computes the opset-13 form for every version)."""
    flat = x.reshape(int(np.prod(x.shape[:axis])), -1)
    e = np.exp(flat - flat.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).reshape(x.shape)


@pytest.mark.parametrize("axis", [1, 2, -1])
def test_softmax_follows_the_models_opset(axis):
    x = floats(2, 3, 4)
    assert_agrees(one_node("Softmax", opset=13, axis=axis), x)
    (old,) = ours(one_node("Softmax", opset=11, axis=axis), x)
    np.testing.assert_allclose(old, coerced_softmax(x, axis % 3), atol=1e-6)
    if axis % 3 == 1:  # where the two definitions differ
        assert not np.allclose(old, reference(one_node("Softmax", opset=13, axis=axis), x)[0])


def test_resize_nearest_asymmetric_floor():
    scales = np.array([1, 1, 2, 2], np.float32)
    node = nearest_resize("x", "y")
    m = model([node], [("x", FLOAT)], ["y"], [("scales", scales)])
    assert_agrees(m, floats(1, 2, 3, 5))


def test_shape_arithmetic_reshape_slice_concat_transpose():
    # the rec model's pattern: a shape read at run time, sliced, concatenated, used to reshape
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Slice", ["s", "zero", "two"], ["nc"]),
        helper.make_node("Concat", ["nc", "minus_one"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["flat"]),
        helper.make_node("Transpose", ["flat"], ["y"], perm=[0, 2, 1]),
        helper.make_node("Reshape", ["x", "keep"], ["z"]),
    ]
    inits = [
        ("zero", np.array([0], np.int64)),
        ("two", np.array([2], np.int64)),
        ("minus_one", np.array([-1], np.int64)),
        ("keep", np.array([0, 0, -1], np.int64)),
    ]
    assert_agrees(model(nodes, [("x", FLOAT)], ["y", "z"], inits), floats(2, 3, 4, 5))


def test_slice_with_axes_and_steps_squeeze_unsqueeze_both_forms():
    x = floats(4, 6, 5)
    nodes = [
        helper.make_node("Slice", ["x", "b", "e", "axes", "steps"], ["s"]),
        helper.make_node("Squeeze", ["s", "sq"], ["y"]),
        helper.make_node("Unsqueeze", ["y", "uq"], ["z"]),
    ]
    inits = [
        ("b", np.array([1, 0], np.int64)),
        ("e", np.array([2, 1 << 62], np.int64)),
        ("axes", np.array([0, -1], np.int64)),
        ("steps", np.array([1, 2], np.int64)),
        ("sq", np.array([0], np.int64)),
        ("uq", np.array([0, 3], np.int64)),
    ]
    assert_agrees(model(nodes, [("x", FLOAT)], ["z"], inits, opset=13), x)
    old = [
        helper.make_node("Unsqueeze", ["x"], ["u"], axes=[1, 2]),
        helper.make_node("Squeeze", ["u"], ["y"], axes=[2]),
    ]
    assert_agrees(model(old, [("x", FLOAT)], ["y"], opset=11), x)


def test_reduce_mean_gather_expand_cumsum_equal_not_cast():
    # the ERNIE model's embedding and mask pattern
    ids = np.array([[3, 0, 2, -1], [1, 1, 0, 0]], np.int64)
    table = floats(5, 3)
    nodes = [
        helper.make_node("Gather", ["table", "ids"], ["emb"]),
        helper.make_node("ReduceMean", ["emb"], ["mean"], axes=[-1]),
        helper.make_node("Equal", ["ids", "pad"], ["is_pad"]),
        helper.make_node("Not", ["is_pad"], ["keep"]),
        helper.make_node("Cast", ["keep"], ["keep_f"], to=FLOAT),
        helper.make_node("Shape", ["ids"], ["s"]),
        helper.make_node("Expand", ["one", "s"], ["ones"]),
        helper.make_node("CumSum", ["ones", "axis"], ["pos"]),
        helper.make_node("CumSum", ["ones", "axis"], ["pos_rev_excl"], exclusive=1, reverse=1),
    ]
    inits = [
        ("table", table),
        ("pad", np.array(0, np.int64)),
        ("one", np.array([1], np.int64)),
        ("axis", np.array(1, np.int64)),
    ]
    outputs = ["emb", "mean", "keep_f", "pos", "pos_rev_excl"]
    assert_agrees(model(nodes, [("ids", INT64)], outputs, inits, opset=11), ids)


def test_constant_nodes_and_everything_computable_from_them_are_folded():
    nodes = [
        helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(floats(3), "c")),
        helper.make_node("Mul", ["c", "c"], ["cc"]),
        helper.make_node("Add", ["x", "cc"], ["y"]),
    ]
    m = model(nodes, [("x", FLOAT)], ["y"])
    graph = OnnxGraph(m)
    assert len(graph._steps) == 1  # only the Add reads the input
    assert [b.shape for b in graph.buffers()] == [torch.Size([3])]  # the folded product, a buffer (moves with .to())
    assert_agrees(m, floats(2, 3))


def test_intermediates_are_dropped_after_their_last_use():
    nodes = [
        helper.make_node("Relu", ["x"], ["a"]),
        helper.make_node("Sigmoid", ["a"], ["b"]),
        helper.make_node("Add", ["a", "b"], ["y"]),
    ]
    graph = OnnxGraph(model(nodes, [("x", FLOAT)], ["y"]))
    assert [set(s.drop) for s in graph._steps] == [{"x"}, set(), {"a", "b"}]


def test_unknown_operators_are_refused_at_load_all_named():
    nodes = [
        helper.make_node("Einsum", ["x", "x"], ["a"], equation="ij,ij->ij"),
        helper.make_node("Celu", ["a"], ["y"]),
    ]
    with pytest.raises(UnsupportedNode, match="Celu, Einsum"):
        OnnxGraph(model(nodes, [("x", FLOAT)], ["y"]))


@pytest.mark.parametrize(
    "node",
    [
        helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3], pads=[0, 0, 1, 1]),
        helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3], auto_pad="SAME_UPPER"),
        helper.make_node("Resize", ["x", "", "s"], ["y"], mode="cubic"),
        helper.make_node("Resize", ["x", "", "s"], ["y"], mode="nearest", coordinate_transformation_mode="half_pixel"),
        helper.make_node("Cast", ["x"], ["y"], to=TensorProto.STRING),
    ],
    ids=["asymmetric pads", "auto_pad", "cubic", "half-pixel nearest", "string cast"],
)
def test_attribute_values_it_cannot_honour_are_refused_naming_the_node(node):
    node.name = "the_node"
    with pytest.raises(UnsupportedNode, match="the_node"):
        OnnxGraph(model([node], [("x", FLOAT), ("w", FLOAT), ("s", FLOAT)], ["y"]))


def test_every_operator_the_shipped_models_use_is_in_the_table():
    # PP-OCRv4 det, rec, cls and the ERNIE demo model, as paddle2onnx 1.3 writes them
    used = {
        "Add", "AveragePool", "BatchNormalization", "Cast", "Concat", "Conv", "ConvTranspose", "CumSum", "Div",
        "Equal", "Erf", "Expand", "Gather", "GlobalAveragePool", "HardSigmoid", "HardSwish", "Identity", "MatMul",
        "MaxPool", "Mul", "Not", "Pow", "ReduceMean", "Relu", "Reshape", "Resize", "Shape", "Sigmoid", "Slice",
        "Softmax", "Sqrt", "Squeeze", "Sub", "Tanh", "Transpose", "Unsqueeze",
    }  # fmt: skip
    assert used <= set(OPS)


def test_the_module_moves_its_weights_with_to():
    m = one_node("Conv", initializers=[("w", floats(2, 3, 1, 1))], kernel_shape=[1, 1])
    graph = OnnxGraph(m).to(torch.float64)
    assert all(b.dtype == torch.float64 for b in graph.buffers())
