"""Property-based fuzz of both prediction endpoints through Flask's test
client, on a real Pipeline with a fake image op (tests/support/image_fakes.py):
the image decoding path (serving/service/decode.py, ops/image.py) is the real one.

Whatever the input, the answer is a 4xx with a JSON error message (or a 200
for input that really is a valid image) -- never a 5xx -- and afterwards the
server is ready and answers a valid request correctly.

The bugs this fuzz found (now fixed) keep a regression test each at the end.
"""

import base64
import json

import cv2
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from serving.batching.pipeline import Pipeline
from serving.config import parse_config
from serving.http.app import create_app
from tests.support.fuzz.malformed import hdr_bomb, png_with_header
from tests.support.image_fakes import encode_png, expected_answer, make_image, stats_config_dict

NAME = "img"
MAX_BODY = 256 * 1024
MAX_INPUTS = 4
MAX_PIXELS = 250_000

FUZZ = settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.fixture(scope="module")
def pipeline():
    config = parse_config(
        stats_config_dict(NAME, max_inputs=MAX_INPUTS, max_body_size=MAX_BODY, max_image_pixels=MAX_PIXELS)
    )
    p = Pipeline(config)
    p.start()
    yield p
    p.shutdown(timeout=10)


@pytest.fixture(scope="module")
def client(pipeline):
    return create_app(pipeline).test_client()


@pytest.fixture(autouse=True)
def still_healthy_afterwards(client):
    yield
    assert client.get("/health/ready").status_code == 200
    img = make_image(20, 10, seed=5)
    r = client.post(f"/{NAME}/prediction", data=json.dumps({"key": ["image"], "value": [b64(encode_png(img))]}))
    assert r.status_code == 200, r.get_data(as_text=True)
    assert json.loads(r.get_json()["value"][0]) == expected_answer(img)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _encodings():
    rng = np.random.default_rng(0)
    noisy = rng.integers(0, 256, size=(30, 40, 3), dtype=np.uint8)
    out = []
    for ext in (".png", ".jpg", ".webp", ".bmp", ".gif", ".tiff"):
        ok, buf = cv2.imencode(ext, noisy)
        if ok:
            out.append(buf.tobytes())
    return out


VALID = _encodings()
TRANSPORTS = ("paddle", "native_json", "multipart", "raw")


def send_image(client, data: bytes, transport: str, *, query: str = ""):
    if transport == "paddle":
        return client.post(f"/{NAME}/prediction", data=json.dumps({"key": ["image"], "value": [b64(data)]}))
    if transport == "native_json":
        return client.post(f"/{NAME}/predict{query}", json={"inputs": [{"image": b64(data)}]})
    if transport == "multipart":
        from io import BytesIO

        return client.post(
            f"/{NAME}/predict{query}", data={"image": (BytesIO(data), "x.png")}, content_type="multipart/form-data"
        )
    return client.post(f"/{NAME}/predict{query}", data=data, content_type="image/png")


def message(r) -> str:
    body = r.get_json(silent=True)
    if not isinstance(body, dict):
        return ""
    if r.request.path.endswith("/prediction"):
        return body.get("err_msg", "") if body.get("err_no") else ""
    err = body.get("error")
    return err.get("message", "") if isinstance(err, dict) else ""


def assert_4xx(r, allowed=None):
    assert 400 <= r.status_code < 500, (r.status_code, r.get_data(as_text=True)[:300])
    if allowed is not None:
        assert r.status_code in allowed, (r.status_code, r.get_data(as_text=True)[:300])
    assert message(r), f"{r.status_code} without a JSON error message: {r.get_data(as_text=True)[:200]!r}"


def assert_not_5xx(r):
    assert r.status_code < 500, (r.status_code, r.get_data(as_text=True)[:300])
    if r.status_code != 200:
        assert_4xx(r)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)


# ---------------------------------------------------------------------------
# bad images, every transport
# ---------------------------------------------------------------------------
@FUZZ
@given(data=st.binary(max_size=3000), transport=st.sampled_from(TRANSPORTS))
def test_random_bytes_as_image(client, data, transport):
    assert_4xx(send_image(client, data, transport), {400})


@FUZZ
@given(
    which=st.integers(0, len(VALID) - 1), frac=st.floats(0, 1, exclude_max=True), transport=st.sampled_from(TRANSPORTS)
)
def test_truncated_images(client, which, frac, transport):
    data = VALID[which]
    assert_4xx(send_image(client, data[: int(len(data) * frac)], transport), {400})


@FUZZ
@given(
    which=st.integers(0, len(VALID) - 1),
    flips=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=10),
    transport=st.sampled_from(TRANSPORTS),
)
def test_mutated_images_decode_or_4xx(client, which, flips, transport):
    buf = bytearray(VALID[which])
    for pos, value in flips:
        buf[pos % len(buf)] = value
    r = send_image(client, bytes(buf), transport)
    assert_not_5xx(r)
    if r.status_code == 200:
        result = json.loads(r.get_json()["value"][0]) if transport == "paddle" else r.get_json()["results"][0]
        assert result["w"] >= 2 and result["h"] >= 2


