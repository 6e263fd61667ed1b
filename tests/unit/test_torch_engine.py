"""``engine: torch`` without a model: its config checks, its per-instance plan
(device, autocast), the refusal of a GPU torch cannot see, and the ONNX cache
(serving.runners.onnx_export) on fake model folders."""

from __future__ import annotations

import os
import re

import pytest
import torch
import yaml

from serving.config import ConfigError, parse_config
from serving.config.schema import LocalServiceConf
from serving.runners import onnx_export
from serving.runners.torch_runtime import TorchPlan, require_device, torch_plan
from tests.support.gpu_tests import run_gpu_test_file

FAKE = "tests.support.config_fakes:FakeOp"
FAKE_MODEL = "tests.support.config_fakes:FakeModelOp"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def parse_svc(svc: dict):
    return parse_config(
        {"op": {"a": {"class": FAKE, "local_service_conf": {"engine": "torch", **svc}}}}, source="c.yml"
    )


@pytest.mark.parametrize(
    ("svc", "key"),
    [
        ({"device_type": 2}, "device_type"),
        ({"precision": "fp16"}, "precision"),
        ({"precision": "int8", "device_type": 1}, "precision"),
        ({"use_mkldnn": True}, "use_mkldnn"),
        ({"use_openvino": True}, "use_openvino"),
        ({"conv_kernels": "jit"}, "conv_kernels"),
        ({"cuda_graphs": True}, "cuda_graphs"),
        ({"torch_compile_budget_s": 60}, "torch_compile_budget_s"),  # without torch_compile
        ({"torch_compile": True, "torch_compile_budget_s": 0}, "torch_compile_budget_s"),
    ],
)
def test_what_torch_cannot_honour_is_refused_naming_the_key(svc, key):
    with pytest.raises(ConfigError, match=f"op.a.local_service_conf.{key}"):
        parse_svc(svc)


@pytest.mark.parametrize(
    "svc",
    [
        {},
        {"precision": "bf16"},
        {"device_type": 1, "devices": "0,1", "precision": "fp16"},
        {"device_type": 1, "precision": "bf16"},
        {"device_type": 1, "precision": "fp16", "cuda_graphs": True},
        {"torch_compile": True},
        {"torch_compile": True, "torch_compile_budget_s": 120},
        {"device_type": 1, "precision": "fp16", "cuda_graphs": True, "torch_compile": True},
    ],
)
def test_what_torch_runs_is_accepted(svc):
    conf = parse_svc(svc).op["a"].local_service_conf
    assert conf.engine == "torch"
    where = "cpu" if conf.device_type == 0 else "gpu" + (f":{conf.devices}" if conf.devices else "")
    assert conf.device_label == f"{where}+torch"


def test_the_plan_places_instances_and_picks_the_weights_type():
    cpu = LocalServiceConf(engine="torch")
    assert torch_plan(cpu, None) == TorchPlan("cpu", None, "fp32")
    assert torch_plan(cpu, None).label == "cpu:torch"
    gpu = LocalServiceConf(engine="torch", device_type=1, devices="2", precision="fp16")
    plan = torch_plan(gpu, 2)
    assert plan == TorchPlan("cuda:2", torch.float16, "fp16") and plan.on_gpu and plan.label == "gpu:2:torch"
    bf16 = LocalServiceConf(engine="torch", device_type=1, precision="bf16")
    assert torch_plan(bf16, 0).compute_dtype == torch.bfloat16
    graphs = LocalServiceConf(engine="torch", device_type=1, cuda_graphs=True)
    assert torch_plan(graphs, 0).cuda_graphs
    compiled = LocalServiceConf(engine="torch", torch_compile=True)
    assert torch_plan(compiled, None).torch_compile and not torch_plan(compiled, None).cuda_graphs


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is visible: the refusal is for machines without one")
def test_a_gpu_torch_cannot_see_is_refused_with_the_way_out():
    with pytest.raises(RuntimeError, match="sees 0 CUDA device.*use device_type 0"):
        require_device(TorchPlan("cuda:0", None, "fp32"))
    require_device(TorchPlan("cpu", None, "fp32"))  # the CPU always is there


# ---- the ONNX cache ---------------------------------------------------------------------------


def paddle_folder(path, program=b"program", params=b"weights"):
    path.mkdir(parents=True, exist_ok=True)
    (path / "inference.pdmodel").write_bytes(program)
    (path / "inference.pdiparams").write_bytes(params)
    return str(path)


def test_the_cache_folder_comes_from_the_environment():
    assert onnx_export.cache_dir({"BATCHLINE_ONNX_CACHE": "/x/cache"}) == "/x/cache"
    assert onnx_export.cache_dir({"XDG_CACHE_HOME": "/x"}) == "/x/batchline/onnx"
    assert onnx_export.cache_dir({}).endswith(os.path.join(".cache", "batchline", "onnx"))


