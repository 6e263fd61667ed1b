"""The Open Inference Protocol (KServe v2) over HTTP, through tritonclient.http,
against the real server (:class:`tests.support.live_app.LiveApp`) serving the
model-free pipelines of :mod:`tests.support.inference_fakes`: ``ocr`` (images)
and ``ernie`` v1/v2 (texts, with ``label`` and ``score`` outputs).

Answers are compared with what ``POST /{name}/prediction`` (the Paddle route,
each result's JSON text) and ``POST /{name}/predict`` give for the same inputs.
Tests assert answers and statuses, never speed."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest
import requests
import tritonclient.http as triton
from tritonclient.utils import InferenceServerException

from tests.support.client_fakes import HOLD, LINE2, ocr_lines
from tests.support.image_fakes import encode_png, make_image
from tests.support.inference_fakes import label_op, recorded_submissions, v2_repository, v2_server
from tests.support.live_app import LiveApp

TOKEN = "v2-t0ken"


@pytest.fixture(scope="module")
def live():
    with v2_server() as app:
        yield app


@pytest.fixture(scope="module")
def client(live):
    return triton.InferenceServerClient(live.url.split("://", 1)[1])


def texts(values, *, binary=True, name="text"):
    tensor = triton.InferInput(name, [len(values)], "BYTES")
    tensor.set_data_from_numpy(np.array([v.encode() for v in values], dtype=object), binary_data=binary)
    return tensor


def images(pngs, *, binary=True):
    tensor = triton.InferInput("image", [len(pngs)], "BYTES")
    # JSON carries strings only: an image goes as its base64 there
    data = pngs if binary else [base64.b64encode(p) for p in pngs]
    tensor.set_data_from_numpy(np.array(data, dtype=object), binary_data=binary)
    return tensor


def paddle_values(live, name, key, values):
    """What ``POST /{name}/prediction`` answers as each input's JSON text."""
    resp = requests.post(f"{live.url}/{name}/prediction", json={"key": [key] * len(values), "value": values})
    assert resp.status_code == 200, resp.text
    return resp.json()["value"]


def predict_results(live, name, key, values):
    resp = requests.post(f"{live.url}/{name}/predict", json={"inputs": [{key: v} for v in values]})
    assert resp.status_code == 200, resp.text
    return resp.json()["results"]


def error_of(call) -> InferenceServerException:
    with pytest.raises(InferenceServerException) as info:
        call()
    return info.value


# ------------------------------------------------------------------------------ infer


@pytest.mark.parametrize("binary", [True, False])
@pytest.mark.parametrize("rows", [["good day"], ["good", "bad news", "好"]])
def test_text_infer_equals_the_native_answers(live, client, binary, rows):
    result = client.infer("ernie", [texts(rows, binary=binary)])
    got = [r.decode() for r in result.as_numpy("result")]
    assert got == paddle_values(live, "ernie", "text", rows)  # byte for byte
    native = predict_results(live, "ernie", "text", rows)
    assert [json.loads(g) for g in got] == native
    assert [b.decode() for b in result.as_numpy("label")] == [r["label"] for r in native]
    assert result.as_numpy("score").dtype == np.float32
    assert result.as_numpy("score").tolist() == pytest.approx([r["score"] for r in native])
    assert result.get_response()["model_version"] == "2"  # the route's choice: the highest version


@pytest.mark.parametrize("binary", [True, False])
def test_image_infer_equals_the_native_answers(live, client, binary):
    pngs = [encode_png(make_image(32, 24)), encode_png(make_image(40, 20, seed=1))]
    result = client.infer("ocr", [images(pngs, binary=binary)])
    got = [json.loads(r) for r in result.as_numpy("result")]
    assert got == [ocr_lines(32, 24), ocr_lines(40, 20)]
    b64 = [base64.b64encode(p).decode() for p in pngs]
    assert [r.decode() for r in result.as_numpy("result")] == paddle_values(live, "ocr", "image", b64)
    assert got[0][1]["text"] == LINE2
    assert result.as_numpy("label") is None  # OCR offers no typed outputs


