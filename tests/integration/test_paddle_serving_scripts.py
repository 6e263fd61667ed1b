"""``batchline serve web_service.py`` on a Paddle Serving script (tests/data/paddle_serving/scripts/
batched): thread and process ops, batching across requests, each failure's err_no and HTTP
status, the same answers over gRPC with Paddle Serving's PipelineClient, and the limits both
doors (HTTP and gRPC) hold, checked before the user's code runs."""

import base64
import json
import os
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import requests
import yaml

from serving.paddle_serving.service_file import SHIM_DIR
from tests.support.fuzz.malformed import png_with_header
from tests.support.server_process import ROOT, ServerProcess
from tuning.server import free_port

pytestmark = pytest.mark.slow  # servers with predictor processes

SCRIPT_DIR = os.path.join(ROOT, "tests/data/paddle_serving/scripts/batched")
MAX_INPUTS = 300  # a request's values: 4 x this + 256 (a tensor's elements are values, as a JSON body's numbers)


def _serve(tmp_path, *, thread_op, batch_size=1, concurrency=1, max_body_size=None, max_inputs=None, env=None):
    folder = tmp_path / ("thread" if thread_op else "process")
    shutil.copytree(SCRIPT_DIR, folder)
    conf = yaml.safe_load((folder / "config.yml").read_text())
    conf["dag"]["is_thread_op"] = thread_op
    conf["rpc_port"] = free_port()
    conf["op"]["upper"].update(concurrency=concurrency, batch_size=batch_size, auto_batching_timeout=500)
    if max_body_size:
        conf["op"]["upper"]["local_service_conf"] = {"max_body_size": max_body_size}
    if max_inputs:
        conf["max_inputs_per_request"] = max_inputs
    (folder / "config.yml").write_text(yaml.safe_dump(conf))
    return ServerProcess(str(folder / "web_service.py"), ready_timeout=120, env=env), conf["rpc_port"]


def _post(server, body, path="/echo/prediction"):
    r = requests.post(server.url + path, data=json.dumps(body), timeout=60)
    return r.status_code, r.json()


def _answer(doc):
    return dict(zip(doc["key"], doc["value"]))


@pytest.fixture(scope="module")
def thread_server(tmp_path_factory):
    server, rpc_port = _serve(
        tmp_path_factory.mktemp("ps"), thread_op=True, batch_size=4, max_body_size=65536, max_inputs=MAX_INPUTS
    )
    yield server, rpc_port
    server.stop()


def test_a_request_runs_through_both_ops(thread_server):
    server, _ = thread_server
    status, doc = _post(server, {"key": ["text"], "value": ["hello"]})
    assert status == 200 and doc["err_no"] == 0 and doc["err_msg"] == "" and doc["tensors"] == []
    assert _answer(doc)["text"] == "HELLO!"
    assert _answer(doc)["pid"] == str(server.proc.pid)  # a thread op runs in the server's process


def test_requests_are_batched_into_one_call_of_the_hooks(thread_server):
    server, _ = thread_server
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda i: _post(server, {"key": ["text"], "value": [f"t{i}"]}), range(8)))
    assert [_answer(doc)["text"] for _, doc in answers] == [f"T{i}!" for i in range(8)]
    assert max(int(_answer(doc)["batch"]) for _, doc in answers) > 1  # batch_size 4: requests shared a batch


@pytest.mark.parametrize(
    ("fail", "status", "err_no", "err_msg"),
    [
        ("pre", 400, 61, "refused in preprocess"),
        ("post", 400, 62, "refused in postprocess"),
        (
            "raise",
            500,
            10000,
            "Log_id: 7  Raise_msg: cannot read it  ClassName: Op._run_preprocess.<locals>.preprocess_help  "
            "FunctionName: preprocess_help",
        ),
    ],
)
def test_each_failure_answers_as_paddle_serving_with_a_real_status(thread_server, fail, status, err_no, err_msg):
    server, _ = thread_server
    got, doc = _post(server, {"key": ["text", "fail"], "value": ["x", fail], "logid": 7})
    assert (got, doc["err_no"], doc["err_msg"], doc["key"], doc["value"]) == (status, err_no, err_msg, [], [])
    ok, doc = _post(server, {"key": ["text"], "value": ["after"]})  # the op still serves
    assert ok == 200 and _answer(doc)["text"] == "AFTER!"


def pipeline_client(rpc_port: int):
    """Paddle Serving's own PipelineClient (from the shim), connected to the server's gRPC door."""
    sys.path.insert(0, SHIM_DIR)
    try:
        from paddle_serving_server.pipeline import PipelineClient
    finally:
        sys.path.remove(SHIM_DIR)
    client = PipelineClient()
    client.connect([f"127.0.0.1:{rpc_port}"])
    return client


