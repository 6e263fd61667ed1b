"""client.request_body: each protocol's encoding of a prediction request, read back
the way the server's parser reads it (werkzeug for multipart)."""

from __future__ import annotations

import io
import json

import pytest
from werkzeug.test import EnvironBuilder

from client.request_body import PROTOCOLS, encode_request, image_type, make_payload, route

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 20
JPEG = b"\xff\xd8\xff\xe0" + b"\x01" * 20


def _form(body):
    """The multipart body as the server's werkzeug request sees it."""
    return EnvironBuilder(
        method="POST", input_stream=io.BytesIO(body.data), content_type=body.content_type, query_string=body.query
    ).get_request()


def test_json_protocols_are_the_json_bodies():
    paddle = encode_request([("image", PNG)], protocol="paddle", logid=7, priority=1)
    native = encode_request([("text", "hi")], protocol="native", timeout_ms=50)
    assert paddle.content_type == native.content_type == "application/json" and not paddle.query
    assert json.loads(paddle.data) == make_payload([("image", PNG)], protocol="paddle", logid=7, priority=1)
    assert json.loads(native.data) == {"inputs": [{"text": "hi"}], "timeout_ms": 50}


def test_one_binary_image_is_the_raw_body_with_its_type_and_options_in_the_query():
    body = encode_request([("image", JPEG)], protocol="binary", priority=1, timeout_ms=250)
    assert body.data == JPEG and body.content_type == "image/jpeg"
    assert dict(p.split("=") for p in body.query.split("&")) == {"priority": "1", "timeout_ms": "250"}


def test_one_binary_text_is_utf8_plain_text():
    body = encode_request([("text", "发票 total")], protocol="binary")
    assert body.data == "发票 total".encode() and body.content_type.startswith("text/plain")
    assert body.query == ""


def test_several_binary_images_are_multipart_parts_in_order():
    images = [PNG, JPEG, b"raw bytes"]
    request = _form(encode_request([("image", i) for i in images], protocol="binary", priority=0))
    assert [f.read() for f in request.files.getlist("image")] == images
    assert request.args["priority"] == "0"


def test_several_binary_texts_are_form_fields_in_order():
    texts = ["a", "δ", "line three"]
    request = _form(encode_request([("text", t) for t in texts], protocol="binary"))
    assert request.form.getlist("text") == texts


def test_a_binary_request_carries_one_kind():
    with pytest.raises(ValueError, match="one kind"):
        encode_request([("image", PNG), ("text", "x")], protocol="binary")


def test_binary_has_no_json_payload_and_unknown_protocols_are_refused():
    with pytest.raises(ValueError, match="no JSON body"):
        make_payload([("text", "x")], protocol="binary")
    with pytest.raises(ValueError, match="protocol must be one of"):
        encode_request([("text", "x")], protocol="grpc")
    assert [route(p) for p in PROTOCOLS] == ["prediction", "predict", "predict"]


@pytest.mark.parametrize(
    ("head", "mime"),
    [
        (PNG, "image/png"),
        (JPEG, "image/jpeg"),
        (b"GIF89a", "image/gif"),
        (b"BM\x00\x00", "image/bmp"),
        (b"II*\x00", "image/tiff"),
        (b"MM\x00*", "image/tiff"),
        (b"RIFF\x00\x00\x00\x00WEBPVP8 ", "image/webp"),
        (b"not an image", "image/x-unknown"),
        (b"", "image/x-unknown"),
    ],
)
def test_image_type_from_the_first_bytes(head, mime):
    assert image_type(head) == mime
