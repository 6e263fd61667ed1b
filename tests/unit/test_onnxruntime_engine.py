"""``engine: onnxruntime`` without ONNX Runtime: its config checks, the config ->
session and provider options translation, the refusal of a GPU provider the
installed package lacks, and the runner over a fake session."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest
import yaml

from serving.config import ConfigError, parse_config
from serving.config.schema import LocalServiceConf
from serving.runners.onnxruntime_runtime import (
    CPU,
    CUDA,
    TENSORRT,
    OrtRunner,
    SessionPlan,
    require_providers,
    require_session_providers,
    session_plan,
)
from tests.support.gpu_tests import run_gpu_test_file

FAKE = "tests.support.config_fakes:FakeOp"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = {"XDG_CACHE_HOME": "/x"}
TRT_CACHE = "/x/batchline/tensorrt/onnxruntime-1.32.0"


def parse_svc(svc: dict):
    return parse_config(
        {"op": {"a": {"class": FAKE, "local_service_conf": {"engine": "onnxruntime", **svc}}}}, source="c.yml"
    )


def conf(**svc) -> LocalServiceConf:
    return parse_svc(svc).op["a"].local_service_conf


@pytest.mark.parametrize(
    ("svc", "key", "message"),
    [
        ({"use_openvino": True}, "use_openvino", "selects Paddle Inference's embedded OpenVINO engine: drop it"),
        ({"use_mkldnn": True}, "use_mkldnn", "is a Paddle Inference (oneDNN) setting; with engine: onnxruntime"),
        ({"mkldnn_cache_capacity": 10}, "mkldnn_cache_capacity", "is a Paddle Inference (oneDNN) setting"),
        ({"conv_kernels": "jit"}, "conv_kernels", "is an OpenVINO Runtime setting: it needs engine: openvino"),
        ({"cuda_graphs": True, "device_type": 1}, "cuda_graphs", "is a PyTorch setting: it needs engine: torch"),
        ({"torch_compile": True}, "torch_compile", "is a PyTorch setting: it needs engine: torch"),
        ({"torch_compile_budget_s": 10}, "torch_compile_budget_s", "is a PyTorch setting: it needs engine: torch"),
        ({"precision": "bf16"}, "precision", "bf16 is not available with engine: onnxruntime on device_type 0"),
        ({"precision": "fp16"}, "precision", "fp16 is not available with engine: onnxruntime on device_type 0"),
        ({"precision": "int8"}, "precision", "int8 is not available with engine: onnxruntime on device_type 0"),
        (
            {"device_type": 1, "precision": "fp16"},
            "precision",
            "fp16 is not available with engine: onnxruntime on device_type 1: ONNX Runtime's CUDA provider runs "
            "the fp32 model as it is and converts nothing to lower precision: use fp32, or device_type 2 "
            "(TensorRT) for fp16, or engine: torch for fp16/bf16",
        ),
        ({"device_type": 1, "precision": "bf16"}, "precision", "bf16 is not available with engine: onnxruntime"),
        ({"device_type": 1, "precision": "int8"}, "precision", "int8 is not available with engine: onnxruntime"),
        ({"device_type": 2, "precision": "bf16"}, "precision", "bf16 is not available with engine: onnxruntime"),
        ({"device_type": 2, "precision": "int8"}, "precision", "int8 is not available with engine: onnxruntime"),
    ],
)
def test_what_onnxruntime_cannot_honour_is_refused_naming_the_key(svc, key, message):
    with pytest.raises(ConfigError) as info:
        parse_svc(svc)
    assert str(info.value).startswith(f"c.yml: op.a.local_service_conf.{key}: {message}"), str(info.value)


@pytest.mark.parametrize(
    ("svc", "label"),
    [
        ({}, "cpu+onnxruntime"),
        ({"device_type": 1, "devices": "0,1"}, "gpu:0,1+onnxruntime"),
        ({"device_type": "trt", "devices": "1", "precision": "fp16"}, "gpu:1+trt+onnxruntime"),
        ({"device_type": 2}, "gpu+trt+onnxruntime"),
    ],
)
def test_what_onnxruntime_runs_is_accepted(svc, label):
    accepted = conf(**svc)
    assert accepted.engine == "onnxruntime" and accepted.device_label == label


def test_thread_instances_overlap_and_no_process_is_pinned():
    assert conf(instance_num=2).spreads_batches
    assert conf(instance_num=2).instances_overlap


# ---- the session's options --------------------------------------------------------------------


def test_a_cpu_session_runs_thread_num_threads_per_instance_fully_optimised():
    plan = session_plan(conf(thread_num=3), None, 1, "1.32.0", ENV)
    assert plan == SessionPlan(((CPU, {}),), 3, "ORT_ENABLE_ALL", None, "fp32")
    assert plan.label == "cpu:onnxruntime"
    # instances share the session's pool and compute on their own threads too
    assert session_plan(conf(thread_num=2), None, 3, "1.32.0", ENV).intra_op_num_threads == 4
    assert session_plan(conf(thread_num=1), None, 4, "1.32.0", ENV).intra_op_num_threads == 1


def test_a_cuda_session_searches_cudnn_by_heuristic_on_the_instances_gpu_without_tf32():
    plan = session_plan(conf(device_type=1, devices="0,3"), 3, 2, "1.32.0", ENV)
    assert plan.providers == (
        (CUDA, {"device_id": 3, "cudnn_conv_algo_search": "HEURISTIC", "use_tf32": 0}),
        (CPU, {}),
    )
    assert plan.gpu == 3 and plan.label == "gpu:3:onnxruntime" and plan.optimization == "ORT_ENABLE_ALL"


def test_a_tensorrt_session_caches_its_engines_and_falls_back_to_cuda_then_cpu():
    plan = session_plan(conf(device_type=2), 0, 1, "1.32.0", ENV)
    assert [name for name, _ in plan.providers] == [TENSORRT, CUDA, CPU]
    assert plan.providers[0][1] == {
        "device_id": 0,
        "trt_engine_cache_enable": True,
        "trt_engine_cache_path": TRT_CACHE,
        "trt_timing_cache_enable": True,
        "trt_timing_cache_path": TRT_CACHE,
        "trt_fp16_enable": False,
        "trt_max_workspace_size": 1 << 30,
        "trt_min_subgraph_size": 3,
    }
    assert plan.providers[1][1]["cudnn_conv_algo_search"] == "HEURISTIC"
    assert plan.label == "gpu:0:onnxruntime-trt"


def test_tensorrt_fp16_and_the_tensorrt_block_become_provider_options():
    trt = {
        "workspace_size": 1 << 28,
        "min_subgraph_size": 5,
        "dynamic_shape": {
            "x": {"min": [1, 3, 32, 32], "opt": [4, 3, 640, 640], "max": [8, 3, 960, 960]},
            "y": {"min": [1], "opt": [2], "max": [4]},
        },
    }
    options = session_plan(conf(device_type=2, precision="fp16", tensorrt=trt), 1, 1, "1.32.0", ENV).providers[0][1]
    assert options["trt_fp16_enable"] is True and options["device_id"] == 1
    assert options["trt_max_workspace_size"] == 1 << 28 and options["trt_min_subgraph_size"] == 5
    assert options["trt_profile_min_shapes"] == "x:1x3x32x32,y:1"
    assert options["trt_profile_opt_shapes"] == "x:4x3x640x640,y:2"
    assert options["trt_profile_max_shapes"] == "x:8x3x960x960,y:4"
    # without a block, local_service_conf's min_subgraph_size, as for Paddle-TensorRT
    assert (
        session_plan(conf(device_type=2, min_subgraph_size=7), 0, 1, "1", ENV).providers[0][1]["trt_min_subgraph_size"]
        == 7
    )


def test_the_tensorrt_cache_follows_the_user_cache_folder_per_runtime_version():
    options = session_plan(conf(device_type=2), 0, 1, "1.33.1", {}).providers[0][1]
    assert options["trt_engine_cache_path"] == os.path.join(
        os.path.expanduser("~"), ".cache", "batchline", "tensorrt", "onnxruntime-1.33.1"
    )


def test_a_plan_needs_an_instance():
    with pytest.raises(ValueError, match="instance count"):
        session_plan(conf(), None, 0, "1.32.0", ENV)


# ---- providers the installed package lacks ------------------------------------------------------

CPU_ONLY = ["AzureExecutionProvider", CPU]


@pytest.mark.parametrize(("device_type", "missing"), [(1, CUDA), (2, TENSORRT)])
def test_a_gpu_provider_the_package_lacks_is_refused_naming_the_gpu_package(device_type, missing):
    plan = session_plan(conf(device_type=device_type), 0, 1, "1.32.0", ENV)
    with pytest.raises(RuntimeError) as info:
        require_providers(plan, CPU_ONLY, "1.32.0")
    message = str(info.value)
    assert f"engine: onnxruntime on device_type {device_type} needs {missing}" in message
    assert "pip install onnxruntime-gpu" in message and "or use device_type 0" in message
    require_providers(plan, [TENSORRT, CUDA, CPU], "1.32.0")


@pytest.mark.parametrize(
    ("device_type", "came_up", "lost"),
    [(1, [CPU], CUDA), (2, [CUDA, CPU], TENSORRT), (2, [CPU], f"{TENSORRT} and {CUDA}")],
)
def test_a_session_without_a_gpu_provider_it_was_given_is_refused(device_type, came_up, lost):
    plan = session_plan(conf(device_type=device_type), 1, 1, "1.32.0", ENV)
    with pytest.raises(RuntimeError, match=f"on {plan.label}: ONNX Runtime could not start {lost} .*device_type 0"):
        require_session_providers(plan, came_up)
    require_session_providers(plan, [name for name, _ in plan.providers])


def test_the_cpu_provider_is_always_there():
    require_providers(session_plan(conf(), None, 1, "1.32.0", ENV), CPU_ONLY, "1.32.0")


# ---- the runner -------------------------------------------------------------------------------


class Port:
    def __init__(self, name: str):
        self.name = name


class FakeSession:
    """What OrtRunner reads of an InferenceSession."""

    def __init__(self):
        self.calls: list[tuple[list[str], dict]] = []

    def get_inputs(self):
        return [Port("x"), Port("mask")]

    def get_outputs(self):
        return [Port("scores"), Port("ids")]

    def run(self, output_names, feed):
        self.calls.append((output_names, feed))
        return [np.ones((2, 3), np.float16), np.arange(2, dtype=np.int64)]


def test_the_runner_feeds_by_name_and_returns_floats_as_float32():
    session = FakeSession()
    runner = OrtRunner(session, session_plan(conf(), None, 1, "1.32.0", ENV))
    assert runner.input_names == ["x", "mask"] and runner.output_names == ["scores", "ids"]
    assert runner.device == "cpu:onnxruntime" and runner.precision == "fp32"
    scores, ids = runner.run({"mask": np.zeros(2, np.int64), "x": np.zeros((2, 3), np.float32)})
    assert scores.dtype == np.float32 and ids.dtype == np.int64
    assert session.calls[0][0] == ["scores", "ids"] and list(session.calls[0][1]) == ["x", "mask"]
    with pytest.raises(ValueError, match="mask"):
        runner.run({"x": np.zeros((2, 3), np.float32)})
    runner.close()


def test_the_config_layer_and_the_loader_module_import_no_onnxruntime():
    code = (
        "import sys; import serving.config.engines, serving.runners.onnxruntime_runtime; "
        "sys.exit(3 if 'onnxruntime' in sys.modules else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


# ---- the ONNX cache it shares with engine: torch -------------------------------------------------


def test_the_cache_command_converts_onnxruntime_ops_too(tmp_path, monkeypatch):
    from serving.runners import onnx_export

    converted = []
    monkeypatch.setattr(onnx_export, "converter_version", lambda: "1.3.1")
    monkeypatch.setattr(onnx_export, "convert", lambda files, path: converted.append(files[0]))
    monkeypatch.setenv("BATCHLINE_ONNX_CACHE", str(tmp_path / "cache"))
    folders = {}
    for name in ("a", "b", "c"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "inference.pdmodel").write_bytes(name.encode())
        (folder / "inference.pdiparams").write_bytes(b"w" + name.encode())
        folders[name] = str(folder)
    engines = {"a": "onnxruntime", "b": "torch", "c": "openvino"}
    ops = {
        name: {
            "class": "tests.support.config_fakes:FakeModelOp",
            **({"input_ops": [prev]} if prev else {}),
            "local_service_conf": {"model_config": folders[name], "engine": engines[name]},
        }
        for name, prev in (("a", None), ("b", "a"), ("c", "b"))
    }
    config = tmp_path / "c.yml"
    config.write_text(yaml.safe_dump({"op": ops}))
    assert onnx_export.main([str(config)]) == 0
    assert sorted(converted) == [os.path.join(folders[n], "inference.pdmodel") for n in ("a", "b")]


def test_without_paddle2onnx_the_error_names_the_onnxruntime_extra(tmp_path, monkeypatch):
    from serving.runners import onnx_export

    monkeypatch.setattr(onnx_export, "converter_version", lambda: "missing")
    folder = tmp_path / "rec"
    folder.mkdir()
    (folder / "inference.pdmodel").write_bytes(b"p")
    (folder / "inference.pdiparams").write_bytes(b"w")
    with pytest.raises(RuntimeError, match=r"engine: onnxruntime run .*\.\[onnxruntime\]"):
        onnx_export.onnx_file(str(folder), {"BATCHLINE_ONNX_CACHE": str(tmp_path / "empty")})


def has_cuda_provider() -> bool:
    """Asked in a fresh interpreter: this tier's process imports no runtime."""
    code = "import onnxruntime as o; print('CUDAExecutionProvider' in o.get_available_providers())"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    return run.stdout.strip() == "True"


@pytest.mark.skipif(has_cuda_provider(), reason="onnxruntime has a CUDA provider: the GPU tests run for real")
def test_the_gpu_tests_are_skipped_here_not_passed():
    """Without a CUDA provider, tests/e2e/test_onnxruntime_gpu.py must report skips (with the reason), no pass."""
    run = run_gpu_test_file("test_onnxruntime_gpu.py")
    summary = run.stdout.strip().splitlines()[-1]
    assert run.returncode == 0 and re.fullmatch(r"3 skipped in [\d.]+s( \(.*\))?", summary), run.stdout[-2000:]
    assert run.stdout.count("SKIPPED [1] tests/e2e/test_onnxruntime_gpu.py:") == 3  # -rs: each with the reason
    assert run.stdout.count("onnxruntime has no CUDA provider") >= 2
