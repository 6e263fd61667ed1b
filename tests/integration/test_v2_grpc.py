"""The Open Inference Protocol (KServe v2) over gRPC (``inference.GRPCInferenceService``
on ``rpc_port``), through tritonclient.grpc, against the real server
(:class:`tests.support.live_app.LiveApp`) serving the model-free pipelines of
:mod:`tests.support.inference_fakes`. Answers are compared with the HTTP API's;
failures with the gRPC status the same request's HTTP status maps to."""

from __future__ import annotations

import json

import grpc
import numpy as np
import pytest
import requests
import tritonclient.grpc as triton
from tritonclient.utils import InferenceServerException

from serving.protos import inference_messages
from tests.support.client_fakes import HOLD, ocr_lines
from tests.support.image_fakes import encode_png, make_image
from tests.support.inference_fakes import label_op, recorded_submissions, v2_repository, v2_server
from tests.support.live_app import LiveApp

TOKEN = "v2-grpc-t0ken"


@pytest.fixture(scope="module")
def live():
    with v2_server() as app:
        yield app


@pytest.fixture(scope="module")
def client(live):
    with triton.InferenceServerClient(live.rpc_address) as c:
        yield c


def tensor_of(name, values, datatype="BYTES", shape=None):
    tensor = triton.InferInput(name, shape or [len(values)], datatype)
    tensor.set_data_from_numpy(np.array(values, dtype=object if datatype == "BYTES" else np.float32))
    return tensor


def texts(values):
    return tensor_of("text", [v.encode() for v in values])


def status_of(call) -> str:
    with pytest.raises(InferenceServerException) as info:
        call()
    return info.value.status()


def paddle_values(live, name, key, values):
    resp = requests.post(f"{live.url}/{name}/prediction", json={"key": [key] * len(values), "value": values})
    assert resp.status_code == 200, resp.text
    return resp.json()["value"]


# ------------------------------------------------------------------------------ infer


@pytest.mark.parametrize("rows", [["good day"], ["good", "bad news", "好"]])
def test_text_infer_equals_the_http_answers(live, client, rows):
    result = client.infer("ernie", [texts(rows)], request_id="g-1")
    got = [r.decode() for r in result.as_numpy("result")]
    assert got == paddle_values(live, "ernie", "text", rows)  # byte for byte
    assert [b.decode() for b in result.as_numpy("label")] == [json.loads(g)["label"] for g in got]
    assert result.as_numpy("score").tolist() == pytest.approx([json.loads(g)["score"] for g in got])
    response = result.get_response()
    assert (response.model_name, response.model_version, response.id) == ("ernie", "2", "g-1")


def test_image_infer(live, client):
    pngs = [encode_png(make_image(32, 24)), encode_png(make_image(40, 20, seed=1))]
    result = client.infer("ocr", [tensor_of("image", pngs)])
    assert [json.loads(r) for r in result.as_numpy("result")] == [ocr_lines(32, 24), ocr_lines(40, 20)]


def test_contents_instead_of_raw_and_the_requested_outputs(live):
    """``bytes_contents`` (KServe's clients send these), built from our own messages."""
    messages = inference_messages()
    request = messages.ModelInferRequest(model_name="ernie", model_version="1")
    request.inputs.add(name="text", datatype="BYTES", shape=[2, 1]).contents.bytes_contents.extend([b"good", b"bad"])
    request.outputs.add(name="label")
    with grpc.insecure_channel(live.rpc_address) as channel:
        infer = channel.unary_unary(
            "/inference.GRPCInferenceService/ModelInfer",
            request_serializer=messages.ModelInferRequest.SerializeToString,
            response_deserializer=messages.ModelInferResponse.FromString,
        )
        response = infer(request, timeout=30)
    assert [o.name for o in response.outputs] == ["label"] and response.model_version == "1"
    assert response.raw_output_contents[0] == b"\x08\x00\x00\x00positive\x08\x00\x00\x00negative"


def test_a_version_is_answered_by_that_version(client):
    for version in ("1", "2"):
        assert client.infer("ernie", [texts(["good"])], model_version=version).get_response().model_version == version


# ------------------------------------------------------------------------------ metadata, readiness


def test_server_and_model_metadata(client):
    server = client.get_server_metadata()
    assert server.name == "batchline" and list(server.extensions) == ["binary_tensor_data"]
    ernie = client.get_model_metadata("ernie", as_json=True)
    assert ernie["versions"] == ["1", "2"] and ernie["platform"] == "batchline"
    assert [(t["name"], t["datatype"], t["shape"]) for t in ernie["inputs"]] == [("text", "BYTES", ["-1"])]
    assert [o["name"] for o in ernie["outputs"]] == ["result", "label", "score"]
    assert [o.name for o in client.get_model_metadata("ocr").outputs] == ["result"]