def test_a_model_folders_own_onnx_is_read_as_it_is(tmp_path):
    folder = tmp_path / "m"
    paddle_folder(folder)
    (folder / "inference.onnx").write_bytes(b"onnx")
    assert onnx_export.onnx_file(str(folder), {"BATCHLINE_ONNX_CACHE": str(tmp_path / "c")}) == str(
        folder / "inference.onnx"
    )
    assert not (tmp_path / "c").exists()


def test_a_paddle_model_is_converted_once_per_content(tmp_path, monkeypatch):
    converted = []

    def fake_convert(files, path):
        converted.append(files)
        with open(files[1], "rb") as weights, open(path, "wb") as f:
            f.write(b"onnx of " + weights.read())

    monkeypatch.setattr(onnx_export, "converter_version", lambda: "1.3.1")
    monkeypatch.setattr(onnx_export, "convert", fake_convert)
    env = {"BATCHLINE_ONNX_CACHE": str(tmp_path / "cache")}
    folder = paddle_folder(tmp_path / "det")
    first = onnx_export.onnx_file(folder, env)
    assert onnx_export.onnx_file(folder, env) == first and len(converted) == 1  # cached
    assert os.path.basename(first).startswith("det-") and first.startswith(env["BATCHLINE_ONNX_CACHE"])
    paddle_folder(tmp_path / "det", params=b"retrained")
    second = onnx_export.onnx_file(folder, env)
    assert second != first and len(converted) == 2  # new weights, new conversion
    monkeypatch.setattr(onnx_export, "converter_version", lambda: "1.3.2")
    third = onnx_export.onnx_file(folder, env)
    assert third not in (first, second) and len(converted) == 3  # a new converter too
    # carried to a machine without paddle2onnx: a conversion of these files by any version
    monkeypatch.setattr(onnx_export, "converter_version", lambda: "missing")
    assert onnx_export.onnx_file(folder, env) in (second, third)


def test_without_paddle2onnx_the_error_says_every_way_out(tmp_path, monkeypatch):
    monkeypatch.setattr(onnx_export, "converter_version", lambda: "missing")
    folder = paddle_folder(tmp_path / "rec")
    with pytest.raises(
        RuntimeError, match=r"paddle2onnx.*\.\[torch\].*BATCHLINE_ONNX_CACHE.*onnx_export.*inference.onnx"
    ):
        onnx_export.onnx_file(folder, {"BATCHLINE_ONNX_CACHE": str(tmp_path / "empty")})


def test_a_pir_only_model_is_refused_with_the_export_command(tmp_path):
    folder = tmp_path / "ernie"
    folder.mkdir()
    (folder / "inference.json").write_text("{}")
    (folder / "inference.pdiparams").write_bytes(b"w")
    with pytest.raises(FileNotFoundError, match="PIR.*paddle2onnx 2.x"):
        onnx_export.onnx_file(str(folder), {"BATCHLINE_ONNX_CACHE": str(tmp_path / "c")})
    with pytest.raises(FileNotFoundError, match="not found"):
        onnx_export.onnx_file(str(tmp_path / "nowhere"), {})


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is visible: the GPU tests run for real")
def test_the_gpu_tests_are_skipped_here_not_passed():
    """Without a GPU, tests/e2e/test_torch_cuda.py must report skips (with the reason), no pass."""
    run = run_gpu_test_file("test_torch_cuda.py")
    summary = run.stdout.strip().splitlines()[-1]
    assert run.returncode == 0 and re.fullmatch(r"8 skipped in [\d.]+s( \(.*\))?", summary), run.stdout[-2000:]
    # -rs: each with the reason (a parametrized test's cases on one line)
    assert run.stdout.count("SKIPPED [1] tests/e2e/test_torch_cuda.py:") == 4
    assert run.stdout.count("SKIPPED [2] tests/e2e/test_torch_cuda.py:") == 2
    assert run.stdout.count("torch sees no CUDA GPU") == 6


def test_the_cache_command_converts_the_torch_ops_of_the_configs_only(tmp_path, monkeypatch, capsys):
    converted = []
    monkeypatch.setattr(onnx_export, "converter_version", lambda: "1.3.1")
    monkeypatch.setattr(onnx_export, "convert", lambda files, path: converted.append(files[0]))
    monkeypatch.setenv("BATCHLINE_ONNX_CACHE", str(tmp_path / "cache"))
    on_torch, on_openvino = paddle_folder(tmp_path / "a"), paddle_folder(tmp_path / "b")
    ops = {
        "a": {"class": FAKE_MODEL, "local_service_conf": {"model_config": on_torch, "engine": "torch"}},
        "b": {
            "class": FAKE_MODEL,
            "input_ops": ["a"],
            "local_service_conf": {"model_config": on_openvino, "engine": "openvino"},
        },
    }
    config = tmp_path / "c.yml"
    config.write_text(yaml.safe_dump({"op": ops}))
    assert onnx_export.main([str(config)]) == 0
    assert converted == [os.path.join(on_torch, "inference.pdmodel")]
    ops["a"]["local_service_conf"]["engine"] = "openvino"
    config.write_text(yaml.safe_dump({"op": ops}))
    assert onnx_export.main([str(config)]) == 1  # nothing to convert is said, not silently done
