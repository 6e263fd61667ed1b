"""Reduced precision decided once per step, not per call: with fp16/bf16 weights
(:meth:`~serving.runners.onnx_graph.OnnxGraph.lower_precision`), convolutions and
matrix products take their inputs in that type; the reductions (softmax, layer
norm's means, powers and roots) and the steps that give the graph's outputs (the
DB and CTC heads) compute in fp32; every other step computes in the type its
inputs promote to (fp32 where it meets an fp32 constant, as under autocast).
"""

from __future__ import annotations

from typing import Any

import torch

from serving.runners.onnx_ops import Compute

# operators computed in fp32 whatever the weights' type: reductions and what feeds them
FP32_OPS = frozenset({"Softmax", "ReduceMean", "Pow", "Sqrt", "Erf", "CumSum"})
# operators whose weights are cast once and whose float inputs are cast to the weights' type
LOW_OPS = frozenset({"Conv", "ConvTranspose", "MatMul", "BatchNormalization"})


def with_precision(compute: Compute, op_type: str, dtype: torch.dtype | None, head: bool) -> Compute:
    """``compute`` with its float tensor inputs cast to the type the step computes in."""
    if dtype is None:
        return compute
    if op_type in FP32_OPS or head:
        target = torch.float32
    elif op_type in LOW_OPS:
        target = dtype
    else:
        return compute

    def cast(*args: Any) -> Any:
        return compute(*[a.to(target) if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args])

    return cast
