"""Every protocol gets the same answers from the real models (issue 28): the
repository of configs/repository/ (ocr, ernie, ocr_ernie) served once with
``--rpc-port``, and each committed test page (and each text) sent one at a time
over the native HTTP API, Paddle Serving's gRPC service, and the Open Inference
Protocol over HTTP and gRPC through tritonclient. The answers are compared as
parsed JSON: the same lines, boxes, labels and scores."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest
import requests

from serving.protos import pipeline_messages
from tests.support.server_process import ServerProcess, free_port

pytestmark = pytest.mark.slow

TEXTS = ["2024-03-15", "¥1,234.50", "总计：345.00元", "Tel: 138-1234-5678", "订单号 20240315001"]
PAGES = 4  # of the committed varied pages: each is a full OCR request on 2 cores


def png(img) -> bytes:
    from tests.support.synth import encode_image

    return encode_image(img, ".png")


@pytest.fixture(scope="module")
def server():
    rpc_port = free_port()
    with ServerProcess("configs/repository", extra_args=("--rpc-port", str(rpc_port))) as srv:
        srv.rpc_port = rpc_port
        yield srv


def native(srv, name: str, kind: str, value: bytes | str):
    if kind == "image":
        body = {"inputs": [{"image": base64.b64encode(value).decode()}]}
    else:
        body = {"inputs": [{"text": value}]}
    answer = requests.post(f"{srv.url}/{name}/predict", json=body, timeout=300)
    assert answer.status_code == 200, answer.text
    return answer.json()["results"][0]


def paddle_grpc(srv, name: str, kind: str, value: bytes | str):
    import grpc

    m = pipeline_messages()
    with grpc.insecure_channel(f"127.0.0.1:{srv.rpc_port}") as channel:
        call = channel.unary_unary(
            "/baidu.paddle_serving.pipeline_serving.PipelineService/inference",
            request_serializer=m.Request.SerializeToString,
            response_deserializer=m.Response.FromString,
        )
        text = base64.b64encode(value).decode() if kind == "image" else value
        answer = call(m.Request(key=[kind], value=[text], name=name), timeout=300)
    assert answer.err_no == 0, answer.err_msg
    return json.loads(answer.value[0])


def v2_http(srv, name: str, kind: str, value: bytes | str):
    import tritonclient.http as httpclient

    client = httpclient.InferenceServerClient(srv.url.removeprefix("http://"), network_timeout=300)
    data = np.array([value if isinstance(value, bytes) else value.encode()], dtype=np.object_)
    tensor = httpclient.InferInput(kind, [1], "BYTES")
    tensor.set_data_from_numpy(data, binary_data=True)
    result = client.infer(name, [tensor], outputs=[httpclient.InferRequestedOutput("result", binary_data=True)])
    return json.loads(result.as_numpy("result")[0])


def v2_grpc(srv, name: str, kind: str, value: bytes | str):
    import tritonclient.grpc as grpcclient

    client = grpcclient.InferenceServerClient(f"127.0.0.1:{srv.rpc_port}")
    data = np.array([value if isinstance(value, bytes) else value.encode()], dtype=np.object_)
    tensor = grpcclient.InferInput(kind, [1], "BYTES")
    tensor.set_data_from_numpy(data)
    result = client.infer(name, [tensor], outputs=[grpcclient.InferRequestedOutput("result")], client_timeout=300)
    return json.loads(result.as_numpy("result")[0])


PROTOCOLS = {"grpc": paddle_grpc, "v2": v2_http, "v2-grpc": v2_grpc}


@pytest.mark.parametrize("name", ["ocr", "ocr_ernie"])
def test_image_pipelines_answer_alike_over_every_protocol(server, docs, name):
    for page in docs[:PAGES]:
        data = png(page.image)
        want = native(server, name, "image", data)
        assert want, "a committed page has text"
        for protocol, send in PROTOCOLS.items():
            assert send(server, name, "image", data) == want, (protocol, page)


def test_ernie_answers_alike_over_every_protocol(server):
    for text in TEXTS:
        want = native(server, "ernie", "text", text)
        for protocol, send in PROTOCOLS.items():
            assert send(server, "ernie", "text", text) == want, (protocol, text)


def test_ernie_typed_outputs_over_the_open_inference_protocol(server):
    import tritonclient.grpc as grpcclient

    client = grpcclient.InferenceServerClient(f"127.0.0.1:{server.rpc_port}")
    tensor = grpcclient.InferInput("text", [len(TEXTS)], "BYTES")
    tensor.set_data_from_numpy(np.array([t.encode() for t in TEXTS], dtype=np.object_))
    result = client.infer("ernie", [tensor])
    labels = [x.decode() for x in result.as_numpy("label")]
    scores = result.as_numpy("score")
    want = [native(server, "ernie", "text", t) for t in TEXTS]
    assert labels == [w["label"] for w in want]
    assert np.allclose(scores, [w["score"] for w in want], atol=1e-6)
