"""Masked padding (serving.runners.padding_masks) on a small convolutional graph built here
with what det holds (strided and padded convolutions, a squeeze-and-excitation block,
nearest upsampling, a 2x2 transposed convolution): images of different sizes padded into
one batch, garbage in the padding, compute what each computes alone; without the masks
they do not; operators the masks cannot follow are refused, naming the node."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from onnx import TensorProto, helper

from serving.op import extent_input
from serving.runners.frozen_plan import InputSpec, freeze
from serving.runners.onnx_graph import OnnxGraph
from serving.runners.padding_masks import CannotMask, mask_padding
from tests.support.onnx_nets import FLOAT, floats, model, nearest_resize

RNG = np.random.default_rng(11)
SIZES = [(8, 12), (16, 8), (16, 16)]  # multiples of the net's stride (2)


def se_net(extra_nodes=(), extra_inits=(), output="y"):
    """conv 3x3 -> hardswish -> conv 1x1 -> conv 3x3 stride 2 -> squeeze-and-excitation -> nearest x2 ->
    + the first conv's map -> transposed conv 2x2 stride 2 -> sigmoid."""
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("HardSwish", ["c1"], ["a1"]),
        helper.make_node("Conv", ["a1", "w11", "b11"], ["p1"], kernel_shape=[1, 1]),  # unmasked: reads its own position
        helper.make_node("Conv", ["p1", "w2"], ["c2"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["c2"], ["pooled"]),
        helper.make_node("Conv", ["pooled", "w3"], ["squeezed"], kernel_shape=[1, 1]),
        helper.make_node("HardSigmoid", ["squeezed"], ["gate"], alpha=0.2, beta=0.5),
        helper.make_node("Mul", ["c2", "gate"], ["excited"]),
        nearest_resize("excited", "up"),
        helper.make_node("Add", ["up", "a1"], ["sum"]),
        helper.make_node("ConvTranspose", ["sum", "w4"], ["t"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Sigmoid", ["t"], ["y"]),
        *extra_nodes,
    ]
    inits = [
        ("w1", floats(4, 3, 3, 3)),
        ("b1", floats(4)),
        ("w11", floats(4, 4, 1, 1)),
        ("b11", floats(4)),
        ("w2", floats(4, 4, 3, 3)),
        ("w3", floats(4, 4, 1, 1)),
        ("scales", np.array([1, 1, 2, 2], dtype=np.float32)),
        ("w4", floats(4, 1, 2, 2)),
        *extra_inits,
    ]
    return model(nodes, [("x", FLOAT, ["n", 3, "h", "w"])], [output], inits, opset=14)


def padded_batch(images):
    """The images in one batch padded to the largest sides, with noise in the padding."""
    height, width = max(i.shape[1] for i in images), max(i.shape[2] for i in images)
    batch = RNG.uniform(-3, 3, (len(images), 3, height, width)).astype(np.float32)
    for k, image in enumerate(images):
        batch[k, :, : image.shape[1], : image.shape[2]] = image
    return torch.from_numpy(batch)


def test_a_padded_batch_computes_what_each_image_computes_alone():
    net = se_net()  # once: its weights are drawn at random
    plain, masked = OnnxGraph(net).eval(), OnnxGraph(mask_padding(net)).eval()
    assert masked.input_names == ["x", extent_input("x")]
    images = [RNG.uniform(-1, 1, (3, h, w)).astype(np.float32) for h, w in SIZES]
    batch, extents = padded_batch(images), torch.tensor(SIZES, dtype=torch.int64)
    with torch.inference_mode():
        together = masked(batch, extents)[0]
        unmasked = plain(batch)[0]
        for k, (image, (h, w)) in enumerate(zip(images, SIZES)):
            alone = plain(torch.from_numpy(image[None]))[0]
            out_h, out_w = alone.shape[2:]  # the net's output is twice the input's size
            assert (out_h, out_w) == (2 * h, 2 * w)
            # float32 rounding of convolutions over another batch shape: up to 1.4e-5 over 60 draws of
            # weights and images; the padding reaches a smaller image by 0.76 or more unmasked
            torch.testing.assert_close(together[k : k + 1, :, :out_h, :out_w], alone, atol=1e-4, rtol=1e-4)
            if (h, w) != max(SIZES):  # the padding reaches a smaller image through the pool without the masks
                assert (unmasked[k : k + 1, :, :out_h, :out_w] - alone).abs().max() > 1e-3


def test_only_convolutions_that_read_neighbours_get_a_mask():
    masked = mask_padding(se_net())
    convs = {n.output[0]: n for n in masked.graph.node if n.op_type == "Conv"}
    assert convs["p1"].input[0] == "a1"  # the 1x1 convolution reads the tensor as it is
    assert convs["squeezed"].input[0] == "pooled"  # as does the excitation's, on the pooled map
    assert convs["c1"].input[0] != "x" and convs["c2"].input[0] != "p1"  # the 3x3 ones read it masked


def test_an_image_with_its_whole_extent_computes_as_the_plain_model():
    net = se_net()
    plain, masked = OnnxGraph(net).eval(), OnnxGraph(mask_padding(net)).eval()
    x = torch.from_numpy(RNG.uniform(-1, 1, (2, 3, 8, 8)).astype(np.float32))
    with torch.inference_mode():
        torch.testing.assert_close(masked(x, torch.tensor([[8, 8], [8, 8]]))[0], plain(x)[0], atol=1e-6, rtol=1e-5)


def test_the_masked_model_freezes_on_meta_tensors_for_cuda_graphs():
    """The masks' shape arithmetic is host work done once per bucket: the plan reads nothing back."""
    masked = OnnxGraph(mask_padding(se_net())).eval()
    bucket = (InputSpec((3, 3, 16, 16), torch.float32), InputSpec((3, 2), torch.int64))
    plan = freeze(masked, bucket, "meta")
    assert plan.output_specs[0].shape == (3, 1, 32, 32)
    batch = padded_batch([RNG.uniform(-1, 1, (3, h, w)).astype(np.float32) for h, w in SIZES])
    cpu_plan = freeze(masked, bucket, "cpu")
    with torch.inference_mode():
        extents = torch.tensor(SIZES, dtype=torch.int64)
        torch.testing.assert_close(cpu_plan(batch, extents)[0], masked(batch, extents)[0])


@pytest.mark.parametrize(
    ("node", "inits", "named"),
    [
        (helper.make_node("Reshape", ["y", "flat"], ["z"], name="to_rows"), [("flat", np.array([0, -1]))], "to_rows"),
        (helper.make_node("Transpose", ["y"], ["z"], perm=[0, 1, 3, 2], name="turn"), [], "turn"),
        (helper.make_node("MaxPool", ["y"], ["z"], kernel_shape=[2, 2], name="pool"), [], "pool"),
        (helper.make_node("Concat", ["y", "y"], ["z"], axis=3, name="side_by_side"), [], "side_by_side"),
        (helper.make_node("Concat", ["y", "y"], ["z"], axis=0, name="more_items"), [], "more_items"),
        (
            helper.make_node("ConvTranspose", ["y", "w5"], ["z"], kernel_shape=[3, 3], strides=[2, 2], name="up3"),
            [("w5", floats(1, 1, 3, 3))],
            "up3",
        ),
        (
            helper.make_node("Resize", ["y", "", "scales"], ["z"], mode="linear", name="smooth"),
            [],
            "smooth",
        ),
    ],
)
def test_an_operator_the_masks_cannot_follow_is_refused_naming_the_node(node, inits, named):
    with pytest.raises(CannotMask, match=f"node '{named}'"):
        mask_padding(se_net([node], inits, output="z"))


def test_a_model_without_one_image_input_is_refused():
    two = se_net()
    two.graph.input.append(helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["n", 1, "h", "w"]))
    with pytest.raises(CannotMask, match="one NCHW image input"):
        mask_padding(two)
