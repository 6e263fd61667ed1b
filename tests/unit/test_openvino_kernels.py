"""``conv_kernels``: the IR rewrite that sets OpenVINO's per-layer kernel
priority, on XML alone and on a small real model compiled by the CPU plugin."""

from __future__ import annotations

from serving.config import LocalServiceConf
from serving.runners.openvino_kernels import (
    CONV_LAYER_TYPES,
    CONV_PRIORITIES,
    effective_conv_kernels,
    mark_layers,
)

IR = """<?xml version="1.0"?>
<net name="m" version="11">
  <layers>
    <layer id="0" name="x" type="Parameter" version="opset1"><data shape="1" element_type="f32"/></layer>
    <layer id="1" name="dw" type="GroupConvolution" version="opset1">
      <rt_info><attribute name="fused_names" version="0" value="dw"/></rt_info>
    </layer>
    <layer id="2" name="pw" type="Convolution" version="opset1">
      <rt_info><attribute name="primitives_priority" version="0" value="cpu:ref"/></rt_info>
    </layer>
    <layer id="3" name="act" type="Relu" version="opset1"/>
    <layer id="4" name="conv" type="Convolution" version="opset1"><data strides="1, 1"/></layer>
  </layers>
</net>
"""


def _priorities(xml: str) -> dict[str, list[str]]:
    import xml.etree.ElementTree as ET

    return {
        layer.get("name"): [a.get("value") for a in layer.iter("attribute") if a.get("name") == "primitives_priority"]
        for layer in ET.fromstring(xml).iter("layer")
    }


def test_mark_layers_sets_one_priority_on_every_convolution_and_nothing_else():
    out, marked = mark_layers(IR, CONV_LAYER_TYPES, "cpu:jit_avx2")
    assert marked == 3
    assert _priorities(out) == {
        "x": [],
        "dw": ["cpu:jit_avx2"],
        "pw": ["cpu:jit_avx2"],
        "act": [],
        "conv": ["cpu:jit_avx2"],
    }
    assert 'name="fused_names"' in out and 'strides="1, 1"' in out  # the rest of the IR is kept


def test_jit_priority_lists_direct_kernels_widest_isa_first():
    assert CONV_PRIORITIES["jit"].split(",") == [
        "cpu:jit_avx512_dw",
        "cpu:jit_avx512_1x1",
        "cpu:jit_avx512",
        "cpu:jit_avx2_dw",
        "cpu:jit_avx2_1x1",
        "cpu:jit_avx2",
    ]


def test_conv_kernels_default_to_the_plugins_choice():
    assert LocalServiceConf().conv_kernels == "auto"
    assert LocalServiceConf(engine="openvino", conv_kernels="jit").conv_kernels == "jit"


def test_jit_applies_to_f32_only_bf16_keeps_the_plugins_kernels():
    assert effective_conv_kernels("jit", "fp32") == "jit"
    assert effective_conv_kernels("jit", "bf16") == "auto"
    assert effective_conv_kernels("auto", "fp32") == "auto"
