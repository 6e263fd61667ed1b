"""``engine: openvino`` (OpenVINO Runtime): config validation, the config ->
compile-properties translation and model-file choice, without OpenVINO."""

from __future__ import annotations

import pytest

from serving.config import ConfigError, LocalServiceConf, parse_config
from serving.config.engines import ENGINE_NAMES
from serving.paths import openvino_model_file
from serving.runners.cpu_plan import pins_cpus
from serving.runners.openvino_runtime import compile_properties

FAKE = "tests.support.config_fakes:FakeOp"
FAKE_MODEL = "tests.support.config_fakes:FakeModelOp"
# "'paddle', 'openvino' or ...": the engine table's names, as the schema's refusal lists them
ENGINE_CHOICES = " or ".join([", ".join(f"'{n}'" for n in ENGINE_NAMES[:-1]), f"'{ENGINE_NAMES[-1]}'"])
NO_BF16 = ["FP32", "INT8", "BIN", "EXPORT_IMPORT"]
WITH_BF16 = ["FP32", "BF16", "INT8", "BIN", "EXPORT_IMPORT"]


def parse_svc(svc: dict, source: str = "c.yml"):
    return parse_config({"op": {"a": {"class": FAKE, "local_service_conf": svc}}}, source=source)


@pytest.mark.parametrize(
    "svc, key, message",
    [
        ({"engine": "openvino", "device_type": 1}, "engine", "openvino is a CPU engine; device_type is 1"),
        ({"engine": "openvino", "use_openvino": True}, "use_openvino", "selects Paddle Inference's embedded"),
        ({"engine": "openvino", "use_mkldnn": True}, "use_mkldnn", "is a Paddle Inference (oneDNN) setting"),
        (
            {"engine": "openvino", "mkldnn_cache_capacity": 10},
            "mkldnn_cache_capacity",
            "is a Paddle Inference (oneDNN) setting",
        ),
        ({"engine": "openvino", "precision": "int8"}, "precision", "int8 is not available with engine: openvino"),
        ({"engine": "openvino", "precision": "fp16"}, "precision", "fp16 is not available with engine: openvino"),
        ({"engine": "tensorflow"}, "engine", f"must be one of {ENGINE_CHOICES}, got 'tensorflow'"),
        ({"conv_kernels": "jit"}, "conv_kernels", "is an OpenVINO Runtime setting: it needs engine: openvino"),
        ({"engine": "openvino", "conv_kernels": "brgemm"}, "conv_kernels", "must be one of 'auto' or 'jit'"),
    ],
)
def test_invalid_openvino_combinations_name_the_key(svc, key, message):
    with pytest.raises(ConfigError) as info:
        parse_svc(svc)
    assert str(info.value).startswith(f"c.yml: op.a.local_service_conf.{key}: {message}"), str(info.value)


@pytest.mark.parametrize("precision", ["fp32", "bf16", "BF16"])
def test_openvino_engine_takes_fp32_and_bf16(precision):
    svc = parse_svc({"engine": "openvino", "precision": precision}).op["a"].local_service_conf
    assert svc.engine == "openvino" and svc.precision == precision.lower()
    assert svc.device_label == "cpu+openvino-runtime"


def test_engine_defaults_to_paddle():
    assert LocalServiceConf().engine == "paddle"


def test_openvino_instances_overlap_so_batches_spread():
    assert LocalServiceConf(engine="openvino", instance_num=2).spreads_batches is True
    assert LocalServiceConf(engine="openvino", instance_num=1).spreads_batches is False
    assert LocalServiceConf(engine="openvino", instance_num=2, spread_batches=False).spreads_batches is False
    assert LocalServiceConf(instance_num=2).spreads_batches is False  # Paddle thread instances take turns


