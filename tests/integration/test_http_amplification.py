"""Hostile bodies cost at most a small multiple of their size (issue 25):
through the real Flask app on a fake image op, each is refused with a 4xx
naming the limit, and the Python allocations while it is answered
(tracemalloc's peak) stay under 10x the body. Before the JSON value and
depth bounds (serving/service/json_budget.py) and the multipart parts bound,
these cost 13x (nesting) to 91x (a logid of 3 M zeros) their size.

Also the ``logid`` contract: an integer in the 64-bit range or a string of
at most 64 characters, echoed back; anything else is a 400 naming it."""

from __future__ import annotations

import base64
import gc
import json
import tracemalloc

import pytest

from serving.batching.pipeline import Pipeline
from serving.config import parse_config
from serving.http.app import create_app
from tests.support.fuzz import body_cases
from tests.support.image_fakes import encode_png, make_image, stats_config_dict

NAME = "img"
MAX_INPUTS = 8
MAX_BODY = 16 << 20
BOUND = 10  # x the body size
SIZE = 6 << 20


@pytest.fixture(scope="module")
def client():
    config = parse_config(stats_config_dict(NAME, max_inputs=MAX_INPUTS, max_body_size=MAX_BODY))
    pipeline = Pipeline(config)
    pipeline.start()
    yield create_app(pipeline).test_client()
    pipeline.shutdown(timeout=10)


def _million_keys() -> bytes:
    return body_cases.many_keys_body(12 << 20)  # ~1.1 M keys "k0".."k1099999"


def _tiny_parts() -> tuple[bytes, str]:
    return body_cases.tiny_parts_multipart(999)  # werkzeug's default bound is 1000 parts


CASES = {
    "logid_3M_zeros": ("prediction", lambda: body_cases.logid_zeros_body(SIZE), 413, "JSON values"),
    "nesting": ("prediction", lambda: body_cases.nesting_body(SIZE), 400, "deeper than 32"),
    "empty_objects": ("prediction", lambda: body_cases.empty_objects_body(SIZE), 413, "JSON values"),
    "floats": ("predict", lambda: body_cases.floats_body(SIZE), 413, "JSON values"),
    "million_keys": ("prediction", _million_keys, 413, "JSON values"),
    "tiny_parts": ("predict", _tiny_parts, 413, "parts"),
}


def _peak_while(send) -> tuple[int, object]:
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        answer = send()
        return tracemalloc.get_traced_memory()[1] - base, answer
    finally:
        tracemalloc.stop()


def _message(r) -> str:
    body = r.get_json()
    return body["err_msg"] if "err_msg" in body else body["error"]["message"]


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_body_is_refused_under_10x_its_size(client, case):
    route, build, status, names = CASES[case]
    built = build()
    body, ctype = built if isinstance(built, tuple) else (built, "application/json")
    peak, r = _peak_while(lambda: client.post(f"/{NAME}/{route}", data=body, content_type=ctype))
    assert peak < BOUND * len(body), f"peak {peak / len(body):.1f}x the body ({len(body)} bytes)"
    assert r.status_code == status, r.get_data(as_text=True)[:300]
    assert names in _message(r)


def _image_b64() -> str:
    return base64.b64encode(encode_png(make_image(20, 10, seed=3))).decode()


@pytest.mark.parametrize("logid", [0, 7, 2**64 - 1, -(2**63), "", "abc", "x" * 64, None])
def test_logid_integer_or_short_string_is_echoed(client, logid):
    r = client.post(f"/{NAME}/prediction", data=json.dumps({"key": ["image"], "value": [_image_b64()], "logid": logid}))
    assert r.status_code == 200, r.get_data(as_text=True)
    assert r.get_json()["logid"] == logid


@pytest.mark.parametrize(
    "logid",
    [2**64, -(2**63) - 1, 10**30, 1.5, 1e3, True, [0, 0], [], {"id": 1}, "x" * 65],
    ids=["2**64", "-2**63-1", "1e30-int", "1.5", "1e3", "true", "list", "empty-list", "object", "65-chars"],
)
def test_any_other_logid_is_400_naming_it(client, logid):
    r = client.post(f"/{NAME}/prediction", data=json.dumps({"key": ["image"], "value": [_image_b64()], "logid": logid}))
    assert r.status_code == 400, r.get_data(as_text=True)
    message = _message(r)
    assert "'logid'" in message and len(message) < 300
    assert r.get_json()["logid"] is None  # a bad logid is not echoed


def test_many_inputs_of_text_with_commas_and_brackets_are_not_refused_by_the_bounds(client):
    """Within max_inputs the JSON bounds never refuse, whatever the strings hold."""
    noisy = '[{"a": [1, 2], "b": {"c": ",,,"}}] \\" \\\\' * 2000
    body = {"key": ["image"] * MAX_INPUTS, "value": [_image_b64()] * MAX_INPUTS, "logid": 1, "note": noisy}
    r = client.post(f"/{NAME}/prediction", data=json.dumps(body))
    assert r.status_code == 200, r.get_data(as_text=True)[:300]
    native = {"inputs": [{"image": _image_b64()} for _ in range(MAX_INPUTS)], "note": [noisy] * 40}
    assert client.post(f"/{NAME}/predict", json=native).status_code == 200


def test_multipart_at_the_parts_bound_is_counted_as_inputs(client):
    body, ctype = body_cases.tiny_parts_multipart(MAX_INPUTS + 16)  # the bound: inputs + 16 other parts
    r = client.post(f"/{NAME}/predict", data=body, content_type=ctype)
    assert r.status_code == 413 and "request has 24 inputs" in _message(r)


def test_multipart_parts_are_never_spooled_to_temporary_files(client, monkeypatch):
    """The front stored the body (in /tmp past 512 KiB) and counted it; werkzeug's default
    would store each part over its 500 KB threshold in a temporary file a second time."""
    import io

    import numpy as np
    import werkzeug.wrappers.request

    spooled: list[dict] = []
    monkeypatch.setattr(
        werkzeug.wrappers.request, "default_stream_factory", lambda **kw: spooled.append(kw) or io.BytesIO()
    )
    noise = np.random.default_rng(5).integers(0, 256, (600, 600, 3), dtype=np.uint8)
    png = encode_png(noise)
    assert len(png) > 500_000
    r = client.post(
        f"/{NAME}/predict", data={"image": (io.BytesIO(png), "page.png")}, content_type="multipart/form-data"
    )
    assert r.status_code == 200, _message(r)
    assert spooled == []
