"""A convolutional model rewritten so that a batch of images padded to one size computes,
for each image, exactly what the image computes alone (``mask_padding``).

Padding reaches a whole image's output where the model pools globally: PP-OCRv4 det's
squeeze-and-excitation blocks average every feature map, so a page padded to batch with
larger ones reads other lines (docs/DESIGN_NOTES.md, "Det batches pages of any size,
exactly"). The rewritten model takes a second input, ``<image>_extent`` (batch x 2, int64:
each image's unpadded height and width), and

* multiplies the input of every convolution that reads neighbouring positions (not a 1x1
  one) of a tensor laid out as the image (not one pooled to 1 x 1) by the mask of each
  image's extent at that tensor's size: outside it the convolution then reads zeros, which
  is what its own zero padding gives the image alone. Whatever lies in the padding
  elsewhere stays there: 1x1 convolutions, element-wise operators, nearest upsampling and
  2x2 stride-2 transposed convolutions compute each position from its own;
* averages each globally pooled map over the image's extent only.

A tensor of size H' x W' in a model fed H x W holds an image of extent (h, w) in its top
left ``h * H' / H`` x ``w * W' / W``: exact when every stride and scale divides the sides,
as det's sides (multiples of 32) are. Operators that move values across positions in other
ways (reshapes, transposes, pools with windows, reductions over the spatial axes) have no
such mask: a model holding one is refused, naming the node.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from serving.op import extent_input
from serving.runners.batch_norm_folding import constant_arrays

# operators computed per position (or per channel) that keep a tensor's spatial layout
LOCAL_OPS = frozenset(
    {
        "Add",
        "Sub",
        "Mul",
        "Div",
        "Relu",
        "LeakyRelu",
        "Clip",
        "HardSwish",
        "HardSigmoid",
        "Sigmoid",
        "Tanh",
        "BatchNormalization",
        "Identity",
        "Cast",
        "Constant",
    }
)
CHANNEL_AXIS = 1


class CannotMask(ValueError):
    """A model whose padding this rewrite cannot mask exactly; the message names the node."""


def mask_padding(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` (one NCHW image input, opset >= 13) taking ``<image>_extent`` as well; raises
    :class:`CannotMask` naming the first node it cannot mask exactly."""
    graph = model.graph
    initializers = {i.name for i in graph.initializer}
    images = [i for i in graph.input if i.name not in initializers]
    if len(images) != 1 or len(images[0].type.tensor_type.shape.dim) != 4:
        raise CannotMask(f"mask_padding needs one NCHW image input, the model has {[i.name for i in images]}")
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    if opset < 13:
        raise CannotMask(f"mask_padding needs opset >= 13 (the model's is {opset}): convert it again")
    constants = constant_arrays(graph)
    for node in graph.node:
        check_node(node, constants)
    image = images[0].name
    extent = extent_input(image)
    writer = _Writer(image, extent)
    nodes: list[onnx.NodeProto] = []
    spatial = {image}  # tensors laid out as the image (not the pooled ones and what follows from them alone)
    for node in graph.node:
        if node.op_type != "GlobalAveragePool" and any(i in spatial for i in node.input):
            spatial.update(node.output)
        if node.op_type == "Conv" and node.input[0] in spatial and reads_neighbours(node):
            masked = writer.masked(node.input[0], nodes)
            rewritten = onnx.NodeProto()
            rewritten.CopyFrom(node)
            rewritten.input[0] = masked
            nodes.append(rewritten)
        elif node.op_type == "GlobalAveragePool":
            writer.pooled(node, nodes)
        else:
            nodes.append(node)
    out = onnx.ModelProto()
    out.CopyFrom(model)
    del out.graph.node[:]
    out.graph.node.extend(writer.prelude + nodes)
    out.graph.input.append(helper.make_tensor_value_info(extent, TensorProto.INT64, ["N", 2]))
    out.graph.initializer.extend(writer.constants)
    return out


def load_masked(path: str) -> onnx.ModelProto:
    """The ONNX model at ``path`` rewritten by :func:`mask_padding` (what an engine loads for
    ``mask_padding: true``); ValueError naming the file and the node it cannot mask."""
    try:
        return mask_padding(onnx.load(path))
    except CannotMask as e:
        raise ValueError(f"mask_padding: {path}: {e}") from None


def reads_neighbours(conv: onnx.NodeProto) -> bool:
    """Whether a convolution's output at a position reads other positions (or its zero padding):
    a 1x1 convolution without pads reads its own only, so garbage in the padding stays there."""
    attrs = {a.name: helper.get_attribute_value(a) for a in conv.attribute}
    return any(k != 1 for k in attrs.get("kernel_shape", [0])) or any(attrs.get("pads", [0]))