def test_only_openvino_processes_are_pinned():
    assert pins_cpus(LocalServiceConf(engine="openvino", instance_mode="process"))
    assert not pins_cpus(LocalServiceConf(engine="openvino", instance_mode="thread"))
    assert pins_cpus(LocalServiceConf(use_openvino=True, instance_mode="process"))
    assert not pins_cpus(LocalServiceConf(instance_mode="process"))


def test_compile_properties_give_each_instance_a_stream_of_thread_num_threads():
    plan = compile_properties(LocalServiceConf(engine="openvino", thread_num=2), 3, NO_BF16)
    assert plan.properties == {
        "NUM_STREAMS": 3,
        "INFERENCE_NUM_THREADS": 6,
        "INFERENCE_PRECISION_HINT": "f32",
        "ENABLE_HYPER_THREADING": False,
        "ENABLE_CPU_PINNING": False,
    }
    assert plan.precision == "fp32" and not plan.fell_back


def test_bf16_runs_bf16_only_where_the_cpu_has_it():
    conf = LocalServiceConf(engine="openvino", precision="bf16", thread_num=1)
    native = compile_properties(conf, 1, WITH_BF16)
    assert native.properties["INFERENCE_PRECISION_HINT"] == "bf16"
    assert native.precision == "bf16" and not native.fell_back
    fallback = compile_properties(conf, 1, NO_BF16)
    assert fallback.properties["INFERENCE_PRECISION_HINT"] == "f32"
    assert fallback.precision == "fp32" and fallback.fell_back


def test_fp32_never_runs_bf16_even_where_the_cpu_prefers_it():
    # OpenVINO's CPU plugin picks bf16 by default on such CPUs: fp32 must say f32 explicitly
    plan = compile_properties(LocalServiceConf(engine="openvino"), 1, WITH_BF16)
    assert plan.properties["INFERENCE_PRECISION_HINT"] == "f32"


def test_compile_properties_refuse_zero_instances():
    with pytest.raises(ValueError, match="instance count"):
        compile_properties(LocalServiceConf(engine="openvino"), 0, NO_BF16)


def test_openvino_model_file_prefers_an_ir_then_onnx_then_the_paddle_program(tmp_path):
    for name in ("inference.pdmodel", "inference.onnx", "inference.xml"):
        (tmp_path / name).write_bytes(b"x")
        assert openvino_model_file(str(tmp_path)) == str(tmp_path / name)


def test_a_pir_program_alone_is_named_unreadable_with_the_way_out(tmp_path):
    (tmp_path / "inference.json").write_text("{}")
    (tmp_path / "inference.pdiparams").write_bytes(b"x")
    with pytest.raises(FileNotFoundError, match="OpenVINO cannot read.*paddle2onnx"):
        openvino_model_file(str(tmp_path))


def test_model_dir_is_checked_for_the_files_its_engine_reads(tmp_path):
    model = tmp_path / "m"
    model.mkdir()
    (model / "inference.onnx").write_bytes(b"x")
    fake_model = FAKE_MODEL
    ok = parse_config(
        {"op": {"a": {"class": fake_model, "local_service_conf": {"engine": "openvino", "model_config": "m"}}}},
        source=str(tmp_path / "c.yml"),
    )
    assert ok.op["a"].local_service_conf.model_config == str(model)
    with pytest.raises(ConfigError, match=r"op\.a\.local_service_conf\.model_config: .* has no inference\.json"):
        parse_config(
            {"op": {"a": {"class": fake_model, "local_service_conf": {"model_config": "m"}}}},
            source=str(tmp_path / "c.yml"),
        )


def test_openvino_runs_any_batch_size_unless_told_otherwise():
    assert LocalServiceConf(engine="openvino", max_batch_size=8).predictor_batch_sizes == []
    assert LocalServiceConf(engine="openvino", max_batch_size=8, run_batch_sizes=[4]).predictor_batch_sizes == [1, 4]
    assert LocalServiceConf(max_batch_size=8).predictor_batch_sizes == [1, 2, 4, 8]
