"""Reading a Paddle Serving script (serving/paddle_serving/service_file.py) and turning its
config.yml into batchline's (config_bridge.py): the graph walked back from the response op,
the errors a script can make, and each op's worker model, keywords and engine."""

import logging
import sys
import textwrap

import pytest

from serving.config import parse_config
from serving.paddle_serving import config_bridge
from serving.paddle_serving.config_bridge import FIRST_STAGE, STAGE, service_config, service_document
from serving.paddle_serving.service_file import ServiceFileError, read_service

pytestmark = pytest.mark.unit

HEAD = "from paddle_serving_server.web_service import WebService, Op\n"
GRAPH = """
class A(Op):
    pass

class Join(Op):
    pass

class S(WebService):
    def get_pipeline_response(self, read_op):
        a = A(name="a", input_ops=[read_op], concurrency={a_workers})
        b = A(name="b", input_ops=[read_op])
        return Join(name="join", input_ops=[a, b], batch_size=4)

s = S(name="svc")
s.prepare_pipeline_config("config.yml")
s.run_service()
print("never reached")
"""


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # read_service enters the script's folder
    monkeypatch.setattr(sys, "path", list(sys.path))
    return tmp_path


def _script(folder, body, config="op: {}\n"):
    (folder / "config.yml").write_text(textwrap.dedent(config))
    (folder / "web_service.py").write_text(HEAD + body)
    return str(folder / "web_service.py")


def test_the_graph_is_walked_back_from_the_response_op(folder, capsys):
    service = read_service(_script(folder, GRAPH.format(a_workers=3)))
    assert service.name == "svc" and list(service.ops) == ["a", "b", "join"]
    assert service.inputs == {"a": ["@DAGExecutor"], "b": ["@DAGExecutor"], "join": ["a", "b"]}
    assert service.last_op == "join" and service.config_file == str(folder / "config.yml")
    assert "never reached" not in capsys.readouterr().out


def test_each_op_becomes_an_engine_op_with_paddle_servings_worker_model(folder):
    config = """
        dag: {is_thread_op: false}
        op:
          a: {concurrency: 1, local_service_conf: {thread_num: 2}}
          join: {auto_batching_timeout: 300}
          unused: {concurrency: 9}
    """
    service = read_service(_script(folder, GRAPH.format(a_workers=3), config))
    data = service_config(service, service.config_file)
    ops = data["op"]
    assert set(ops) == {"a", "b", "join"}  # an entry no op uses is dropped
    assert ops["a"]["class"] == FIRST_STAGE and ops["a"]["input_ops"] == []
    assert ops["join"]["class"] == STAGE and ops["join"]["input_ops"] == ["a", "b"]
    # the keyword wins over the file, as in Paddle Serving; one worker process per concurrency
    assert ops["a"]["concurrency"] == 3 and ops["a"]["local_service_conf"]["instance_num"] == 3
    assert ops["a"]["local_service_conf"]["instance_mode"] == "process"
    assert ops["join"]["batch_size"] == 4 and ops["join"]["auto_batching_timeout"] == 300
    assert ops["join"]["local_service_conf"]["batching_policy"] == "fixed"  # Paddle Serving's: fill or time out
    assert len(ops["join"]["params"].pop("script_digest")) == 24
    assert ops["join"]["params"] == {
        "script": service.script,
        "script_args": [],
        "op": "join",
        "thread_op": False,
        "fetch_list": None,
        "engine_fallback": False,
    }
    assert data["name"] == "svc"