def test_readiness(client):
    assert client.is_server_live() and client.is_server_ready()
    assert client.is_model_ready("ernie") and client.is_model_ready("ernie", "1")
    assert status_of(lambda: client.is_model_ready("nope")) == "StatusCode.NOT_FOUND"
    assert status_of(lambda: client.get_model_metadata("ernie", "3")) == "StatusCode.NOT_FOUND"


def test_other_triton_methods_are_unimplemented(client):
    assert status_of(lambda: client.get_model_repository_index()) == "StatusCode.UNIMPLEMENTED"


# ------------------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    "tensor, status",
    [
        (lambda: tensor_of("text", [1.0], "FP32"), "StatusCode.INVALID_ARGUMENT"),  # datatype
        (lambda: tensor_of("image", [b"good"]), "StatusCode.INVALID_ARGUMENT"),  # input name
        (lambda: texts(["good"] * 5), "StatusCode.RESOURCE_EXHAUSTED"),  # rows over max_inputs_per_request
    ],
)
def test_bad_requests(client, tensor, status):
    assert status_of(lambda: client.infer("ernie", [tensor()])) == status


def test_shape_mismatch_is_invalid_argument(client):
    tensor = texts(["a", "b"])
    tensor.set_shape([3])
    assert status_of(lambda: client.infer("ernie", [tensor])) == "StatusCode.INVALID_ARGUMENT"


def test_undecodable_image_is_invalid_argument(client):
    tensor = tensor_of("image", [b"not an image at all"])
    assert status_of(lambda: client.infer("ocr", [tensor])) == "StatusCode.INVALID_ARGUMENT"


def test_unknown_output_is_invalid_argument(client):
    outputs = [triton.InferRequestedOutput("nope")]
    assert status_of(lambda: client.infer("ernie", [texts(["good"])], outputs=outputs)) == "StatusCode.INVALID_ARGUMENT"


def test_token_needed_when_set_and_accepted_with_it():
    with LiveApp(v2_repository(auth_token=TOKEN)) as live, triton.InferenceServerClient(live.rpc_address) as c:
        assert c.is_server_live() and c.is_server_ready()  # the probes need no token
        assert status_of(lambda: c.infer("ernie", [texts(["good"])])) == "StatusCode.UNAUTHENTICATED"
        assert status_of(lambda: c.get_server_metadata()) == "StatusCode.UNAUTHENTICATED"
        headers = {"authorization": f"Bearer {TOKEN}"}
        assert c.infer("ernie", [texts(["good"])], headers=headers).as_numpy("label").tolist() == [b"positive"]
        assert c.is_model_ready("ernie", headers=headers)


# ------------------------------------------------------------------------------ parameters, deadlines


def test_priority_and_timeout_reach_the_request(live, client, monkeypatch):
    seen = recorded_submissions(live, monkeypatch)
    client.infer("ernie", [texts(["good"])], priority=1, timeout=2500)
    client.infer("ernie", [texts(["good"])], priority=2)
    assert seen == [(1, 3), (0, None)]


def test_a_short_timeout_on_a_held_op_is_deadline_exceeded():
    with LiveApp(v2_repository()) as live, triton.InferenceServerClient(live.rpc_address) as c:
        try:
            status = status_of(lambda: c.infer("ernie", [texts([HOLD])], model_version="1", timeout=50_000))
        finally:
            label_op(live, 1).release()
        assert status == "StatusCode.DEADLINE_EXCEEDED"


def test_requests_are_counted_as_v2_grpc(live, client):
    client.infer("ernie", [texts(["good"])])
    metrics = requests.get(f"{live.url}/metrics").text
    assert 'protocol="v2-grpc",status="200"' in metrics


@pytest.mark.parametrize("method", ["ModelInfer", "ModelMetadata", "ModelReady", "ServerMetadata"])
@pytest.mark.parametrize("payload", [b"\xff\xff\xff", b"\x0a\x05ab", b"\x2a\x80"])
def test_a_message_that_does_not_parse_is_invalid_argument_and_the_server_goes_on(live, client, method, payload):
    with grpc.insecure_channel(live.rpc_address) as channel, pytest.raises(grpc.RpcError) as caught:
        channel.unary_unary(f"/inference.GRPCInferenceService/{method}")(payload, timeout=30)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT, caught.value
    assert "not a valid inference." in caught.value.details()
    assert client.is_server_live()


@pytest.mark.parametrize("method", ["ServerLive", "ServerReady"])
def test_the_probes_never_read_their_message(live, method):
    """Whatever a probe carries (its message is empty) is left unread: bytes that parse as
    nothing, and more than grpc would take (1 MiB here), get the probe's answer."""
    with grpc.insecure_channel(live.rpc_address, options=[("grpc.max_send_message_length", -1)]) as channel:
        for payload in (b"\xff\xff\xff", b"\xff" * (8 << 20)):
            answer = channel.unary_unary(f"/inference.GRPCInferenceService/{method}")(payload, timeout=30)
            assert answer == b"\x08\x01"  # live / ready: true