def test_rows_as_n_by_1_and_the_requested_outputs_only_in_their_order(client):
    tensor = triton.InferInput("text", [2, 1], "BYTES")
    tensor.set_data_from_numpy(np.array([[b"good"], [b"bad"]], dtype=object), binary_data=False)
    outputs = [triton.InferRequestedOutput("score", binary_data=False), triton.InferRequestedOutput("label")]
    response = client.infer("ernie", [tensor], outputs=outputs, request_id="r-7").get_response()
    assert [o["name"] for o in response["outputs"]] == ["score", "label"]
    assert response["outputs"][0]["data"] == [0.9, 0.9]  # JSON, as asked
    assert response["outputs"][1]["parameters"]["binary_data_size"] > 0  # binary, as asked
    assert response["id"] == "r-7"


def test_a_version_is_answered_by_that_version(client):
    for version in ("1", "2"):
        result = client.infer("ernie", [texts(["good"])], model_version=version)
        assert result.get_response()["model_version"] == version


# ------------------------------------------------------------------------------ metadata, readiness


def test_server_and_model_metadata(client):
    server = client.get_server_metadata()
    assert server["name"] == "batchline" and server["extensions"] == ["binary_tensor_data"]
    ernie = client.get_model_metadata("ernie")
    assert ernie["versions"] == ["1", "2"] and ernie["platform"] == "batchline"
    assert ernie["inputs"] == [{"name": "text", "datatype": "BYTES", "shape": [-1]}]
    assert [(o["name"], o["datatype"]) for o in ernie["outputs"]] == [
        ("result", "BYTES"),
        ("label", "BYTES"),
        ("score", "FP32"),
    ]
    assert client.get_model_metadata("ernie", "1")["outputs"] == ernie["outputs"]
    ocr = client.get_model_metadata("ocr")
    assert ocr["inputs"][0]["name"] == "image" and [o["name"] for o in ocr["outputs"]] == ["result"]


def test_readiness(client):
    assert client.is_server_live() and client.is_server_ready()
    assert client.is_model_ready("ernie") and client.is_model_ready("ernie", "1") and client.is_model_ready("ocr")
    assert not client.is_model_ready("nope") and not client.is_model_ready("ernie", "3")


def test_model_not_ready_is_503_until_loaded():
    with LiveApp(v2_repository(hold_load=True), wait_ready=False) as live:
        try:
            resp = requests.get(f"{live.url}/v2/models/ernie/ready")
            assert resp.status_code == 503 and resp.json() == {"name": "ernie", "ready": False}
        finally:
            live.release_held()
        live.wait_ready()
        assert requests.get(f"{live.url}/v2/models/ernie/ready").json()["ready"] is True


@pytest.mark.parametrize("version", ["", "3", "x"])
def test_unknown_model_or_version_is_404(client, version):
    err = error_of(lambda: client.get_model_metadata("ernie" if version else "nope", version))
    assert err.status() == "404" and err.message()


# ------------------------------------------------------------------------------ errors


def test_bad_datatype_is_400(client):
    tensor = triton.InferInput("text", [1], "FP32")
    tensor.set_data_from_numpy(np.array([1.0], dtype=np.float32))
    err = error_of(lambda: client.infer("ernie", [tensor]))
    assert err.status() == "400" and "datatype 'FP32'" in err.message()


def test_wrong_input_name_is_400(client):
    err = error_of(lambda: client.infer("ernie", [texts(["good"], name="image")]))
    assert err.status() == "400" and "input is 'text'" in err.message()


@pytest.mark.parametrize("binary", [True, False])
def test_shape_and_element_count_must_agree(client, binary):
    tensor = texts(["a", "b"], binary=binary)
    tensor.set_shape([3])
    err = error_of(lambda: client.infer("ernie", [tensor]))
    assert err.status() == "400"


def test_too_many_rows_is_413_before_any_element_is_read(live, client):
    err = error_of(lambda: client.infer("ernie", [texts(["good"] * 5)]))
    assert err.status() == "413" and "limit 4" in err.message()
    # the count is checked from the shape: elements that would not even parse are not read
    body = {"inputs": [{"name": "text", "datatype": "BYTES", "shape": [5], "data": [1]}]}
    assert requests.post(f"{live.url}/v2/models/ernie/infer", json=body).status_code == 413


