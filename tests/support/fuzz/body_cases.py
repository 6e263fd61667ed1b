"""Fuzz cases: bad JSON bodies (wrong types and shapes, missing or wrong keys,
invalid JSON and UTF-8, bad base64 and options). Allowed statuses are in the
case table (tests/support/fuzz/cases.py)."""

from __future__ import annotations

import json

from tests.support.fuzz.case import Request
from tests.support.fuzz.draw import Draw, b64


def wrong_json_types(draw: Draw) -> Request:
    valid = draw.valid_b64()
    rng = draw.rng
    options = [
        draw.junk_json(),
        {"key": draw.junk_json(), "value": [valid]},
        {"key": "image", "value": valid},
        {"key": ["image"], "value": valid},
        {"key": ["image"], "value": [rng.choice([1, None, True, [valid], {"b64": valid}, 2.5])]},
        {"key": [rng.choice([1, None, ["image"], {"image": 1}, True])], "value": [valid]},
        {"key": {"0": "image"}, "value": {"0": valid}},
    ]
    obj = rng.choice(options)
    if (
        isinstance(obj, dict)
        and obj.get("key") == ["image"]
        and isinstance(obj.get("value"), list)
        and len(obj["value"]) == 1
        and isinstance(obj["value"][0], str)
    ):
        obj["value"] = [None]  # junk_json made a valid request by chance
    return draw.paddle(obj)


def missing_keys(draw: Draw) -> Request:
    valid = draw.valid_b64()
    return draw.paddle(
        draw.rng.choice(
            [{}, {"key": ["image"]}, {"value": [valid]}, {"logid": 1}, {"keys": ["image"], "values": [valid]}]
        )
    )


def length_mismatch(draw: Draw) -> Request:
    valid = draw.valid_b64()
    n = draw.rng.randint(0, 3)
    return draw.paddle({"key": ["image"] * n, "value": [valid] * (n + draw.rng.randint(1, 3))})


def extra_keys_paddle(draw: Draw) -> Request:
    # unknown top-level keys are ignored (as Paddle Serving does): 200 is fine
    ext, data = draw.rng.choice([v for v in draw.images.valid if v[0] in (".png", ".bmp")])
    return draw.paddle(
        {"key": ["image"], "value": [b64(data)], "logid": 3, "fetch": ["res"], "extra": {"x": [1, 2]}, "": None}
    )


def non_utf8(draw: Draw) -> Request:
    junk = draw.rng.choice([b"\xff\xfe", b"\xc3\x28", b"\x80" * 10, "é".encode("latin-1")])
    body = b'{"key": ["image"], "value": ["' + junk + b'"]}'
    if draw.rng.random() < 0.5:
        return draw.paddle(body)
    return draw.native(body, {"Content-Type": "application/json"})


def invalid_json(draw: Draw) -> Request:
    valid = json.dumps({"key": ["image"], "value": ["aGk="]})
    body = draw.rng.choice(
        [
            b"",
            b" ",
            b"{",
            b"[",
            b"nul",
            b"{'key': 1}",
            b'{"key": ["image"],}',
            valid[: draw.rng.randint(1, len(valid) - 1)].encode(),
            b"NaN",
            draw.bytes(1, 200),
        ]
    )
    if draw.rng.random() < 0.5:
        return draw.paddle(body)
    return draw.native(body, {"Content-Type": "application/json"})


def wrong_key_names(draw: Draw) -> Request:
    valid = draw.valid_b64()
    key = draw.rng.choice(["text", "images", "", "IMAGE", "\u56fe\u50cf", "image ", "x" * 1000])
    return draw.paddle({"key": [key], "value": [valid]})


def bad_options(draw: Draw) -> Request:
    valid = draw.valid_b64()
    name = draw.rng.choice(["priority", "timeout_ms"])
    bad = {
        "priority": [-1, draw.limits.priority_levels, 99, "x", 1.5, True, [], {}, "1.0"],
        "timeout_ms": [0, -5, "abc", 2.5, False, [1], {}, "1e3"],
    }[name]
    return draw.paddle({"key": ["image"], "value": [valid], name: draw.rng.choice(bad)})


def bad_base64(draw: Draw) -> Request:
    value = draw.rng.choice(
        [
            "@@@@",
            "aGk",
            "a",
            "====",
            "aGk=\n" * 3,
            "\u00e9\u00e9\u00e9\u00e9",
            "data:image/png;base64,%%%",
            "data:,",
            "aGVsbG8=aGVsbG8=x",
            " " * 8,
        ]
    )
    if draw.rng.random() < 0.5:
        return draw.paddle({"key": ["image"], "value": [value]})
    return draw.native_json({"inputs": [{"image": value}]})


def native_json_shape(draw: Draw) -> Request:
    valid = draw.valid_b64()
    obj = draw.rng.choice(
        [
            {},
            {"inputs": None},
            {"inputs": valid},
            {"inputs": {"image": valid}},
            {"inputs": []},
            {"inputs": [valid]},
            {"inputs": [{"image": valid, "text": "x"}]},
            {"inputs": [{}]},
            {"inputs": [{"text": "hello"}]},
            {"inputs": [{"image": 5}]},
            {"inputs": [{"image": None}]},
            {"inputs": [[valid]]},
            [{"image": valid}],
            {"image": valid},
        ]
    )
    return draw.native_json(obj)


