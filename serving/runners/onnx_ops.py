"""ONNX operators as PyTorch calls: what :mod:`serving.runners.onnx_graph` runs.
Each entry of :data:`OPS` takes a node's attributes and the opset and returns
the function computing the node (``None`` for an absent optional input). What it
cannot honour is refused when the graph is built (:class:`UnsupportedNode`),
never computed wrongly; only the shipped models' operators (and neighbours) are here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import torch
import torch.nn.functional as F

Tensor = torch.Tensor
Compute = Callable[..., Any]
Attributes = Mapping[str, Any]

# ONNX TensorProto data types -> torch (the ones these models cast to)
DTYPES: Mapping[int, torch.dtype] = MappingProxyType(
    {
        1: torch.float32,
        2: torch.uint8,
        3: torch.int8,
        5: torch.int16,
        6: torch.int32,
        7: torch.int64,
        9: torch.bool,
        10: torch.float16,
        11: torch.float64,
        16: torch.bfloat16,
    }
)


class UnsupportedNode(ValueError):
    """A node this module cannot compute exactly (its operator or an attribute value)."""


def ints(t: Tensor | None) -> list[int]:
    """A shape-like input as Python ints ([] when absent)."""
    return [] if t is None else [int(v) for v in t.reshape(-1).tolist()]


def text(attrs: Attributes, key: str, default: str) -> str:
    """A string attribute (onnx gives bytes)."""
    value = attrs.get(key, default)
    return value.decode() if isinstance(value, bytes) else value


def aligned(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    """``a`` and ``b`` on one device: a CPU constant follows the other operand."""
    if a.device == b.device:
        return a, b
    if a.device.type == "cpu":
        return a.to(b.device), b
    return a, b.to(a.device)


def symmetric_pads(op: str, pads: Sequence[int], rank: int) -> list[int]:
    """ONNX ``pads`` (all begins, then all ends) as torch's one pad per spatial axis."""
    pads = list(pads) or [0] * (2 * rank)
    begins, ends = pads[:rank], pads[rank:]
    if begins != ends:
        raise UnsupportedNode(f"{op} with asymmetric pads {pads}")
    return begins


def no_auto_pad(op: str, attrs: Attributes) -> None:
    if text(attrs, "auto_pad", "NOTSET") != "NOTSET":
        raise UnsupportedNode(f"{op} with auto_pad {attrs['auto_pad']!r}")


def binary(fn: Callable[[Tensor, Tensor], Tensor]) -> Callable[[Attributes, int], Compute]:
    def build(attrs: Attributes, opset: int) -> Compute:
        return lambda a, b: fn(*aligned(a, b))

    return build


def divide(a: Tensor, b: Tensor) -> Tensor:
    # ONNX integer division truncates; torch's true division would give floats
    if not a.is_floating_point() and not b.is_floating_point():
        return torch.div(a, b, rounding_mode="trunc")
    return a / b


def unary(fn: Callable[[Tensor], Tensor]) -> Callable[[Attributes, int], Compute]:
    return lambda attrs, opset: fn


def hard_sigmoid(attrs: Attributes, opset: int) -> Compute:
    alpha, beta = float(attrs.get("alpha", 0.2)), float(attrs.get("beta", 0.5))
    return lambda x: torch.clamp(x * alpha + beta, 0.0, 1.0)


def cast(attrs: Attributes, opset: int) -> Compute:
    to = int(attrs["to"])
    if to not in DTYPES:
        raise UnsupportedNode(f"Cast to ONNX data type {to}")
    dtype = DTYPES[to]
    return lambda x: x.to(dtype)


@dataclass(frozen=True)
class ConvSettings:
    """What ``Conv`` and ``ConvTranspose`` share: the torch function for their rank, and its settings."""

    fn: Callable[..., Tensor]
    rank: int
    padding: list[int]
    stride: list[int]
    dilation: list[int]
    groups: int