def test_no_rows_is_400(live):
    body = {"inputs": [{"name": "text", "datatype": "BYTES", "shape": [0], "data": []}]}
    resp = requests.post(f"{live.url}/v2/models/ernie/infer", json=body)
    assert resp.status_code == 400 and resp.json() == {"error": "request has no inputs"}


def test_undecodable_image_is_400(client):
    err = error_of(lambda: client.infer("ocr", [images([b"not an image at all"])]))
    assert err.status() == "400"


def test_unknown_output_is_400(client):
    err = error_of(
        lambda: client.infer(
            "ocr", [images([encode_png(make_image())])], outputs=[triton.InferRequestedOutput("label")]
        )
    )
    assert err.status() == "400" and "offers result" in err.message()


@pytest.mark.parametrize(
    "headers, body, fragment",
    [
        ({"Inference-Header-Content-Length": "999"}, b"{}", "Inference-Header-Content-Length"),
        ({}, b"[1", "not valid JSON"),
        ({"Content-Encoding": "gzip"}, b"{}", "compressed"),
    ],
)
def test_malformed_bodies_get_the_kserve_error_shape(live, headers, body, fragment):
    resp = requests.post(f"{live.url}/v2/models/ernie/infer", data=body, headers=headers)
    assert 400 <= resp.status_code < 500
    assert set(resp.json()) == {"error"} and fragment in resp.json()["error"]


def test_binary_data_must_fill_the_body(live):
    header = json.dumps(
        {"inputs": [{"name": "text", "datatype": "BYTES", "shape": [1], "parameters": {"binary_data_size": 8}}]}
    ).encode()
    element = (4).to_bytes(4, "little") + b"good"
    for tail, status in ((element, 200), (element + b"x", 400), (element[:6], 400)):
        resp = requests.post(
            f"{live.url}/v2/models/ernie/infer",
            data=header + tail,
            headers={"Inference-Header-Content-Length": str(len(header))},
        )
        assert resp.status_code == status, resp.content


def test_body_over_max_body_size_is_413(live):
    resp = requests.post(f"{live.url}/v2/models/ernie/infer", data=b"x" * ((1 << 20) + 1))
    assert resp.status_code == 413 and "max_body_size" in resp.json()["error"]


def test_token_needed_when_set_and_accepted_with_it():
    with LiveApp(v2_repository(auth_token=TOKEN)) as live:
        url = live.url.split("://", 1)[1]
        anonymous = triton.InferenceServerClient(url)
        assert anonymous.is_server_live()  # the probes stay open
        err = error_of(lambda: anonymous.infer("ernie", [texts(["good"])]))
        assert err.status() == "401"
        assert error_of(lambda: anonymous.get_model_metadata("ernie")).status() == "401"
        authorized = triton.InferenceServerClient(url)
        headers = {"Authorization": f"Bearer {TOKEN}"}
        result = authorized.infer("ernie", [texts(["good"])], headers=headers)
        assert result.as_numpy("label").tolist() == [b"positive"]


# ------------------------------------------------------------------------------ parameters


def test_priority_and_timeout_reach_the_request(live, client, monkeypatch):
    seen = recorded_submissions(live, monkeypatch)
    client.infer("ernie", [texts(["good"])])
    client.infer("ernie", [texts(["good"])], priority=1, timeout=2500)
    client.infer("ernie", [texts(["good"])], priority=7)
    # ernie has 2 priority levels: Triton's 1 is the highest (1), larger numbers lower
    assert seen == [(0, None), (1, 3), (0, None)]


def test_a_short_timeout_on_a_held_op_is_504():
    with LiveApp(v2_repository()) as live:
        client = triton.InferenceServerClient(live.url.split("://", 1)[1])
        try:
            err = error_of(lambda: client.infer("ernie", [texts([HOLD])], model_version="1", timeout=50_000))
        finally:
            label_op(live, 1).release()
        assert err.status() == "504"


def test_requests_are_counted_as_v2(live, client):
    client.infer("ernie", [texts(["good"])])
    metrics = requests.get(f"{live.url}/metrics").text
    assert 'protocol="v2",status="200"' in metrics