@FUZZ
@given(
    w=st.integers(0, 3),
    h=st.integers(0, 3),
    channels=st.sampled_from([0, 1, 3, 4]),
    transport=st.sampled_from(TRANSPORTS),
)
def test_tiny_and_empty_images(client, w, h, channels, transport):
    assume(min(w, h) < 2)
    if w == 0 or h == 0:
        data = png_with_header(w, h)
    else:
        shape = (h, w) if channels == 0 else (h, w, channels)
        data = encode_png(np.zeros(shape, np.uint8))
    assert_4xx(send_image(client, data, transport), {400})


@pytest.mark.filterwarnings("ignore::PIL.Image.DecompressionBombWarning")
@FUZZ
@given(w=st.integers(1, 60000), h=st.integers(1, 60000), transport=st.sampled_from(TRANSPORTS))
def test_pixel_bombs_refused_from_the_header(client, w, h, transport):
    assume(w * h > MAX_PIXELS)
    r = send_image(client, png_with_header(w, h, rows=1), transport)
    assert_4xx(r, {413})
    assert "limit" in message(r)


def test_body_over_max_body_size(client):
    big = "A" * (MAX_BODY + 1)
    r = client.post(f"/{NAME}/prediction", data=json.dumps({"key": ["image"], "value": [big]}))
    assert_4xx(r, {413})
    for transport in ("multipart", "raw"):
        assert_4xx(send_image(client, b"\x89PNG" + b"\0" * MAX_BODY, transport), {413})


# ---------------------------------------------------------------------------
# bad request shapes
# ---------------------------------------------------------------------------
@FUZZ
@given(body=json_values)
def test_any_json_body_paddle(client, body):
    r = client.post(f"/{NAME}/prediction", data=json.dumps(body))
    assert_4xx(r, {400, 413})


@FUZZ
@given(body=json_values, native=st.booleans())
def test_any_json_body_with_key_and_value_lists(client, body, native):
    if native:
        r = client.post(f"/{NAME}/predict", json={"inputs": body if isinstance(body, list) else [body]})
    else:
        keys = body if isinstance(body, list) else [body]
        r = client.post(f"/{NAME}/prediction", data=json.dumps({"key": keys, "value": list(keys)}))
    assert_4xx(r, {400, 413})


@FUZZ
@given(
    body=st.binary(max_size=2000),
    route=st.sampled_from(["prediction", "predict"]),
    ctype=st.sampled_from(
        [
            None,
            "application/json",
            "text/plain",
            "application/octet-stream",
            "multipart/form-data",
            "multipart/form-data; boundary=x",
            "image/png",
            "image/",
        ]
    ),
)
def test_any_bytes_body(client, body, route, ctype):
    r = client.post(f"/{NAME}/{route}", data=body, content_type=ctype)
    assert_not_5xx(r)
    if route == "prediction" or not (ctype or "").startswith("image/"):
        assert r.status_code != 200


@FUZZ
@given(text=st.text(max_size=300))
def test_any_text_body(client, text):
    r = client.post(f"/{NAME}/prediction", data=text.encode("utf-8"))
    assert_4xx(r, {400})


@FUZZ
@given(
    n_keys=st.integers(0, 300),
    extra_values=st.integers(-2, 2),
    key=st.sampled_from(["image", "img", "text", "", "IMAGE"]),
)
def test_key_lists(client, n_keys, extra_values, key):
    n_values = max(0, n_keys + extra_values)
    r = client.post(f"/{NAME}/prediction", data=json.dumps({"key": [key] * n_keys, "value": ["aGk="] * n_values}))
    assert_4xx(r, {400, 413})
    if n_keys == n_values and n_keys > MAX_INPUTS:
        assert r.status_code == 413


@FUZZ
@given(name=st.sampled_from(["priority", "timeout_ms"]), value=json_values, where=st.sampled_from(["json", "query"]))
def test_options_of_any_type(client, name, value, where):
    img = make_image(8, 8, seed=2)
    if where == "json":
        r = client.post(
            f"/{NAME}/prediction", data=json.dumps({"key": ["image"], "value": [b64(encode_png(img))], name: value})
        )
    else:
        assume(isinstance(value, (str, int)) and not isinstance(value, bool))
        from urllib.parse import urlencode

        r = send_image(client, encode_png(img), "raw", query="?" + urlencode({name: value}))
    valid = {"priority": (0, 0), "timeout_ms": (1, None)}[name]
    as_int = None
    if isinstance(value, int) and not isinstance(value, bool):
        as_int = value
    elif isinstance(value, str) and value.strip().lstrip("-").isdigit():
        as_int = int(value)
    ok = as_int is not None and as_int >= valid[0] and (valid[1] is None or as_int <= valid[1])
    if value is None:
        ok = True  # null means "not given"
    if ok:
        assert r.status_code == 200, r.get_data(as_text=True)
    else:
        assert_4xx(r, {400})