def conv_settings(op: str, attrs: Attributes, by_rank: Mapping[int, Callable[..., Tensor]]) -> ConvSettings:
    no_auto_pad(op, attrs)
    rank = len(attrs.get("kernel_shape", [])) or 2
    if rank not in by_rank:
        raise UnsupportedNode(f"{op} over {rank} spatial axes")
    return ConvSettings(
        by_rank[rank],
        rank,
        symmetric_pads(op, attrs.get("pads", []), rank),
        list(attrs.get("strides", [1] * rank)),
        list(attrs.get("dilations", [1] * rank)),
        int(attrs.get("group", 1)),
    )


def conv(attrs: Attributes, opset: int) -> Compute:
    c = conv_settings("Conv", attrs, {1: F.conv1d, 2: F.conv2d, 3: F.conv3d})

    def compute(x: Tensor, w: Tensor, b: Tensor | None = None) -> Tensor:
        return c.fn(x, w, b, c.stride, c.padding, c.dilation, c.groups)

    return compute


def conv_transpose(attrs: Attributes, opset: int) -> Compute:
    if attrs.get("output_shape"):
        raise UnsupportedNode("ConvTranspose with output_shape")
    c = conv_settings("ConvTranspose", attrs, {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d})
    output_padding = list(attrs.get("output_padding", [0] * c.rank))

    def compute(x: Tensor, w: Tensor, b: Tensor | None = None) -> Tensor:
        return c.fn(x, w, b, c.stride, c.padding, output_padding, c.groups, c.dilation)

    return compute


def batch_norm(attrs: Attributes, opset: int) -> Compute:
    eps = float(attrs.get("epsilon", 1e-5))

    def compute(x: Tensor, scale: Tensor, bias: Tensor, mean: Tensor, var: Tensor) -> Tensor:
        return F.batch_norm(x, mean, var, scale, bias, training=False, eps=eps)

    return compute


def pool_settings(op: str, attrs: Attributes) -> tuple[list[int], list[int], list[int], bool]:
    no_auto_pad(op, attrs)
    kernel = list(attrs["kernel_shape"])
    if len(kernel) != 2:
        raise UnsupportedNode(f"{op} over {len(kernel)} spatial axes")
    if list(attrs.get("dilations", [1, 1])) != [1, 1]:
        raise UnsupportedNode(f"{op} with dilations {list(attrs['dilations'])}")
    padding = symmetric_pads(op, attrs.get("pads", []), 2)
    stride = list(attrs.get("strides", [1, 1]))
    return kernel, stride, padding, bool(attrs.get("ceil_mode", 0))


def average_pool(attrs: Attributes, opset: int) -> Compute:
    kernel, stride, padding, ceil = pool_settings("AveragePool", attrs)
    include_pad = bool(attrs.get("count_include_pad", 0))
    return lambda x: F.avg_pool2d(x, kernel, stride, padding, ceil, include_pad)


def max_pool(attrs: Attributes, opset: int) -> Compute:
    kernel, stride, padding, ceil = pool_settings("MaxPool", attrs)
    return lambda x: F.max_pool2d(x, kernel, stride, padding, 1, ceil)


def global_average_pool(attrs: Attributes, opset: int) -> Compute:
    return lambda x: x.mean(dim=tuple(range(2, x.dim())), keepdim=True)


