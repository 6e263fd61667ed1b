"""conv_kernels on a small real model built with OpenVINO and compiled by its CPU
plugin (tests/unit/test_openvino_kernels.py has the IR rewrite on XML alone)."""

from __future__ import annotations

import numpy as np
import pytest

from serving.runners.openvino_kernels import (
    CONV_LAYER_TYPES,
    with_conv_kernels,
)


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