def test_a_model_on_cpu_runs_on_openvino_unless_the_file_names_an_engine(folder, monkeypatch):
    monkeypatch.setattr(config_bridge, "paddle_sees_a_gpu", lambda: True)
    (folder / "m").mkdir()
    config = """
        op:
          a: {local_service_conf: {model_config: m, device_type: 0, use_mkldnn: true, fetch_list: [y]}}
          b: {local_service_conf: {model_config: m, engine: paddle, use_mkldnn: true}}
          join: {local_service_conf: {model_config: m, device_type: 1, devices: "0"}}
    """
    service = read_service(_script(folder, GRAPH.format(a_workers=1), config))
    ops = service_config(service, service.config_file)["op"]
    assert ops["a"]["local_service_conf"]["engine"] == "openvino"
    assert "use_mkldnn" not in ops["a"]["local_service_conf"]
    assert ops["a"]["params"]["fetch_list"] == ["y"]
    # chosen, not configured: a model OpenVINO cannot read runs on Paddle Inference (stage._loaded)
    assert ops["a"]["params"]["engine_fallback"] and not ops["b"]["params"]["engine_fallback"]
    assert ops["b"]["local_service_conf"]["engine"] == "paddle" and ops["b"]["local_service_conf"]["use_mkldnn"]
    assert "engine" not in ops["join"]["local_service_conf"]  # a GPU: Paddle Inference, as configured
    assert ops["a"]["local_service_conf"]["instance_mode"] == "thread"  # Paddle Serving's default


def _service(folder, config):
    (folder / "m").mkdir(exist_ok=True)
    service = read_service(_script(folder, GRAPH.format(a_workers=1), config))
    return service, service.config_file


def _local_services(folder, config):
    return {name: op["local_service_conf"] for name, op in service_config(*_service(folder, config))["op"].items()}


GPU_CONFIG = """
    op:
      a: {local_service_conf: {model_config: m, devices: "0", precision: fp16}}
      b: {local_service_conf: {model_config: m, device_type: 1, devices: "0,1"}}
      join: {local_service_conf: {model_config: m, device_type: 1, devices: "1", engine: torch}}
"""


def test_a_gpu_op_runs_on_a_gpu_paddle_sees_and_devices_decide_an_unset_device_type(folder, monkeypatch):
    monkeypatch.setattr(config_bridge, "paddle_sees_a_gpu", lambda: True)
    svc = _local_services(folder, GPU_CONFIG)
    assert (svc["a"]["device_type"], svc["a"]["devices"], svc["a"]["precision"]) == (1, "0", "fp16")
    assert svc["b"]["device_type"] == 1 and "engine" not in svc["a"] and "engine" not in svc["b"]


def test_where_paddle_sees_no_gpu_a_gpu_op_runs_on_the_cpu_as_in_paddle_serving(folder, monkeypatch, caplog):
    monkeypatch.setattr(config_bridge, "paddle_sees_a_gpu", lambda: False)
    with caplog.at_level(logging.WARNING, logger=config_bridge.__name__):
        svc = _local_services(folder, GPU_CONFIG)
    for name in ("a", "b"):  # on the CPU: OpenVINO Runtime, fp32 (Paddle Serving's CPU ignores fp16)
        assert (svc[name]["device_type"], svc[name]["devices"], svc[name]["engine"]) == (0, "", "openvino")
    assert svc["a"]["precision"] == "fp32"
    assert svc["join"]["device_type"] == 1  # another engine named: left to it
    assert sum("asks for a GPU" in r.getMessage() for r in caplog.records) == 2


def test_keys_batchline_does_not_know_are_dropped_with_a_warning_as_paddle_serving_ignores_them(folder, caplog):
    config = """
        max_body_size: 1024
        dag: {is_thread_op: true, tracer: {interval_s: -1}, channel_sise: 8}
        op:
          a: {concurency: 2, timeout: 100, local_service_conf: {model_config: m, use_gpu: true, use_calib: false}}
          b: {local_service_conf: {model_config: m, thread_num: 3}}
    """
    with caplog.at_level(logging.WARNING, logger=config_bridge.__name__):
        data = service_config(*_service(folder, config))
    (warning,) = [r.getMessage() for r in caplog.records if "does not know" in r.getMessage()]
    for key in ("max_body_size", "dag.channel_sise (did you mean 'channel_size'?)", "op.a.concurency", "use_gpu"):
        assert key in warning
    assert "max_body_size" not in data and "channel_sise" not in data["dag"] and "concurency" not in data["op"]["a"]
    assert data["op"]["a"]["timeout"] == 100 and data["op"]["b"]["local_service_conf"]["thread_num"] == 3
    assert data["op"]["a"]["local_service_conf"]["use_calib"] is False  # Paddle Serving's: folded by the loader
    (folder / "m" / "inference.pdmodel").write_bytes(b"")  # the loader checks a model file is there
    document = service_document(*_service(folder, config))
    assert parse_config(document.data, source=document.source).op["a"].timeout_ms == 100  # the rest as written


