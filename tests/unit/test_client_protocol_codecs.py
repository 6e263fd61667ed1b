"""The pure parts of the client's other protocols (client/v2_tensors.py,
v2_http.py, v2_grpc.py, paddle_grpc.py, grpc_calls.py, cli.py): encodings,
answers a server never gives (cut, malformed), addresses and the gRPC status
map. What a batchline server answers over each protocol is tested against the
real app in tests/integration/test_client_protocols.py."""

from __future__ import annotations

import http.client
import json

import grpc
import pytest

from client import paddle_grpc, v2_grpc, v2_http, v2_tensors
from client.answers import PipelineError
from client.cli import protocol_problem, rpc_address
from client.grpc_calls import rpc_error, rpc_target
from client.protocols import PROTOCOLS, prepare
from client.request_body import RequestBody
from client.transport import Answer
from serving.protos import inference_messages, pipeline_messages


def test_bytes_elements_round_trip_and_a_cut_one_is_refused():
    elements = [b"", b"\x00\xff", "你好".encode()]
    packed = v2_tensors.pack_bytes(elements)
    assert packed[:4] == b"\x00\x00\x00\x00" and packed[4:8] == b"\x02\x00\x00\x00"  # little-endian lengths
    assert v2_tensors.unpack_bytes(packed) == elements
    with pytest.raises(ValueError, match="runs past"):
        v2_tensors.unpack_bytes(packed[:-1])
    with pytest.raises(ValueError, match="length"):
        v2_tensors.unpack_bytes(packed + b"\x01\x00")


def test_one_tensor_of_one_kind_and_tritons_parameters():
    assert v2_tensors.input_tensor([("text", "好"), ("text", "b")]) == ("text", ["好".encode(), b"b"])
    assert v2_tensors.input_tensor([("image", bytearray(b"PNG"))]) == ("image", [b"PNG"])
    with pytest.raises(ValueError, match="one kind"):
        v2_tensors.input_tensor([("text", "a"), ("image", b"x")])
    assert v2_tensors.parameters(1, 250) == {"priority": 1, "timeout": 250_000}  # timeout in microseconds
    assert v2_tensors.parameters(None, None) == {}
    with pytest.raises(ValueError, match="2 elements for 3"):
        v2_tensors.results([b"1", b"2"], 3)


def test_v2_http_request_is_a_json_header_then_the_binary_tensor():
    body = v2_http.encode([("text", "good"), ("text", "好")], priority=2, timeout_ms=40, logid=7)
    header = json.loads(body.data[: body.header_length])
    assert header == {
        "id": "7",
        "inputs": [{"name": "text", "shape": [2], "datatype": "BYTES", "parameters": {"binary_data_size": 15}}],
        "outputs": [{"name": "result", "parameters": {"binary_data": True}}],
        "parameters": {"priority": 2, "timeout": 40_000},
    }
    assert v2_tensors.unpack_bytes(body.data[body.header_length :]) == [b"good", "好".encode()]
    assert body.rows == 2
    assert v2_http.infer_path("a b", None) == "/v2/models/a%20b/infer"
    assert v2_http.infer_path("ocr", 2) == "/v2/models/ocr/versions/2/infer"


def _answer(content: bytes, header_length: int | None = None) -> Answer:
    headers = http.client.HTTPMessage()
    if header_length is not None:
        headers[v2_http.HEADER_LENGTH] = str(header_length)
    return Answer(200, headers, content)


def test_v2_http_answer_binary_after_another_output_or_as_json_data():
    other, result = v2_tensors.pack_bytes([b"xyz"]), v2_tensors.pack_bytes([b'{"a":1}', b"[2]"])
    outputs = [
        {"name": "label", "datatype": "BYTES", "shape": [1], "parameters": {"binary_data_size": len(other)}},
        {"name": "result", "datatype": "BYTES", "shape": [2], "parameters": {"binary_data_size": len(result)}},
    ]
    head = json.dumps({"outputs": outputs}).encode()
    assert v2_http.result_elements(_answer(head + other + result, len(head))) == [b'{"a":1}', b"[2]"]
    plain = json.dumps({"outputs": [{"name": "result", "datatype": "BYTES", "shape": [1], "data": ['{"b":2}']}]})
    assert v2_http.result_elements(_answer(plain.encode())) == [b'{"b":2}']
    with pytest.raises(ValueError, match="no 'result'"):
        v2_http.result_elements(_answer(b'{"outputs": []}'))
    with pytest.raises(ValueError, match="past the body"):
        v2_http.result_elements(_answer(b"{}", 99))


