"""Paddle Serving's gRPC pipeline service on ``rpc_port``, in the real server
(:class:`tests.support.live_app.LiveApp`: ``Server`` with its HTTP and gRPC fronts).

Paddle Serving 0.9's own ``PipelineClient`` (tests/support/paddle_serving_client.py)
gets the answers ``POST /{name}/prediction`` gives; the rest goes through a gRPC
channel with the protocol's messages (serving/protos), so a test can set what
PipelineClient cannot: several inputs, a name and method, metadata, a deadline.
Held batches (the fake op's ``HOLD`` text) make deadlines, cancellation and drain
exact, whatever the machine's speed."""

from __future__ import annotations

import base64
import dataclasses
import threading
import time
from typing import Any

import grpc
import pytest
import requests
import yaml

from serving.config.file_set import load_repository
from serving.protos import pipeline_messages
from tests.support import paddle_serving_client
from tests.support.client_fakes import HOLD, ocr_config, text_config
from tests.support.engine_fakes import op_conf
from tests.support.live_app import LiveApp
from tests.support.synth import encode_image

METHOD = "/baidu.paddle_serving.pipeline_serving.PipelineService/inference"
M = pipeline_messages()
TOKEN = "grpc-t0ken"
DEADLINE_S = 60.0


@pytest.fixture(autouse=True)
def no_token_in_env(monkeypatch):
    for var in ("BATCHLINE_AUTH_TOKEN", "BATCHLINE_ADMIN_TOKEN"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def serve(live_app):
    """A server with gRPC on a free port (a RepositoryConfig must set rpc_port itself)."""
    return lambda config, **kwargs: live_app(config, rpc=isinstance(config, dict), **kwargs)


def inference(live: LiveApp):
    channel = grpc.insecure_channel(live.rpc_address)
    return channel.unary_unary(
        METHOD, request_serializer=M.Request.SerializeToString, response_deserializer=M.Response.FromString
    )


def png(w: int, h: int) -> bytes:
    import numpy as np

    return encode_image(np.full((h, w, 3), 255, dtype=np.uint8), ".png")


def http_prediction(live: LiveApp, name: str, key: str, values: list[str], **extra: Any) -> dict[str, Any]:
    return requests.post(
        f"{live.url}/{name}/prediction", json={"key": [key] * len(values), "value": values, **extra}
    ).json()


def metric(live: LiveApp, name: str, **labels: str) -> float:
    from client.stats import MetricsSnapshot

    return MetricsSnapshot.from_text(requests.get(f"{live.url}/metrics").text).value(name, **labels)


def wait_until(condition, what: str) -> None:
    end = time.monotonic() + DEADLINE_S
    while not condition():
        assert time.monotonic() < end, f"not {what} after {DEADLINE_S}s"
        time.sleep(0.02)


def held(live: LiveApp, inputs: int = 1) -> None:
    """Until a request of ``inputs`` inputs is admitted, every one (and, sent with HOLD, held in its batch)."""
    wait_until(lambda: metric(live, "batchline_requests_in_flight") >= inputs, "admitted")


# ----------------------------------------------------------------------------- the real PipelineClient


@pytest.mark.slow  # a child process each; the first run fetches Paddle Serving's wheel
def test_paddle_servings_own_client_gets_what_http_prediction_answers(serve):
    text = serve(text_config())
    image = serve(ocr_config())
    b64 = base64.b64encode(png(64, 40)).decode()
    got = paddle_serving_client.predict(
        text.rpc_address,
        [{"text": "good movie"}, {"text": "bad film", "logid": 7}],
        fetch=["result"],
    )
    got += paddle_serving_client.predict(text.rpc_address, [{"text": "fine"}], pack_tensor_format=True)
    want = [http_prediction(text, "ernie", "text", [t]) for t in ("good movie", "bad film", "fine")]
    assert [(g["err_no"], g["key"], g["value"]) for g in got] == [(0, w["key"], w["value"]) for w in want]

    (answer,) = paddle_serving_client.predict(image.rpc_address, [{"image": b64}])
    want = http_prediction(image, "ocr", "image", [b64])
    assert (answer["err_no"], answer["value"]) == (0, want["value"])


@pytest.mark.slow
def test_paddle_servings_own_client_reads_a_failure_from_err_no_as_over_http(serve):
    live = serve(text_config())
    (answer,) = paddle_serving_client.predict(live.rpc_address, [{"image": "aGk="}])
    want = http_prediction(live, "ernie", "image", ["aGk="])
    assert answer["err_no"] == want["err_no"] == 400 and answer["err_msg"] == want["err_msg"]
    assert answer["value"] == []


# ----------------------------------------------------------------------------- inputs, routing, errors


def test_several_inputs_tensors_and_raw_image_bytes_answer_in_order(serve):
    live = serve(ocr_config())
    call = inference(live)
    a, b = png(64, 40), png(96, 48)
    request = M.Request(key=["image"], value=[base64.b64encode(a).decode()])
    request.tensors.add(name="img", byte_data=b)  # raw file bytes: no base64
    request.tensors.add(name="image", str_data=[base64.b64encode(b).decode()])
    answer = call(request)
    assert answer.err_no == 0 and answer.key == ["result"] * 3
    want = http_prediction(live, "ocr", "image", [base64.b64encode(x).decode() for x in (a, b, b)])
    assert list(answer.value) == want["value"]


@pytest.mark.parametrize(
    "request_fields, err_no, fragment",
    [
        ({"key": ["text"], "value": []}, 400, "'key' has 1 entries but 'value' has 0"),
        ({"key": ["image"], "value": ["x"]}, 400, "this pipeline takes 'text'"),
        ({"key": [], "value": []}, 400, "request has no inputs"),
        ({"key": ["text"] * 5, "value": ["a"] * 5}, 413, "5 inputs (limit 4"),
        ({"key": ["text"], "value": ["a"], "name": "nope"}, 404, "unknown pipeline 'nope'"),
        ({"key": ["text"], "value": ["a"], "method": "predictions"}, 404, "no method 'predictions'"),
        ({"key": ["text"], "value": ["a"], "method": "v9/prediction"}, 404, "version 9"),
        ({"key": ["text"], "value": ["__bad__"]}, 400, ""),
    ],
)
def test_a_bad_request_gets_the_http_endpoints_err_no_and_the_server_goes_on(serve, request_fields, err_no, fragment):
    live = serve(text_config())
    call = inference(live)
    answer = call(M.Request(**request_fields))
    assert answer.err_no == err_no and fragment in answer.err_msg, answer
    assert not answer.value
    assert call(M.Request(key=["text"], value=["good"])).err_no == 0


def test_numpy_tensors_are_refused_by_batchlines_own_pipelines_before_anything_is_decoded(serve):
    live = serve(ocr_config())
    request = M.Request()
    request.tensors.add(name="image", uint32_data=[255] * 12, shape=[2, 2, 3], elem_type=7)
    answer = inference(live)(request)
    assert answer.err_no == 400 and "numpy array (uint32_data)" in answer.err_msg
    request = M.Request()
    request.tensors.add(name="image", byte_data=b"\x93NUMPY\x01\x00v\x00{'descr': '|u1'", elem_type=13)
    assert "np.save bytes" in inference(live)(request).err_msg


def test_name_and_method_pick_the_pipeline_and_version(serve, tmp_path):
    def write(name: str, version: int, cls: str) -> str:
        path = tmp_path / f"{name}-{version}.yml"
        body = {"name": name, "version": version, "op": {"echo": op_conf(cls)}, "dag": {"max_queue_size": 8}}
        path.write_text(yaml.safe_dump(body))
        return str(path)

    files = [write("first", 1, "EchoTextOp"), write("second", 1, "EchoTextOp"), write("second", 2, "EchoTextOp")]
    live = serve(dataclasses.replace(load_repository(files), rpc_port=0))
    call = inference(live)
    http = requests.post(f"{live.url}/first/prediction", json={"key": ["text"], "value": ["hi"]}).json()
    assert call(M.Request(key=["text"], value=["hi"])).value == http["value"]  # no name: the first pipeline
    for method in ("", "prediction", "/prediction", "v2/prediction"):
        answer = call(M.Request(key=["text"], value=["hi"], name="second", method=method))
        assert answer.err_no == 0, (method, answer)


def test_message_over_the_body_limit_is_refused_by_grpc(serve):
    live = serve(text_config(max_body_size=4096))
    with pytest.raises(grpc.RpcError) as caught:
        inference(live)(M.Request(key=["text"], value=["x" * 10_000]))
    assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


# ----------------------------------------------------------------------------- token, options, deadline


def test_token_as_metadata(serve):
    live = serve(text_config(auth_token=TOKEN))
    call = inference(live)
    for metadata in ((), (("authorization", "Bearer wrong"),)):
        with pytest.raises(grpc.RpcError) as caught:
            call(M.Request(key=["text"], value=["good"]), metadata=metadata)
        assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert dict(caught.value.trailing_metadata())["batchline-http-status"] == "401"
    answer = call(M.Request(key=["text"], value=["good"]), metadata=(("authorization", f"Bearer {TOKEN}"),))
    assert answer.err_no == 0


def test_priority_and_timeout_come_from_metadata(serve):
    live = serve(text_config())
    call = inference(live)
    assert call(M.Request(key=["text"], value=["good"]), metadata=(("priority", "1"),)).err_no == 0
    answer = call(M.Request(key=["text"], value=["good"]), metadata=(("priority", "2"),))
    assert answer.err_no == 400 and "'priority' must be between 0 and 1" in answer.err_msg
    answer = call(M.Request(key=["text"], value=[HOLD]), metadata=(("timeout_ms", "200"),))
    assert answer.err_no == 504


def test_the_grpc_deadline_bounds_the_request_and_frees_its_admission_slot(serve):
    live = serve(text_config(max_queue_size=1))
    call = inference(live)
    try:  # the server's time limit is the deadline's: its 504 may arrive first
        assert call(M.Request(key=["text"], value=[HOLD]), timeout=0.5).err_no == 504
    except grpc.RpcError as err:
        assert err.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    live.op("cls").release()
    end = time.monotonic() + DEADLINE_S
    while time.monotonic() < end:  # the held request ends (its own deadline was the call's)
        answer = call(M.Request(key=["text"], value=["good"]))
        if answer.err_no == 0:
            break
        assert answer.err_no == 503
        time.sleep(0.05)
    assert answer.err_no == 0


def test_a_cancelled_call_fails_its_request_as_a_client_gone(serve):
    live = serve(text_config())
    call = inference(live)
    future = call.future(M.Request(key=["text"], value=[HOLD]))
    held(live)
    future.cancel()
    # noticed while the batch is still held: the request ends as a client gone (499)
    wait_until(lambda: metric(live, "batchline_requests_total", status="499") == 1, "cancelled")


def test_drain_answers_the_call_in_flight(serve):
    live = serve(text_config())
    call = inference(live)
    future = call.future(M.Request(key=["text", "text"], value=[HOLD, "good"]))
    held(live, inputs=2)  # the whole call accepted: a drain begun between its inputs refuses it (503)
    closer = threading.Thread(target=live.close)
    closer.start()
    wait_until(lambda: requests.get(f"{live.url}/health/ready").status_code == 503, "draining")
    assert inference(live)(M.Request(key=["text"], value=["good"])).err_no == 503  # a new call is refused
    live.op("cls").release()
    answer = future.result(timeout=DEADLINE_S)
    closer.join(DEADLINE_S)
    assert answer.err_no == 0 and len(answer.value) == 2


def test_requests_are_counted_by_the_protocol_they_came_in_by(serve):
    from client.stats import MetricsSnapshot

    live = serve(text_config())
    inference(live)(M.Request(key=["text", "text"], value=["good", "bad"]))
    http_prediction(live, "ernie", "text", ["fine"])
    snap = MetricsSnapshot.from_text(requests.get(f"{live.url}/metrics").text)
    name = "batchline_protocol_requests_total"
    assert snap.value(name, pipeline="ernie", protocol="grpc", status="200") == 2
    assert snap.value(name, pipeline="ernie", protocol="http", status="200") == 1


def test_a_call_waiting_for_its_answer_holds_no_room_for_its_message(serve):
    config = text_config(max_body_size=1 << 20)
    config["http"] = {"max_buffered_mb": 1}  # room for one message (serving/grpc/message_room.py)
    live = serve(config)
    assert live.server.grpc is not None
    call = inference(live)
    future = call.future(M.Request(key=["text"], value=[HOLD]))
    held(live)
    # each of these needs the room to read its message (and answers 400 from it), while the held call waits
    answers = [call.future(M.Request(key=["image"], value=["x"]), timeout=DEADLINE_S) for _ in range(8)]
    assert [a.result().err_no for a in answers] == [400] * 8
    live.op("cls").release()
    assert future.result(timeout=DEADLINE_S).err_no == 0


@pytest.mark.parametrize("payload", [b"\xff\xff\xff", b"\x0a\x05ab", b"\x1a\x80"])
def test_a_message_that_does_not_parse_gets_err_no_400_and_the_server_goes_on(serve, payload):
    live = serve(text_config())
    with grpc.insecure_channel(live.rpc_address) as channel:
        answer = channel.unary_unary(METHOD, response_deserializer=M.Response.FromString)(payload, timeout=30)
    assert answer.err_no == 400 and "not a valid baidu.paddle_serving.pipeline_serving.Request" in answer.err_msg
    assert inference(live)(M.Request(key=["text"], value=["good"])).err_no == 0


def test_a_reload_reaches_grpc_calls(serve, tmp_path):
    from serving.protos import inference_messages

    def write(version: int) -> None:
        body = {"name": "echo", "version": version, "rpc_port": 0, "op": {"echo": op_conf("EchoTextOp")}}
        (tmp_path / f"echo-{version}.yml").write_text(yaml.safe_dump(body))

    write(1)
    live = serve(load_repository([str(tmp_path)]))
    call = inference(live)
    assert call(M.Request(key=["text"], value=["hi"], method="v2/prediction")).err_no == 404
    write(2)
    live.repository.reload()  # what SIGHUP runs
    assert call(M.Request(key=["text"], value=["hi"], method="v2/prediction")).err_no == 0
    im = inference_messages()
    with grpc.insecure_channel(live.rpc_address) as channel:
        metadata = channel.unary_unary(
            "/inference.GRPCInferenceService/ModelMetadata",
            request_serializer=im.ModelMetadataRequest.SerializeToString,
            response_deserializer=im.ModelMetadataResponse.FromString,
        )(im.ModelMetadataRequest(name="echo"))
    assert list(metadata.versions) == ["1", "2"]


def test_a_refusal_carries_its_status_and_retry_after_in_the_trailers(serve):
    live = serve(text_config(max_queue_size=1))
    call = inference(live)
    future = call.future(M.Request(key=["text"], value=[HOLD]))
    held(live)
    answer, finished = call.with_call(M.Request(key=["text"], value=["good"]))
    trailers = dict(finished.trailing_metadata())
    assert answer.err_no == 503 and trailers["batchline-http-status"] == "503" and int(trailers["retry-after"]) >= 1
    live.op("cls").release()
    assert future.result(timeout=DEADLINE_S).err_no == 0
