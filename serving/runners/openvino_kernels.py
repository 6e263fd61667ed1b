"""Which convolution kernels OpenVINO's CPU plugin runs (``conv_kernels``):
``jit`` restores the direct JIT kernels (faster for PP-OCRv4 rec than the brgemm
ones preferred since 2024.2). With no property for it, and a per-layer attribute
Python cannot create, the model goes through IR once at load: saved, every
convolution layer marked in the XML, read back from memory (DESIGN_NOTES).
"""

from __future__ import annotations

import logging
import os
import tempfile
import xml.etree.ElementTree as ET
from typing import Any

log = logging.getLogger(__name__)

#: the layer types whose kernels ``conv_kernels`` chooses
CONV_LAYER_TYPES = ("Convolution", "GroupConvolution")

#: ``conv_kernels`` -> the CPU plugin's implementation priority for those layers
#: (in order: the first the CPU and the layer support is taken)
CONV_PRIORITIES = {
    "jit": ",".join(f"cpu:jit_{isa}{shape}" for isa in ("avx512", "avx2") for shape in ("_dw", "_1x1", "")),
}

_ATTRIBUTE = "primitives_priority"


def effective_conv_kernels(conv_kernels: str, precision: str) -> str:
    """The kernel choice for a model compiled at ``precision``: ``jit`` only for fp32
    (bf16 runs only on AVX512-BF16/AMX CPUs, where the brgemm kernels are the AMX ones)."""
    return conv_kernels if precision == "fp32" else "auto"


def mark_layers(ir_xml: str, layer_types: tuple[str, ...], priority: str) -> tuple[str, int]:
    """The IR ``ir_xml`` with ``priority`` as the ``primitives_priority`` of
    every layer whose type is in ``layer_types``; also returns how many."""
    root = ET.fromstring(ir_xml)
    marked = 0
    for layer in root.iter("layer"):
        if layer.get("type") not in layer_types:
            continue
        rt_info = layer.find("rt_info")
        if rt_info is None:
            rt_info = ET.Element("rt_info")
            layer.insert(0, rt_info)
        for old in [a for a in rt_info.findall("attribute") if a.get("name") == _ATTRIBUTE]:
            rt_info.remove(old)
        ET.SubElement(rt_info, "attribute", {"name": _ATTRIBUTE, "version": "0", "value": priority})
        marked += 1
    return ET.tostring(root, encoding="unicode"), marked


def with_conv_kernels(core: Any, model: Any, conv_kernels: str) -> tuple[Any, int]:
    """``model`` (an ``openvino.Model`` read by ``core``) with its convolution
    kernels chosen by ``conv_kernels``, and how many layers were marked
    ("auto": the model itself, 0)."""
    if conv_kernels == "auto":
        return model, 0
    if conv_kernels not in CONV_PRIORITIES:
        raise ValueError(f"unknown conv_kernels {conv_kernels!r} (auto or {', '.join(CONV_PRIORITIES)})")
    import numpy as np
    import openvino as ov

    try:
        with tempfile.TemporaryDirectory(prefix="batchline-ir-") as tmp:
            xml_path = os.path.join(tmp, "model.xml")
            ov.save_model(model, xml_path, compress_to_fp16=False)
            with open(xml_path, encoding="utf-8") as f:
                ir_xml, marked = mark_layers(f.read(), CONV_LAYER_TYPES, CONV_PRIORITIES[conv_kernels])
            weights = np.fromfile(os.path.join(tmp, "model.bin"), dtype=np.uint8)
    except (OSError, RuntimeError, ET.ParseError) as exc:
        # a kernel choice is a speed-up, never a reason not to serve
        log.warning(
            "conv_kernels %s not applied (%s: %s); the CPU plugin picks the kernels",
            conv_kernels,
            type(exc).__name__,
            exc,
        )
        return model, 0
    return core.read_model(ir_xml.encode("utf-8"), ov.Tensor(weights)), marked
