"""The module's bound arguments (serving.runners.onnx_graph), frozen plans
(frozen_plan), precision done once
(step_precision, batch_norm_folding) and the capture check, on small ONNX graphs
built here: the module and a plan run on ``meta`` tensors (where any read of
device data on the host fails), a plan computes what the module computes without
the steps that only compute shapes, and a graph that reads data on the host is
refused naming its node."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from onnx import TensorProto, helper

from serving.runners.batch_norm_folding import fold_batch_norms
from serving.runners.frozen_plan import CaptureRefused, InputSpec, bucket_of, freeze
from serving.runners.onnx_graph import OnnxGraph
from serving.runners.step_precision import LOW_OPS
from serving.runners.torch_runtime import TorchPlan, check_capturable
from tests.support.onnx_nets import FLOAT, conv_net, floats, model


def test_a_plan_computes_what_the_module_computes_without_its_shape_steps():
    graph = OnnxGraph(conv_net()).eval()
    x = torch.from_numpy(floats(2, 4, 5, 7))
    plan = freeze(graph, bucket_of([x]), "cpu")
    with torch.inference_mode():
        assert torch.equal(plan(x)[0], graph(x)[0])
    assert len(graph.steps) == 8 and len(plan.steps) == 5  # Shape, Gather, Concat computed once
    assert plan.output_specs == (InputSpec((2, 6, 140), torch.float32),)
    with pytest.raises(ValueError, match="called with"):
        plan(torch.zeros(1, 4, 5, 7))


def test_the_module_and_its_plan_run_on_meta_tensors():
    """The Resize's scales (a float constant) are read as numbers from their CPU copy, the
    reshape's target is computed on the CPU from the shape: nothing reads the device."""
    graph = OnnxGraph(conv_net()).to("meta")
    x = torch.empty(3, 4, 8, 8, device="meta")
    assert tuple(graph(x)[0].shape) == (3, 6, 256)
    assert [s.op_type for s in graph.steps if s.on_host] == ["Shape", "Gather", "Concat"]
    assert graph.host_operands() == []
    plan = freeze(graph, bucket_of([x]), "meta")
    (y,) = plan(x)
    assert y.is_meta and tuple(y.shape) == (3, 6, 256)
    held = [a for s in plan.steps for a in s.template if isinstance(a, torch.Tensor)]
    assert len(held) == 8  # conv 2, batch norm 4, the scales, the reshape's target
    assert {a.device.type for a in held if a.numel() > 4} == {"meta"}  # the weights on the plan's device


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
        freeze(graph, (InputSpec((2, 4), torch.float32),), "meta")
    with pytest.raises(ValueError, match="cuda_graphs: node .* set cuda_graphs: false"):
        check_capturable(graph, TorchPlan("cuda:0", None, "fp32", True))
    check_capturable(OnnxGraph(conv_net()), TorchPlan("cuda:0", None, "fp32", True))  # probed at (1, 4, 64, 64)


def test_reduced_precision_is_done_once_and_keeps_reductions_in_fp32():
    net = conv_net(0.1)
    graph = OnnxGraph(fold_batch_norms(net)[0]).eval()
    graph.lower_precision(torch.bfloat16, LOW_OPS)
    low = {n for n, t in graph.named_buffers() if t.dtype == torch.bfloat16}
    assert len(low) == 2 and len(list(graph.buffers())) == 2  # the convolution's two, cast once (the scales: numbers)
    x = torch.from_numpy(floats(2, 4, 6, 6))
    plan = freeze(graph, bucket_of([x]), "cpu")
    with torch.inference_mode():
        (y,), (eager,) = plan(x), graph(x)
        (exact,) = OnnxGraph(net).eval()(x)
    assert y.dtype == eager.dtype == torch.float32  # the head (Softmax) computes in fp32
    assert torch.equal(y, eager)  # the plan computes at the module's precision
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