@FUZZ
@given(
    fields=st.lists(
        st.tuples(
            st.sampled_from(["image", "img", "text", "file", ""]),
            st.one_of(st.none(), st.sampled_from(["a.png", "", "x"])),
            st.binary(max_size=300),
        ),
        min_size=0,
        max_size=6,
    )
)
def test_multipart_fields(client, fields):
    from io import BytesIO

    data = {}
    for name, filename, content in fields:
        value = (BytesIO(content), filename) if filename is not None else content.decode("latin-1")
        data.setdefault(name, []).append(value)
    r = client.post(f"/{NAME}/predict", data=data, content_type="multipart/form-data")
    assert_4xx(r, {400, 413})


@FUZZ
@given(
    name=st.text(
        alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="/?#%"), min_size=1, max_size=40
    ),
    route=st.sampled_from(["prediction", "predict", "config"]),
)
def test_unknown_pipelines(client, name, route):
    assume(name != NAME and name.strip() and name not in (".", ".."))
    if route == "config":  # a GET, without a body (one would be 413: the route takes none)
        r = client.get(f"/{name}/{route}")
    else:
        r = client.post(f"/{name}/{route}", data=b"{}")
    assert_4xx(r, {404})


@pytest.mark.parametrize("method", ["get", "put", "delete", "patch"])
@pytest.mark.parametrize("route", ["prediction", "predict"])
def test_wrong_methods(client, method, route):
    assert_4xx(getattr(client, method)(f"/{NAME}/{route}"), {405})


def test_one_bad_image_among_good_fails_the_request_naming_it(client):
    good = b64(encode_png(make_image(9, 9)))
    r = client.post(
        f"/{NAME}/prediction", data=json.dumps({"key": ["image"] * 3, "value": [good, b64(VALID[0][:50]), good]})
    )
    assert_4xx(r, {400})
    assert "input 1" in message(r)


# ---------------------------------------------------------------------------
# regressions: bugs this fuzz found (each was a 500 or a full decode of a bomb)
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("route", ["prediction", "predict"])
def test_regression_deeply_nested_json_is_400(client, route):
    r = client.post(f"/{NAME}/{route}", data=b"[" * 50_000 + b"]" * 50_000, content_type="application/json")
    assert_4xx(r, {400})


def test_regression_huge_integer_literal_is_400(client):
    r = client.post(f"/{NAME}/prediction", data=b'{"key": ["image"], "value": ["aGk="], "logid": ' + b"9" * 5000 + b"}")
    assert_4xx(r, {400})


@pytest.mark.parametrize("value", ["--1", "\u00b2", "9" * 5000], ids=["double-minus", "superscript", "5000-digits"])
@pytest.mark.parametrize("where", ["json", "query"])
def test_regression_option_digit_strings_are_400(client, value, where):
    img = encode_png(make_image(8, 8))
    if where == "json":
        r = client.post(
            f"/{NAME}/prediction", data=json.dumps({"key": ["image"], "value": [b64(img)], "priority": value})
        )
    else:
        r = send_image(client, img, "raw", query=f"?timeout_ms={value}")
    assert_4xx(r, {400})


def _no_full_decode(monkeypatch):
    calls = []
    real = cv2.imdecode

    def spy(buf, flags):
        calls.append(len(buf))
        return real(buf, flags)

    monkeypatch.setattr(cv2, "imdecode", spy)
    return calls


def test_regression_huge_png_refused_before_decoding(client, monkeypatch):
    calls = _no_full_decode(monkeypatch)
    r = send_image(client, png_with_header(15000, 15000, bitdepth=1, color=0, rows=1), "raw")
    assert_4xx(r, {413})
    assert calls == [], "cv2.imdecode ran on a 225 M pixel image"


def test_regression_hdr_refused_before_decoding(client, monkeypatch):
    calls = _no_full_decode(monkeypatch)
    r = send_image(client, hdr_bomb(600, 600), "raw")  # 360 k pixels > MAX_PIXELS (small: the test stays cheap)
    assert_4xx(r, {400, 413})  # the fix may refuse formats it cannot size (400) or size them (413)
    assert calls == [], "cv2.imdecode decoded an over-limit HDR image"


def test_regression_request_pixel_budget_counts_all_images(client):
    """Each image is under max_image_pixels, but together they exceed the
    per-request budget (2 x max_image_pixels): 413 before anything runs."""
    small = b64(encode_png(np.zeros((400, 400, 3), np.uint8)))  # 160 k pixels each
    r = client.post(f"/{NAME}/prediction", data=json.dumps({"key": ["image"] * 3, "value": [small] * 3}))
    assert r.status_code == 200
    big = b64(encode_png(np.zeros((500, 480, 3), np.uint8)))  # 240 k pixels each, 4 x 240 k > 500 k
    r = client.post(f"/{NAME}/prediction", data=json.dumps({"key": ["image"] * 4, "value": [big] * 4}))
    assert_4xx(r, {413})
    assert "in all" in message(r)