def test_paddle_servings_pipeline_client_gets_the_same_answers(thread_server):
    _, rpc_port = thread_server
    client = pipeline_client(rpc_port)
    resp = client.predict(feed_dict={"text": "grpc"}, fetch=["text"])
    assert resp.err_no == 0 and dict(zip(resp.key, resp.value))["text"] == "GRPC!"
    resp = client.predict(feed_dict={"text": "x", "fail": "pre"})
    assert (resp.err_no, resp.err_msg) == (61, "refused in preprocess")


def test_every_doors_limits_hold_before_the_users_code(thread_server):
    server, _ = thread_server
    status, doc = _post(server, {"key": ["text"], "value": ["x" * 70000]})
    assert status == 413  # max_body_size 64 KiB
    bomb = base64.b64encode(png_with_header(20000, 20000, bitdepth=8, color=2, rows=1)).decode()
    status, doc = _post(server, {"key": ["image"], "value": [bomb]})
    assert status == 413 and "too large" in doc["err_msg"]  # from the header: preprocess never saw it
    three = base64.b64encode(png_with_header(6000, 6000, bitdepth=8, color=2, rows=1)).decode()
    status, doc = _post(server, {"key": ["image", "img", "image"], "value": [three] * 3})
    assert status == 413 and "in all (limit per request)" in doc["err_msg"]  # each under the image limit
    small = base64.b64encode(png_with_header(8, 8, bitdepth=8, color=2, rows=None)).decode()
    status, doc = _post(server, {"key": ["image"], "value": [small]})
    assert status == 200 and int(_answer(doc)["size"]) > 0
    status, doc = _post(server, {"inputs": [{"text": "x"}]}, path="/echo/predict")
    assert status == 400 and "runs a Paddle Serving web_service.py" in json.dumps(doc)
    status, doc = _post(server, {"key": "text"})
    assert status == 400


def test_the_grpc_door_holds_the_same_limits_before_the_users_code(thread_server):
    import grpc

    _, rpc_port = thread_server
    client = pipeline_client(rpc_port)
    with pytest.raises(grpc.RpcError) as refused:
        client.predict(feed_dict={"text": "x" * 70000})  # max_body_size 64 KiB, refused before it is read
    assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    bomb = base64.b64encode(png_with_header(20000, 20000, bitdepth=8, color=2, rows=1)).decode()
    resp = client.predict(feed_dict={"image": bomb})
    assert resp.err_no == 413 and "too large" in resp.err_msg  # from the header: preprocess never saw it
    resp = client.predict(feed_dict={f"k{i}": "x" for i in range(5000)})
    assert resp.err_no == 413 and "values" in resp.err_msg  # counted before the message is built
    resp = client.predict(feed_dict={"text": "after"})
    assert resp.err_no == 0 and dict(zip(resp.key, resp.value))["text"] == "AFTER!"


def test_tensors_reach_the_users_code_on_both_doors_within_the_requests_values(thread_server):
    server, rpc_port = thread_server
    client = pipeline_client(rpc_port)
    fits = np.arange(1200, dtype="float32").reshape(2, 600)  # under 4 x 300 + 256 values
    for use_tensor_bytes in (False, True):
        resp = client.predict(feed_dict={"x": fits}, pack_tensor_format=True, use_tensor_bytes=use_tensor_bytes)
        assert resp.err_no == 0 and dict(zip(resp.key, resp.value))["text"] == "float32 (2, 600) 719400!"
    tensor = {"name": "x", "elem_type": 2, "shape": [2, 2], "int_data": [1, 2, 3, 4]}
    status, doc = _post(server, {"tensors": [tensor]})
    assert status == 200 and _answer(doc)["text"] == "int32 (2, 2) 10!"
    resp = client.predict(feed_dict={"x": np.zeros(2000, "float32")}, pack_tensor_format=True)
    assert resp.err_no == 413 and "values" in resp.err_msg  # counted on the wire, never parsed
    status, doc = _post(server, {"tensors": [dict(tensor, shape=[2000], int_data=[0] * 2000)]})
    assert status == 413
    status, doc = _post(server, {"tensors": [dict(tensor, shape=[3])]})  # 4 elements do not make shape [3]
    assert status == 400 and doc["err_no"] == 8000 and "cannot reshape" in doc["err_msg"]


