"""The client's handling of HTTP answers, on hand-built responses (no server).

What a batchline server answers is tested against the real app in
tests/integration/test_client.py. This file covers the one answer it never
gives: HTTP 200 carrying ``err_no`` != 0. Paddle Serving's own pipeline
servers answer failures that way, and the client talks to them too, so it
keeps that defence; with no real server to produce the answer, it is tested
here, at the response-handling level, instead of through an imitation server.
"""

import http.client
import json

import pytest

from client.pipeline_client import PipelineError, prediction_answer
from client.transport import Answer


def response(status: int, body, headers: dict[str, str] | None = None) -> Answer:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    message = http.client.HTTPMessage()
    for name, value in (headers or {}).items():
        message[name] = value
    return Answer(status, message, content)


def paddle_answer(err_no: int, err_msg: str = "") -> dict:
    return {"err_no": err_no, "err_msg": err_msg, "key": [], "value": [], "logid": 3}


def test_http_200_with_err_no_raises_for_the_paddle_protocol():
    with pytest.raises(PipelineError) as info:
        prediction_answer(response(200, paddle_answer(7, "Failed to predict")), "paddle")
    assert info.value.status == 200 and info.value.message == "Failed to predict"
    assert json.loads(info.value.body)["err_no"] == 7
    with pytest.raises(PipelineError) as info:
        prediction_answer(response(200, paddle_answer(7)), "paddle")
    assert info.value.message == "err_no=7"  # no err_msg: the number is the message


def test_http_200_with_err_no_0_is_the_answer():
    body = {"err_no": 0, "err_msg": "", "key": ["result"], "value": ['{"label": "positive"}'], "logid": 3}
    assert prediction_answer(response(200, body), "paddle") == body


def test_native_answers_have_no_err_no():
    body = {"results": [{"label": "positive"}], "err_no": 7}  # not a field of the native protocol
    assert prediction_answer(response(200, body), "native") == body


def test_a_failure_status_carries_message_and_retry_after():
    with pytest.raises(PipelineError) as info:
        prediction_answer(response(503, paddle_answer(503, "overloaded"), {"Retry-After": "2"}), "paddle")
    assert (info.value.status, info.value.message, info.value.retry_after) == (503, "overloaded", 2.0)


@pytest.mark.parametrize("body, fragment", [(b"<html>oops</html>", "not JSON"), (b"[1, 2]", "unexpected answer")])
def test_a_200_that_is_no_answer_raises(body, fragment):
    with pytest.raises(PipelineError) as info:
        prediction_answer(response(200, body), "paddle")
    assert info.value.status == 200 and fragment in info.value.message