def resize(attrs: Attributes, opset: int) -> Compute:
    mode = text(attrs, "mode", "nearest")
    transform = text(attrs, "coordinate_transformation_mode", "half_pixel")
    nearest = text(attrs, "nearest_mode", "round_prefer_floor")
    if mode == "nearest":
        # torch's "nearest" is ONNX's asymmetric transform with floor rounding
        if (transform, nearest) != ("asymmetric", "floor"):
            raise UnsupportedNode(f"Resize nearest with {transform} / {nearest}")
        kwargs: dict[str, Any] = {"mode": "nearest"}
    elif mode == "linear" and transform in ("half_pixel", "align_corners", "pytorch_half_pixel"):
        kwargs = {"mode": "bilinear", "align_corners": transform == "align_corners"}
    else:
        raise UnsupportedNode(f"Resize mode {mode} with {transform}")

    def compute(
        x: Tensor, roi: Tensor | None = None, scales: Tensor | None = None, sizes: Tensor | None = None
    ) -> Tensor:
        if opset < 11:  # Resize-10: (X, scales)
            scales, sizes = roi, None
        if sizes is not None and sizes.numel():
            return F.interpolate(x, size=ints(sizes)[2:], **kwargs)
        factors = [float(v) for v in scales.reshape(-1).tolist()] if scales is not None else []
        if factors[:2] != [1.0, 1.0]:
            raise ValueError(f"Resize of the batch or channel axis (scales {factors})")
        # the scale itself, not the one the output size implies: ONNX samples at out / scale
        return F.interpolate(x, scale_factor=factors[2:], recompute_scale_factor=False, **kwargs)

    return compute


def shape(attrs: Attributes, opset: int) -> Compute:
    start, end = attrs.get("start"), attrs.get("end")
    return lambda x: torch.tensor(list(x.shape)[slice(start, end)], dtype=torch.int64)


def reshape(attrs: Attributes, opset: int) -> Compute:
    allow_zero = bool(attrs.get("allowzero", 0))

    def compute(x: Tensor, target: Tensor) -> Tensor:
        dims = ints(target)
        if not allow_zero:
            dims = [x.shape[i] if d == 0 else d for i, d in enumerate(dims)]
        return x.reshape(dims)

    return compute


def transpose(attrs: Attributes, opset: int) -> Compute:
    perm = attrs.get("perm")
    if perm is None:
        return lambda x: x.permute(*reversed(range(x.dim())))
    order = list(perm)
    return lambda x: x.permute(*order)


def concat(attrs: Attributes, opset: int) -> Compute:
    axis = int(attrs["axis"])

    def compute(*parts: Tensor) -> Tensor:
        device = next((p.device for p in parts if p.device.type != "cpu"), parts[0].device)
        return torch.cat([p.to(device) for p in parts], dim=axis)

    return compute


def axes_from(attrs: Attributes, given: Tensor | None) -> list[int] | None:
    """Axes from the attribute (older opsets) or the input (newer); None when neither."""
    if given is not None:
        return ints(given)
    if "axes" in attrs:
        return [int(a) for a in attrs["axes"]]
    return None


def squeeze(attrs: Attributes, opset: int) -> Compute:
    def compute(x: Tensor, axes: Tensor | None = None) -> Tensor:
        chosen = axes_from(attrs, axes)
        if chosen is None:
            return x.squeeze()
        return x.squeeze(tuple(a % x.dim() for a in chosen))

    return compute


def unsqueeze(attrs: Attributes, opset: int) -> Compute:
    def compute(x: Tensor, axes: Tensor | None = None) -> Tensor:
        chosen = axes_from(attrs, axes) or []
        rank = x.dim() + len(chosen)
        for axis in sorted(a % rank for a in chosen):
            x = x.unsqueeze(axis)
        return x

    return compute


def slice_(attrs: Attributes, opset: int) -> Compute:
    def compute(
        x: Tensor, starts: Tensor, ends: Tensor, axes: Tensor | None = None, steps: Tensor | None = None
    ) -> Tensor:
        begin, end = ints(starts), ints(ends)
        along = ints(axes) or list(range(len(begin)))
        step = ints(steps) or [1] * len(begin)
        index = [slice(None)] * x.dim()
        for b, e, a, s in zip(begin, end, along, step):
            if s <= 0:
                raise ValueError(f"Slice with step {s}")
            index[a % x.dim()] = slice(b, e, s)
        return x[tuple(index)]

    return compute


def expand(attrs: Attributes, opset: int) -> Compute:
    def compute(x: Tensor, target: Tensor) -> Tensor:
        return x.expand(torch.broadcast_shapes(x.shape, tuple(ints(target))))

    return compute