def test_the_open_inference_protocol_reaches_a_script_over_http_and_grpc(thread_server):
    """tritonclient, as a KServe v2 user has it: a BYTES input of one element is a key/value string, a
    numeric one a numpy array (as from pack_tensor_format=True); each answer key is a BYTES output."""
    import tritonclient.grpc as triton_grpc
    import tritonclient.http as triton_http
    from tritonclient.utils import InferenceServerException

    server, rpc_port = thread_server
    for triton, url in ((triton_http, server.url.removeprefix("http://")), (triton_grpc, f"127.0.0.1:{rpc_port}")):
        client = triton.InferenceServerClient(url)
        text = triton.InferInput("text", [1], "BYTES")
        text.set_data_from_numpy(np.array([b"over v2"], dtype=object))
        answer = client.infer("echo", [text])
        assert answer.as_numpy("text").tolist() == [b"OVER V2!"] and answer.as_numpy("batch") is not None
        x = triton.InferInput("x", [2, 2], "FP32")
        x.set_data_from_numpy(np.array([[1, 2], [3, 4.5]], dtype=np.float32))
        answer = client.infer("echo", [x], outputs=[triton.InferRequestedOutput("text")])
        assert answer.as_numpy("text").tolist() == [b"float32 (2, 2) 10.5!"] and answer.as_numpy("pid") is None
        fail = triton.InferInput("fail", [1], "BYTES")
        fail.set_data_from_numpy(np.array([b"pre"], dtype=object))
        with pytest.raises(InferenceServerException, match="err_no 61: refused in preprocess"):
            client.infer("echo", [text, fail])
        big = triton.InferInput("x", [2000], "FP32")
        big.set_data_from_numpy(np.zeros(2000, dtype=np.float32))
        with pytest.raises(InferenceServerException, match="values"):  # over 4 x 300 + 256: before it is read
            client.infer("echo", [big])
        metadata = client.get_model_metadata("echo")
        assert (metadata["inputs"], metadata["outputs"]) == ([], []) if triton is triton_http else not metadata.inputs


ARGV_SCRIPT = """
import argparse
import os

from paddle_serving_server.web_service import Op, WebService

parser = argparse.ArgumentParser()
parser.add_argument("-c", "--config", required=True)
parser.add_argument("--greeting", default="hello")
ARGS = parser.parse_args()  # as PaddleOCR's ArgsParser and PaddleDetection's --model_dir do


class GreetOp(Op):
    def preprocess(self, input_dicts, data_id, log_id):
        ((_, d),) = input_dicts.items()
        return {"text": ARGS.greeting + " " + d["text"], "pid": str(os.getpid())}, False, None, ""


class Service(WebService):
    def get_pipeline_response(self, read_op):
        return GreetOp(name="greet", input_ops=[read_op])


service = Service(name="greet")
service.prepare_pipeline_config(ARGS.config)
service.run_service()
"""


def test_a_script_gets_the_arguments_after_it_in_every_process(tmp_path):
    """``batchline serve web_service.py -c my.yml --greeting hi``: the script parses its own command line,
    in the server's process and in each op process; batchline's options after it stay batchline's."""
    (tmp_path / "web_service.py").write_text(ARGV_SCRIPT)
    conf = {"rpc_port": free_port(), "dag": {"is_thread_op": False}, "op": {"greet": {"concurrency": 1}}}
    (tmp_path / "my.yml").write_text(yaml.safe_dump(conf))
    server = ServerProcess(str(tmp_path / "web_service.py"), extra_args=("-c", "my.yml", "--greeting", "hi"))
    try:
        status, doc = _post(server, {"key": ["text"], "value": ["there"]}, path="/greet/prediction")
        assert status == 200 and _answer(doc)["text"] == "hi there"
        assert _answer(doc)["pid"] != str(server.proc.pid)  # parsed again in the op's own process
    finally:
        server.stop()


def test_process_ops_run_in_processes_of_their_own(tmp_path):
    server, _ = _serve(tmp_path, thread_op=False, concurrency=2)
    try:
        with ThreadPoolExecutor(6) as pool:
            answers = list(pool.map(lambda i: _post(server, {"key": ["text"], "value": [f"p{i}"]}), range(6)))
        assert [_answer(doc)["text"] for _, doc in answers] == [f"P{i}!" for i in range(6)]
        pids = {_answer(doc)["pid"] for _, doc in answers}
        assert str(server.proc.pid) not in pids
        status, doc = _post(server, {"key": ["text", "fail"], "value": ["x", "raise"]})
        assert status == 500 and doc["err_no"] == 10000
    finally:
        server.stop()


def test_a_reload_reads_the_script_again(tmp_path):
    server, _ = _serve(tmp_path, thread_op=True, env={"BATCHLINE_ADMIN_TOKEN": "admin-secret"})
    try:
        script = tmp_path / "thread" / "web_service.py"
        script.write_text(script.read_text().replace('out["text"] + "!"', 'out["text"] + "?"'))
        r = requests.post(server.url + "/admin/reload", headers={"Authorization": "Bearer admin-secret"}, timeout=120)
        assert r.status_code == 200, r.text
        status, doc = _post(server, {"key": ["text"], "value": ["again"]})
        assert status == 200 and _answer(doc)["text"] == "AGAIN?"
    finally:
        server.stop()
