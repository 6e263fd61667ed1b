"""Frozen plans (serving.runners.frozen_plan), their cache (plan_cache), batch-norm
folding and the capture check, on small ONNX graphs built here: a plan computes what
the module computes, drops the steps that only compute shapes, runs on ``meta``
tensors (where any read of device data on the host fails), and a graph that reads
data on the host is refused naming its node."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

from serving.runners.batch_norm_folding import fold_batch_norms
from serving.runners.frozen_plan import LOW_OPS, CaptureRefused, InputSpec, bucket_of, freeze
from serving.runners.onnx_graph import OnnxGraph
from serving.runners.plan_cache import PlanCache
from serving.runners.torch_runtime import TorchPlan, check_capturable

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


def conv_net(weight_scale=1.0):
    """Conv -> BN -> Resize (constant scales) -> a reshape to (N, C, H*W) from the input's own
    shape (Shape, Gather, Concat) -> Softmax: what det and rec do with shapes."""
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "gamma", "beta", "mean", "var"], ["n"], epsilon=1e-5),
        helper.make_node(
            "Resize",
            ["n", "", "scales"],
            ["r"],
            mode="nearest",
            coordinate_transformation_mode="asymmetric",
            nearest_mode="floor",
        ),
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


def test_a_plan_computes_what_the_module_computes_without_its_shape_steps():
    graph = OnnxGraph(conv_net()).eval()
    x = torch.from_numpy(floats(2, 4, 5, 7))
    plan = freeze(graph, bucket_of([x]), "cpu", None)
    with torch.inference_mode():
        assert torch.equal(plan(x)[0], graph(x)[0])
    assert len(graph.steps) == 8 and len(plan.steps) == 5  # Shape, Gather, Concat computed once
    assert plan.output_specs == (InputSpec((2, 6, 140), torch.float32),)
    with pytest.raises(ValueError, match="called with"):
        plan(torch.zeros(1, 4, 5, 7))


def test_the_plan_runs_on_meta_tensors_where_the_module_reads_the_device():
    """The module reads its Resize scales (a float buffer) on the host: on ``meta`` that fails.
    The plan read them once, when it was made."""
    graph = OnnxGraph(conv_net()).to("meta")
    x = torch.empty(3, 4, 8, 8, device="meta")
    with pytest.raises(NotImplementedError):
        graph(x)
    plan = freeze(graph, bucket_of([x]), "meta", None)
    (y,) = plan(x)
    assert y.is_meta and tuple(y.shape) == (3, 6, 256)
    operands = [a for s in plan.steps for a in s.template if isinstance(a, torch.Tensor) and not a.is_meta]
    assert all(a.device.type == "cpu" for a in operands)  # only the host values (the scales) stay on the CPU
    held = [a for s in plan.steps for a in s.template if isinstance(a, torch.Tensor)]
    assert len(held) == 8  # conv 2, batch norm 4, the scales, the reshape's target


def data_dependent_reshape():
    """Reshape to a size read from the data: no plan can hold it."""
    nodes = [
        helper.make_node("ReduceMean", ["x"], ["m"], keepdims=1),
        helper.make_node("Reshape", ["m", "one"], ["m1"]),
        helper.make_node("Cast", ["m1"], ["n"], to=TensorProto.INT64),
        helper.make_node("Concat", ["n", "minus_one"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["y"]),
    ]
    constants = [("minus_one", np.array([-1], dtype=np.int64)), ("one", np.array([1], dtype=np.int64))]
    return model(nodes, [("x", FLOAT, ["n", 4])], ["y"], constants, opset=11)


def test_a_host_read_of_data_is_refused_naming_the_node():
    graph = OnnxGraph(data_dependent_reshape())
    with pytest.raises(CaptureRefused, match=r"\(Reshape\) reads device data on the host"):
        freeze(graph, (InputSpec((2, 4), torch.float32),), "meta", None)
    with pytest.raises(ValueError, match="cuda_graphs: node .* set cuda_graphs: false"):
        check_capturable(graph, TorchPlan("cuda:0", None, "fp32", True))
    check_capturable(OnnxGraph(conv_net()), TorchPlan("cuda:0", None, "fp32", True))  # probed at (1, 4, 64, 64)


def test_reduced_precision_is_done_once_and_keeps_reductions_in_fp32():
    net = conv_net(0.1)
    graph = OnnxGraph(fold_batch_norms(net)[0]).eval()
    graph.lower_precision(torch.bfloat16, LOW_OPS)
    low = {n for n, t in graph.device_constants().items() if t.dtype == torch.bfloat16}
    assert low == {"n.folded.weight", "n.folded.bias"}  # the convolution's, cast once; the scales stay fp32
    x = torch.from_numpy(floats(2, 4, 6, 6))
    plan = freeze(graph, bucket_of([x]), "cpu", torch.bfloat16)
    with torch.inference_mode():
        (y,) = plan(x)
        (exact,) = OnnxGraph(net).eval()(x)
    assert y.dtype == torch.float32  # the head (Softmax) computes in fp32
    assert torch.allclose(y, exact, atol=2e-2)
    assert not torch.equal(y, exact)  # it did compute in bfloat16


def test_batch_norms_fold_into_their_convolutions():
    net = conv_net()
    folded, count = fold_batch_norms(net)
    assert count == 1 and "BatchNormalization" not in {n.op_type for n in folded.graph.node}
    assert "BatchNormalization" in {n.op_type for n in net.graph.node}  # the model given is left as it was
    x = torch.from_numpy(floats(1, 4, 5, 5))
    with torch.inference_mode():
        a, b = OnnxGraph(net)(x)[0], OnnxGraph(folded)(x)[0]
    torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)


def test_a_convolution_read_twice_keeps_its_batch_norm():
    m = conv_net()
    m.graph.node.append(helper.make_node("Relu", ["c"], ["also"]))
    m.graph.output.append(helper.make_tensor_value_info("also", TensorProto.UNDEFINED, None))
    assert fold_batch_norms(m)[1] == 0


def test_a_transposed_convolution_folds_on_its_output_axis():
    nodes = [
        helper.make_node("ConvTranspose", ["x", "w"], ["c"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("BatchNormalization", ["c", "gamma", "beta", "mean", "var"], ["y"]),
    ]
    inits = [
        ("w", floats(4, 3, 2, 2)),
        ("gamma", floats(3)),
        ("beta", floats(3)),
        ("mean", floats(3)),
        ("var", np.abs(floats(3)) + 0.5),
    ]
    m = model(nodes, [("x", FLOAT, None)], ["y"], inits)
    folded, count = fold_batch_norms(m)
    x = torch.from_numpy(floats(2, 4, 3, 3))
    assert count == 1
    torch.testing.assert_close(OnnxGraph(m)(x)[0], OnnxGraph(folded)(x)[0], atol=1e-5, rtol=1e-5)


def test_the_cache_freezes_once_captures_on_the_second_call_and_drops_the_oldest():
    graph = OnnxGraph(conv_net()).eval()
    frozen, captured = [], []

    def freeze_one(bucket):
        frozen.append(bucket)
        return freeze(graph, bucket, "cpu", None)

    def capture(plan):
        captured.append(plan.bucket)
        return lambda inputs: plan(*inputs)

    cache = PlanCache(freeze_one, capture, max_buckets=2)
    a, b, c = (torch.from_numpy(floats(1, 4, h, 4)) for h in (4, 5, 6))
    with torch.inference_mode():
        cache([a])
        assert (len(frozen), captured) == (1, [])  # a shape seen once is never captured
        cache([a])
        cache([a])
        assert len(frozen) == 1 and captured == [bucket_of([a])] and cache.captured == 1
        cache([b])
        cache([c])  # a, the least recently used, goes
        assert len(cache) == 2
        cache([a])
    assert len(frozen) == 4