TRT_SCRIPT = """
class A(Op):
    def set_dynamic_shape_info(self):
        self.dynamic_shape_info = {
            "min_input_shape": {"x": [1, 3, 32, 32], "t": [1, 1]},
            "opt_input_shape": {"x": [1, 3, 640, 640], "t": [1, 8]},
            "max_input_shape": {"x": (4, 3, 1536, 1536)},
        }

class S(WebService):
    def get_pipeline_response(self, read_op):
        a = A(name="a", input_ops=[read_op])
        return A(name="b", input_ops=[a])

s = S(name="svc")
s.prepare_pipeline_config("config.yml")
s.run_service()
"""


def test_set_dynamic_shape_info_is_the_ops_tensorrt_dynamic_shape_on_tensorrt(folder, monkeypatch):
    monkeypatch.setattr(config_bridge, "paddle_sees_a_gpu", lambda: True)
    (folder / "m").mkdir()
    config = """
        op:
          a: {local_service_conf: {model_config: m, device_type: 2, devices: "0", min_subgraph_size: 5}}
          b: {local_service_conf: {model_config: m, device_type: 1, devices: "0"}}
    """
    service = read_service(_script(folder, TRT_SCRIPT, config))
    svc = {name: op["local_service_conf"] for name, op in service_config(service, service.config_file)["op"].items()}
    assert svc["a"]["tensorrt"] == {
        "min_subgraph_size": 5,
        "dynamic_shape": {"x": {"min": [1, 3, 32, 32], "opt": [1, 3, 640, 640], "max": [4, 3, 1536, 1536]}},
    }
    assert "tensorrt" not in svc["b"]  # no TensorRT: Paddle Serving does not use them either
    for name in ("inference.pdmodel", "inference.pdiparams"):  # the loader checks Paddle's model files are there
        (folder / "m" / name).write_bytes(b"")
    document = service_document(service, service.config_file)
    trt = parse_config(document.data, source=document.source).op["a"].local_service_conf.tensorrt
    assert trt is not None and trt.dynamic_shape["x"].max == [4, 3, 1536, 1536] and trt.min_subgraph_size == 5


def test_int8_on_the_cpu_runs_as_fp32_as_in_paddle_serving(folder):
    svc = _local_services(folder, "op:\n  a: {local_service_conf: {model_config: m, precision: INT8}}\n")
    assert (svc["a"]["precision"], svc["a"]["engine"]) == ("fp32", "openvino")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("x = 1\n", "never called run_service()"),
        ("raise RuntimeError('broken')\n", "RuntimeError: broken"),
        (
            "class S(WebService):\n    def get_pipeline_response(self, read_op):\n        return None\n"
            "S('s').prepare_pipeline_config('config.yml')\n",
            "is not Op type",
        ),
        (
            "class S(WebService):\n    def get_pipeline_response(self, read_op):\n"
            "        return Op(name='x', input_ops=[Op(name='x', input_ops=[read_op])])\n"
            "s = S('s'); s.prepare_pipeline_config('config.yml'); s.run_service()\n",
            "two ops are named 'x'",
        ),
        ("import sys\nsys.exit(3)\n", "exited (3)"),
    ],
)
def test_a_script_that_describes_no_service_is_refused_with_why(folder, body, message):
    with pytest.raises(ServiceFileError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_service(_script(folder, body))


def test_a_remote_predictor_is_refused_by_name(folder):
    config = """
        op:
          a: {server_endpoints: ["127.0.0.1:9393"], client_type: brpc}
    """
    service = read_service(_script(folder, GRAPH.format(a_workers=1), config))
    with pytest.raises(ServiceFileError, match=r"op\.a\.server_endpoints"):
        service_config(service, service.config_file)
