"""``conv_kernels``: the IR rewrite that sets OpenVINO's per-layer kernel
priority, on XML alone and on a small real model compiled by the CPU plugin."""

from __future__ import annotations

import numpy as np
import pytest

from serving.config import LocalServiceConf
from serving.runners.openvino_kernels import (
    CONV_LAYER_TYPES,
    CONV_PRIORITIES,
    effective_conv_kernels,
    mark_layers,
    with_conv_kernels,
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


def _small_cnn():
    """A depthwise 3x3 then a pointwise 1x1 convolution on a dynamic width, as in PP-OCR rec."""
    import openvino as ov
    import openvino.opset13 as ops

    rng = np.random.default_rng(0)
    x = ops.parameter([-1, 16, 8, -1], np.float32, name="x")
    dw = ops.group_convolution(
        x, ops.constant(rng.standard_normal((16, 1, 1, 3, 3)).astype(np.float32)), [1, 1], [1, 1], [1, 1], [1, 1]
    )
    pw = ops.convolution(
        dw, ops.constant(rng.standard_normal((32, 16, 1, 1)).astype(np.float32)), [1, 1], [0, 0], [0, 0], [1, 1]
    )
    return ov.Core(), ov.Model([ops.relu(pw)], [x], "small")


def _run(core, model, feed):
    compiled = core.compile_model(model, "CPU", {"PERF_COUNT": True, "INFERENCE_PRECISION_HINT": "f32"})
    request = compiled.create_infer_request()
    out = request.infer([feed])[0].copy()
    kernels = {p.node_type: p.exec_type for p in request.profiling_info if p.node_type in CONV_LAYER_TYPES}
    return out, kernels


def test_jit_kernels_run_the_same_model_on_direct_kernels():
    core, model = _small_cnn()
    feed = np.random.default_rng(1).standard_normal((2, 16, 8, 40)).astype(np.float32)
    same, marked = with_conv_kernels(core, model, "auto")
    assert same is model and marked == 0
    jit_model, marked = with_conv_kernels(core, model, "jit")
    assert marked == 2
    assert [p.get_any_name() for p in jit_model.inputs] == ["x"]
    expected, _ = _run(core, model, feed)
    out, kernels = _run(core, jit_model, feed)
    assert set(kernels) == {"Convolution", "GroupConvolution"}
    assert not any("brgconv" in k for k in kernels.values()), kernels
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


def test_unknown_conv_kernels_are_refused():
    core, model = _small_cnn()
    with pytest.raises(ValueError, match="unknown conv_kernels 'brgemm'"):
        with_conv_kernels(core, model, "brgemm")


def test_without_a_writable_temporary_directory_the_model_is_served_as_it_is(monkeypatch, tmp_path, caplog):
    core, model = _small_cnn()
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))
    with caplog.at_level("WARNING"):
        same, marked = with_conv_kernels(core, model, "jit")
    assert same is model and marked == 0
    assert "conv_kernels jit not applied (FileNotFoundError" in caplog.text