def test_an_unreadable_v2_answer_is_a_pipeline_error():
    front = v2_http.V2Http(lambda *a, **k: _answer(b'{"outputs": []}'))
    with pytest.raises(PipelineError) as info:
        front.results("m", v2_http.encode([("text", "a")]), version=None, route_key=None, route_header="X-Route-Key")
    assert info.value.status == 200 and "unreadable v2 answer" in info.value.message


def test_a_prepared_grpc_request_plus_its_routing_is_the_whole_message():
    """Serialized messages concatenate as a merge: the client adds name and method per call."""
    M = pipeline_messages()
    prepared = paddle_grpc.encode([("image", b"\x89PNG"), ("image", b"jpg")], priority=1, timeout_ms=30, logid=5)
    routing = M.Request(name="ocr", method=paddle_grpc.method_of(3)).SerializeToString()
    whole = M.Request.FromString(prepared.data + routing)
    assert whole == M.Request(
        key=["image", "image"], value=["iVBORw==", "anBn"], name="ocr", method="v3/prediction", logid=5
    )
    assert prepared.metadata == (("priority", "1"), ("timeout_ms", "30"))
    assert paddle_grpc.method_of(None) == "prediction"

    V2 = inference_messages()
    infer = v2_grpc.encode([("text", "a"), ("text", "bc")], priority=1, logid=9)
    model = V2.ModelInferRequest(model_name="ernie", model_version="2").SerializeToString()
    request = V2.ModelInferRequest.FromString(infer.data + model)
    assert (request.model_name, request.model_version, request.id) == ("ernie", "2", "9")
    assert [(t.name, t.datatype, list(t.shape)) for t in request.inputs] == [("text", "BYTES", [2])]
    assert [o.name for o in request.outputs] == ["result"] and request.parameters["priority"].int64_param == 1
    assert v2_tensors.unpack_bytes(request.raw_input_contents[0]) == [b"a", b"bc"]


def test_v2_grpc_answer_raw_or_in_contents():
    V2 = inference_messages()
    out = V2.ModelInferResponse.InferOutputTensor
    raw = V2.ModelInferResponse(
        outputs=[out(name="score"), out(name="result")], raw_output_contents=[b"\0" * 4, v2_tensors.pack_bytes([b"1"])]
    )
    assert v2_grpc.result_elements(raw) == [b"1"]
    typed = V2.ModelInferResponse(outputs=[out(name="result", contents={"bytes_contents": [b"[1]"]})])
    assert v2_grpc.result_elements(typed) == [b"[1]"]
    with pytest.raises(ValueError):
        v2_grpc.result_elements(V2.ModelInferResponse())


class _Failed(grpc.RpcError):
    """What a failed call raises: a code, details and trailing metadata."""

    def __init__(self, code, trailers=()):
        self._code, self._trailers = code, trailers

    def code(self):
        return self._code

    def details(self):
        return "why"

    def trailing_metadata(self):
        return self._trailers


def test_grpc_failures_map_to_http_statuses():
    named = rpc_error(_Failed(grpc.StatusCode.UNAVAILABLE, (("batchline-http-status", "503"), ("retry-after", "2"))))
    assert (named.status, named.retry_after, named.message) == (503, 2.0, "why")
    assert rpc_error(_Failed(grpc.StatusCode.INVALID_ARGUMENT)).status == 400  # another server: the code alone
    assert rpc_error(_Failed(grpc.StatusCode.RESOURCE_EXHAUSTED)).status == 413
    for code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):  # no server answered
        err = rpc_error(_Failed(code))
        assert err.status == 0 and err.message.startswith("no answer")


def test_rpc_addresses():
    assert rpc_target("grpc://h:1/") == "h:1" and rpc_target("[::1]:80") == "[::1]:80"
    for bad in ("h", "h:x", ":5"):
        with pytest.raises(ValueError, match="HOST:PORT"):
            rpc_target(bad)
    assert rpc_address("9998", "http://10.0.0.2:9999/base") == "10.0.0.2:9998"
    assert rpc_address("9998", "http://[::1]:9999") == "[::1]:9998"
    assert rpc_address("h:1", "http://x") == "h:1" and rpc_address(None, "http://x") is None
    assert "needs --rpc-url" in protocol_problem("v2-grpc", None)
    assert protocol_problem("v2", None) is None and protocol_problem("grpc", "h:1") is None


def test_prepare_knows_every_protocol():
    assert PROTOCOLS == ("paddle", "native", "binary", "grpc", "v2", "v2-grpc")
    assert isinstance(prepare([("text", "a")], "binary"), RequestBody)
    with pytest.raises(ValueError, match="protocol must be one of"):
        prepare([("text", "a")], "v3")
