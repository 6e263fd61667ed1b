"""serving.service.decode: request values -> what a source op takes, with limits;
and the OCR ops' normalisation of what it decoded (ops.image.to_bgr)."""

from __future__ import annotations

import base64

import numpy as np
import pytest

from ops.image import to_bgr
from serving.errors import BadRequest, PayloadTooLarge
from serving.service.decode import InputLimits, decode_base64, decode_image, decode_input, key_kind
from tests.support.synth import encode_image

LIMIT = 40_000_000


def _line_image() -> np.ndarray:
    rng = np.random.default_rng(3)
    return rng.integers(0, 256, (24, 60, 3), dtype=np.uint8)


def test_decode_keeps_what_the_file_holds_and_to_bgr_normalises_it():
    import cv2

    img = _line_image()
    assert np.array_equal(decode_image(encode_image(img), max_pixels=LIMIT), img)
    gray = cv2.cvtColor(img, cv2.COLOR_BGR2GRAY)
    decoded = decode_image(encode_image(gray), max_pixels=LIMIT)
    assert decoded.ndim == 2  # as the file holds it: the op decides the colour format
    assert to_bgr(decoded).shape == img.shape
    bgra = np.dstack([img, np.zeros(img.shape[:2], np.uint8)])  # fully transparent -> white
    out = to_bgr(decode_image(encode_image(bgra), max_pixels=LIMIT))
    assert out.shape == img.shape and out.min() == 255


@pytest.mark.parametrize("data", [b"", b"not an image at all", encode_image(np.zeros((8, 8, 3), np.uint8))[:20]])
def test_decode_image_bad_bytes(data):
    with pytest.raises(BadRequest):
        decode_image(data, max_pixels=LIMIT)


def test_decode_image_pixel_limit():
    data = encode_image(np.full((100, 200, 3), 255, np.uint8))
    with pytest.raises(PayloadTooLarge):
        decode_image(data, max_pixels=100 * 199)
    assert decode_image(data, max_pixels=100 * 200).shape == (100, 200, 3)


def test_decode_input_names_the_input_and_keeps_the_status():
    with pytest.raises(BadRequest, match="^input 2: cannot read the image header"):
        decode_input("image", base64.b64encode(b"junk").decode(), "input 2", InputLimits())
    big = base64.b64encode(encode_image(np.zeros((20, 20, 3), np.uint8))).decode()
    with pytest.raises(PayloadTooLarge):
        decode_input("image", big, "input 0", InputLimits(max_image_pixels=100))
    with pytest.raises(PayloadTooLarge, match="input 1: text has 11 characters"):
        decode_input("text", "x" * 11, "input 1", InputLimits(max_text_chars=10))
    assert decode_input("text", "héllo".encode(), "input 0", InputLimits(), raw=True) == "héllo"


def test_base64_variants_and_keys():
    data = b"\x89PNG raw"
    assert decode_base64(base64.encodebytes(data).decode(), "v") == data  # line breaks
    assert decode_base64("data:image/png;base64," + base64.b64encode(data).decode(), "v") == data
    with pytest.raises(BadRequest, match="v: expected a base64 string"):
        decode_base64(5, "v")
    assert (key_kind("img"), key_kind("words"), key_kind("x")) == ("image", "text", None)


def _old_decode_base64(value, where):
    """decode_base64 as it was (its accept/refuse behaviour is kept)."""
    import binascii

    text = value.strip()
    if text.startswith("data:") and "," in text:
        text = text.split(",", 1)[1]
    text = "".join(text.split())
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise BadRequest(f"{where}: invalid base64 ({exc})") from None


@pytest.mark.parametrize(
    "value",
    [
        "aGVsbG8=",
        "  aGVs\nbG8=\r\n",
        "aG\tVs\x0bbG\x0c8=",
        "aGVs\x1cbG\x1f8=",  # ASCII separators count as whitespace for str.split
        "aGVs\u00a0bG8=\u2028",  # so does Unicode whitespace
        "data:image/png;base64,aGVs bG8=",
        "data:,",
        "data:nocomma",
        "aGVsbG8",  # bad padding
        "aGVs*G8=",
        "aGVsbé8=",
        "",
        "   ",
        base64.encodebytes(b"x" * 300).decode(),
    ],
)
def test_base64_accepts_and_refuses_what_it_did(value):
    try:
        expected = _old_decode_base64(value, "v")
    except BadRequest:
        with pytest.raises(BadRequest, match="^v: invalid base64"):
            decode_base64(value, "v")
    else:
        assert decode_base64(value, "v") == expected


def test_base64_whitespace_costs_a_few_times_the_value_not_a_list_of_pieces():
    import tracemalloc

    value = "AB " * 5_000_000  # 15 MB; splitting it made 5 million strings (~700 MB)
    tracemalloc.start()
    try:
        decoded = decode_base64(value, "v")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(decoded) == 7_500_000
    assert peak < 3 * len(value), peak
