"""Paddle Serving users' files served by batchline answer as the real Paddle Serving 0.9 does
(issue 36). Each case of tests/data/paddle_serving/cases (Paddle Serving's OCR, simple and
ensemble examples, PaddleOCR 2.10's pdserving, and one case per behaviour: thread and process
ops, auto-batching, a skipped process, product errors, an op without a model, a custom
RequestOp/ResponseOp through PipelineServer, an op with two inputs, tensor inputs, a BERT service
written for a GPU) is served with
``batchline serve <script>``; every request the real server answered
(tests/data/paddle_serving/answers, recorded by bench/paddle_serving/record_answers.py) is
sent over HTTP and with PipelineClient over gRPC, and the answers compared: err_no, err_msg
and keys exactly, values exactly, OCR scores within 1e-4 (OpenVINO Runtime's kernels are not
Paddle Inference's; text and boxes are equal). Where batchline answers otherwise on purpose
(a service name it does not serve: 404), tests/support/paddle_serving/replay.py says so."""

import glob
import os
import shutil
import socket
import subprocess
import sys

import pytest

from serving.paddle_serving.service_file import SHIM_DIR
from tests.support.paddle_serving import replay
from tests.support.paddle_serving.cases import CASES, ports, prepare_case
from tests.support.server_process import ServerProcess

pytestmark = pytest.mark.slow

SCORE_TOLERANCE = {"ocr": 1e-4, "pdserving": 1e-4}


@pytest.mark.parametrize("case", list(CASES))
def test_the_case_answers_as_paddle_serving_does(case, tmp_path):
    case_dir = prepare_case(case, str(tmp_path))
    rpc_port, http_port = replay.set_ports(case_dir)
    server = ServerProcess(replay.entry_script(case, case_dir), port=http_port, ready_timeout=300)
    try:
        tol = SCORE_TOLERANCE.get(case, 0.0)
        http = replay.replay_http(case, server.url, tol)
        grpc = replay.replay_grpc(case, rpc_port, tol)
    finally:
        server.stop()
    assert http.compared == sum(1 for req in replay.answers(case)["requests"] if req["http"] is not None)
    assert grpc.compared > 0
    assert http.problems + grpc.problems == [], os.linesep.join(http.problems + grpc.problems)


def _free(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def test_paddle_servings_own_clients_run_as_they_are(tmp_path):
    """The OCR example's pipeline_http_client.py and pipeline_rpc_client.py, unchanged (their
    ports are the example's, so the server takes those), over a folder of the test images."""
    case_dir = prepare_case("ocr", str(tmp_path))
    rpc_port, http_port = ports(case_dir)
    if not (_free(rpc_port) and _free(http_port)):
        pytest.skip(f"the example's ports {http_port}/{rpc_port} are taken on this machine")
    images = sorted(glob.glob(os.path.join(replay.OCR_DIR, "sample", "*.png")))[:3]
    os.makedirs(os.path.join(case_dir, "imgs"))
    for image in images:
        shutil.copy(image, os.path.join(case_dir, "imgs"))
    server = ServerProcess(replay.entry_script("ocr", case_dir), port=http_port, ready_timeout=300)
    env = dict(os.environ, PYTHONPATH=SHIM_DIR)  # PYTHONPATH="$(batchline paddle-serving-path)"
    try:
        outputs = [
            subprocess.run([sys.executable, client], cwd=case_dir, env=env, capture_output=True, text=True, timeout=300)
            for client in ("pipeline_http_client.py", "pipeline_rpc_client.py")
        ]
    finally:
        server.stop()
    for out in outputs:
        assert out.returncode == 0, out.stderr[-2000:]
        assert out.stdout.count("erro_no:0") == len(images), out.stdout[-2000:]
        assert "No results" not in out.stdout
    assert "World" in outputs[0].stdout and "World" in outputs[1].stdout  # 00-en-1x32.png reads "World"