def check_node(node: onnx.NodeProto, constants: Mapping[str, np.ndarray]) -> None:
    """Refuse, naming it, a node after which an image's extent is not where the mask puts it."""
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    label = f"{node.op_type} node {node.name or node.output[0]!r}"
    if node.op_type in LOCAL_OPS or node.op_type in ("Conv", "GlobalAveragePool"):
        return
    if node.op_type == "ConvTranspose":
        kernel, strides = list(attrs.get("kernel_shape", [])), list(attrs.get("strides", [1, 1]))
        if kernel != strides or any(attrs.get("pads", [0])) or any(attrs.get("output_padding", [0])):
            raise CannotMask(
                f"{label}: a transposed convolution maps extents exactly only with kernel = stride, no pads"
            )
        return
    if node.op_type == "Concat":
        if attrs.get("axis", 0) % 4 != CHANNEL_AXIS:  # along the batch, items' extents would move
            raise CannotMask(f"{label}: concatenates along an axis other than the channels'")
        return
    if node.op_type == "Resize":
        mode = attrs.get("mode", b"nearest")
        transform = attrs.get("coordinate_transformation_mode", b"half_pixel")
        if (
            mode != b"nearest"
            or transform != b"asymmetric"
            or attrs.get("nearest_mode", b"round_prefer_floor") != b"floor"
        ):
            raise CannotMask(f"{label}: only nearest, asymmetric, floor resizing maps extents exactly")
        scales = constants.get(node.input[2]) if len(node.input) > 2 else None
        if scales is None or any(float(s) != int(s) or s < 1 for s in scales.reshape(-1)):
            raise CannotMask(f"{label}: only constant whole-number upscaling maps extents exactly")
        return
    raise CannotMask(f"{label}: {node.op_type} moves values across positions; mask_padding cannot follow it")


@dataclass(frozen=True)
class _Masked:
    """What the rewrite made for one tensor: its mask (N x 1 x H' x W', float), each image's
    extent at its size (N x 1 each, int64), its own height and width (scalars) and itself masked."""

    mask: str
    height: str
    width: str
    rows: str
    cols: str
    tensor: str


class _Writer:
    """Adds the masks' nodes, once per tensor however many nodes read it."""

    def __init__(self, image: str, extent: str):
        self.extent = extent
        self.constants: list[onnx.TensorProto] = []
        self.prelude: list[onnx.NodeProto] = []
        self._done: dict[str, _Masked] = {}
        self._count = 0
        self.image_hw = self._name("image_hw")
        shape = self._name("image_shape")
        self.prelude += [
            helper.make_node("Shape", [image], [shape]),
            helper.make_node(
                "Slice", [shape, self._const("hw_starts", [2]), self._const("hw_ends", [4])], [self.image_hw]
            ),
        ]

    def _const(self, key: str, values: list[int] | int) -> str:
        name = f"mask_padding/{key}"
        if all(c.name != name for c in self.constants):
            self.constants.append(numpy_helper.from_array(np.asarray(values, dtype=np.int64), name))
        return name

    def _name(self, what: str) -> str:
        self._count += 1
        return f"mask_padding/{what}_{self._count}"

    def _add(self, nodes: list[onnx.NodeProto], op: str, inputs: list[str], **attrs: Any) -> str:
        out = self._name(op.lower())
        nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out

    def _of(self, tensor: str, nodes: list[onnx.NodeProto]) -> _Masked:
        if tensor in self._done:
            return self._done[tensor]
        add = partial(self._add, nodes)
        hw = add("Slice", [add("Shape", [tensor]), self._const("hw_starts", [2]), self._const("hw_ends", [4])])
        # whole numbers where the strides and scales divide the sides
        scaled = add("Div", [add("Mul", [self.extent, hw]), self.image_hw])
        sides, edges, counts = [], [], []
        for axis in (0, 1):
            count = add("Gather", [hw, self._const(f"index_{axis}", axis)])
            positions = add("Range", [self._const("zero", 0), count, self._const("one", 1)])
            starts, ends = self._const(f"column_{axis}", [axis]), self._const(f"column_end_{axis}", [axis + 1])
            edge = add("Slice", [scaled, starts, ends, self._const("axis_1", [1])])  # N x 1
            inside = add("Cast", [add("Less", [positions, edge])], to=TensorProto.FLOAT)  # N x H' (or W')
            # height's N x H' -> N x 1 x H' x 1; width's N x W' -> N x 1 x 1 x W'
            sides.append(add("Unsqueeze", [inside, self._const(f"unsqueeze_{axis}", [1, 3] if axis == 0 else [1, 2])]))
            edges.append(edge)
            counts.append(count)
        mask = add("Mul", sides)
        done = _Masked(mask, edges[0], edges[1], counts[0], counts[1], add("Mul", [tensor, mask]))
        self._done[tensor] = done
        return done

    def masked(self, tensor: str, nodes: list[onnx.NodeProto]) -> str:
        """``tensor`` with every image's padding zeroed."""
        return self._of(tensor, nodes).tensor

    def pooled(self, node: onnx.NodeProto, nodes: list[onnx.NodeProto]) -> None:
        """GlobalAveragePool over each image's extent: the masked map's mean times the whole
        map's area over the extent's."""
        m = self._of(node.input[0], nodes)
        add = partial(self._add, nodes)
        mean = add("GlobalAveragePool", [m.tensor])
        whole = add("Cast", [add("Mul", [m.rows, m.cols])], to=TensorProto.FLOAT)
        area = add("Cast", [add("Mul", [m.height, m.width])], to=TensorProto.FLOAT)  # N x 1
        ratio = add("Unsqueeze", [add("Div", [whole, area]), self._const("unsqueeze_pool", [2, 3])])
        nodes.append(helper.make_node("Mul", [mean, ratio], list(node.output), name=node.name))