# ---- once server bugs found by this fuzz (500s; fixed, see docs/RELIABILITY.md) ----
def deep_json(draw: Draw) -> Request:
    depth = draw.rng.randint(5_000, 100_000)
    return draw.paddle(b"[" * depth + b"]" * depth)


def huge_int(draw: Draw) -> Request:
    digits = b"9" * draw.rng.randint(4_301, 20_000)
    return draw.paddle(b'{"key": ["image"], "value": ["aGk="], "logid": ' + digits + b"}")


def option_digits(draw: Draw) -> Request:
    valid = b64(draw.images.tiny[0])
    value = draw.rng.choice(["--1", "\u00b2", "9" * 5000, "-\u00b3"])
    return draw.paddle({"key": ["image"], "value": [valid], "priority": value})


# ---- hostile bodies: small on the wire, costly to build (issue 25; docs/RELIABILITY.md "Hostile traffic") ----
# Each fills about ``size`` bytes; tests/integration/test_http_amplification.py measures what they cost.
def _list_body(head: bytes, item: bytes, size: int) -> bytes:
    """``head`` and a JSON list of ``item`` filling about ``size`` bytes, then the object closed."""
    n = max(1, (size - len(head) - len(item)) // (len(item) + 1))
    return head + (item + b",") * (n - 1) + item + b"]}"


def logid_zeros_body(size: int) -> bytes:
    """A Paddle body whose ``logid`` is a list of zeros (2 bytes each)."""
    return _list_body(b'{"key": ["image"], "value": ["aGk="], "logid": [', b"0", size)


def nesting_body(size: int) -> bytes:
    """A Paddle body whose value opens ``[`` until ``size`` (never closed)."""
    head = b'{"key": ["image"], "value": '
    return head + b"[" * max(1, size - len(head))


def empty_objects_body(size: int) -> bytes:
    """A Paddle body whose value is a list of ``{}`` (3 bytes each)."""
    return _list_body(b'{"key": ["image"], "value": [', b"{}", size)


def floats_body(size: int) -> bytes:
    """A native body whose inputs are a list of ``0.5`` (4 bytes each)."""
    return _list_body(b'{"inputs": [', b"0.5", size)


def many_keys_body(size: int) -> bytes:
    """A Paddle body with extra keys ``"k0": 0, "k1": 0, ...`` up to ``size``."""
    out, i, total = [b'{"key": ["image"], "value": ["aGk="]'], 0, 40
    while total < size:
        item = b',"k%d":0' % i
        out.append(item)
        total += len(item)
        i += 1
    return b"".join(out) + b"}"


def tiny_parts_multipart(parts: int, boundary: str = "hostile") -> tuple[bytes, str]:
    """A multipart body of ``parts`` one-byte ``image`` files (~90 bytes each); (body, Content-Type)."""
    part = f'--{boundary}\r\nContent-Disposition: form-data; name="image"; filename="x"\r\n\r\nA\r\n'.encode()
    return part * parts + f"--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


def _hostile_size(draw: Draw) -> int:
    return min(draw.limits.max_body_size - 1024, 6 << 20)


def json_amplification(draw: Draw) -> Request:
    """A body near the size limit over the JSON value bound (413) or depth bound (400)."""
    size = _hostile_size(draw)
    pick = draw.rng.randrange(5)
    if pick == 0:
        return draw.paddle(logid_zeros_body(size), expect=(413,))
    if pick == 1:
        return draw.paddle(nesting_body(size), expect=(400,))
    if pick == 2:
        return draw.paddle(empty_objects_body(size), expect=(413,))
    if pick == 3:
        return Request("POST", f"/{draw.name}/predict", floats_body(size), {"Content-Type": "application/json"}, (413,))
    return draw.paddle(many_keys_body(size), expect=(413,))


def bad_logid(draw: Draw) -> Request:
    """A logid that is neither an integer in the 64-bit range nor a string of at most 64 characters."""
    valid = draw.valid_b64()
    logid = draw.rng.choice([[0, 0], {"id": 1}, 1.5, True, "x" * draw.rng.randint(65, 4000), 2**64, -(2**63) - 1, []])
    return draw.paddle({"key": ["image"], "value": [valid], "logid": logid})


def multipart_tiny_parts(draw: Draw) -> Request:
    """Many one-byte image parts: refused while werkzeug parses them (parts bound), not after."""
    most = max(1, _hostile_size(draw) // 100)
    parts = draw.rng.randint(min(most, draw.limits.max_inputs + 32), most)
    body, ctype = tiny_parts_multipart(parts, f"tiny{draw.rng.randrange(1 << 30)}")
    return Request("POST", f"/{draw.name}/predict", body, {"Content-Type": ctype})
