"""Paddle Serving users' files served by batchline answer as the real Paddle Serving 0.9 does
(issue 36). Each case of tests/data/paddle_serving/cases (Paddle Serving's OCR, simple and
ensemble examples, PaddleOCR 2.10's pdserving, and one case per behaviour: thread and process
ops, auto-batching, a skipped process, product errors, an op without a model, a custom
RequestOp/ResponseOp through PipelineServer, an op with two inputs) is served with
``batchline serve <script>``; every request the real server answered
(tests/data/paddle_serving/answers, recorded by bench/paddle_serving/record_answers.py) is
sent over HTTP and with PipelineClient over gRPC, and the answers compared: err_no, err_msg
and keys exactly, values exactly, OCR scores within 1e-4 (OpenVINO Runtime's kernels are not
Paddle Inference's; text and boxes are equal). Where batchline answers otherwise on purpose
(a service name it does not serve: 404), tests/support/paddle_serving/replay.py says so."""

import os

import pytest

from tests.support.paddle_serving import replay
from tests.support.paddle_serving.cases import CASES, prepare_case
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
    assert http.compared == len(replay.answers(case)["requests"])
    assert grpc.compared > 0
    assert http.problems + grpc.problems == [], os.linesep.join(http.problems + grpc.problems)