def gather(attrs: Attributes, opset: int) -> Compute:
    axis = int(attrs.get("axis", 0))

    def compute(data: Tensor, indices: Tensor) -> Tensor:
        along = axis % data.dim()
        index = indices.to(data.device, torch.int64)
        index = torch.where(index < 0, index + data.shape[along], index)
        picked = data.index_select(along, index.reshape(-1))
        return picked.reshape(data.shape[:along] + index.shape + data.shape[along + 1 :])

    return compute


def reduce_mean(attrs: Attributes, opset: int) -> Compute:
    keep = bool(attrs.get("keepdims", 1))

    def compute(x: Tensor, axes: Tensor | None = None) -> Tensor:
        chosen = axes_from(attrs, axes)
        dims = tuple(range(x.dim())) if not chosen else tuple(chosen)
        return x.mean(dim=dims, keepdim=keep)

    return compute


def softmax(attrs: Attributes, opset: int) -> Compute:
    axis = int(attrs.get("axis", -1 if opset >= 13 else 1))
    if opset >= 13:
        return lambda x: torch.softmax(x, dim=axis)

    def coerced(x: Tensor) -> Tensor:
        # before opset 13: softmax over the input flattened from ``axis`` on
        start = axis % x.dim()
        return torch.softmax(x.flatten(start), dim=-1).reshape(x.shape)

    return coerced


def range_(attrs: Attributes, opset: int) -> Compute:
    def compute(start: Tensor, limit: Tensor, delta: Tensor) -> Tensor:
        # host numbers (shapes): the positions along an axis
        return torch.arange(start.item(), limit.item(), delta.item(), dtype=start.dtype)

    return compute


def cumsum(attrs: Attributes, opset: int) -> Compute:
    exclusive, reverse = bool(attrs.get("exclusive", 0)), bool(attrs.get("reverse", 0))

    def compute(x: Tensor, axis: Tensor) -> Tensor:
        dim = ints(axis)[0]
        y = x.flip(dim) if reverse else x
        total = torch.cumsum(y, dim=dim)
        if exclusive:
            total = total - y
        return total.flip(dim) if reverse else total

    return compute


# the input positions each operator reads as host values (shapes, axes, scales), never as tensor operands
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
        "Range": frozenset({0, 1, 2}),
    }
)

OPS: Mapping[str, Callable[[Attributes, int], Compute]] = MappingProxyType(
    {
        "Add": binary(torch.add),
        "Sub": binary(torch.sub),
        "Mul": binary(torch.mul),
        "Div": binary(divide),
        "Pow": binary(torch.pow),
        "Equal": binary(torch.eq),
        "Less": binary(torch.lt),
        "MatMul": binary(torch.matmul),
        "Not": unary(torch.logical_not),
        "Relu": unary(torch.relu),
        "Sigmoid": unary(torch.sigmoid),
        "Tanh": unary(torch.tanh),
        "Erf": unary(torch.erf),
        "Sqrt": unary(torch.sqrt),
        "HardSwish": unary(F.hardswish),
        "HardSigmoid": hard_sigmoid,
        "Identity": unary(lambda x: x),
        "Cast": cast,
        "Conv": conv,
        "ConvTranspose": conv_transpose,
        "BatchNormalization": batch_norm,
        "AveragePool": average_pool,
        "MaxPool": max_pool,
        "GlobalAveragePool": global_average_pool,
        "Resize": resize,
        "Shape": shape,
        "Reshape": reshape,
        "Transpose": transpose,
        "Concat": concat,
        "Squeeze": squeeze,
        "Unsqueeze": unsqueeze,
        "Slice": slice_,
        "Expand": expand,
        "Gather": gather,
        "ReduceMean": reduce_mean,
        "Softmax": softmax,
        "CumSum": cumsum,
        "Range": range_,
    }
)
