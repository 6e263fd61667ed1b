"""Fuzz cases: requests over the server's limits, unknown routes and methods,
broken multipart, content types and query strings. Allowed statuses are in
the case table (tests/support/fuzz/cases.py)."""

from __future__ import annotations

from tests.support.fuzz.case import Request
from tests.support.fuzz.draw import Draw, b64


# ---- over a limit ------------------------------------------------------------
def body_over_limit(draw: Draw) -> Request:
    size = draw.limits.max_body_size + draw.rng.randint(1, draw.limits.max_body_size // 4 + 1)
    return draw.paddle({"key": ["image"], "value": ["A" * size]})


def body_over_limit_raw(draw: Draw) -> Request:
    size = draw.limits.max_body_size + draw.rng.randint(1, 4096)
    if draw.rng.random() < 0.5:
        return draw.raw(b"\x89PNG" + b"\x00" * size, "image/png")
    return draw.multipart([("image", "big.png", b"\x00" * size)])


def huge_key_list(draw: Draw) -> Request:
    n = draw.rng.randint(draw.limits.max_inputs + 1, min(100_000, draw.limits.max_body_size // 12))
    if draw.rng.random() < 0.5:
        return draw.paddle({"key": ["image"] * n, "value": ["x"] * n}, expect=(413,))
    return draw.paddle({"key": ["image"] * n, "value": ["x"] * (n - 1)})  # 400, or 413: body limit


def too_many_inputs(draw: Draw) -> Request:
    n = draw.limits.max_inputs + draw.rng.randint(1, 4)
    tiny = draw.images.tiny[0]
    if draw.rng.random() < 0.5:
        return draw.multipart([("image", f"{i}.png", tiny) for i in range(n)])
    return draw.native_json({"inputs": [{"image": b64(tiny)}] * n})


# ---- routes and methods ---------------------------------------------------------
def unknown_pipeline(draw: Draw) -> Request:
    name = draw.rng.choice(["ocr2", "x", "%2e%2e", "a" * 300, "\u00e9", "v2", "health"])
    route = draw.rng.choice(["prediction", "predict"])
    if name == draw.name:
        name += "x"
    return Request("POST", f"/{name}/{route}", b"{}", {"Content-Type": "application/json"})


def wrong_method(draw: Draw) -> Request:
    return Request(
        draw.rng.choice(["GET", "PUT", "DELETE", "PATCH"]),
        f"/{draw.name}/{draw.rng.choice(['prediction', 'predict'])}",
    )


# ---- /predict: multipart, content types, query strings ---------------------------
def multipart_shape(draw: Draw) -> Request:
    valid = draw.valid_image()
    pick = draw.rng.randrange(5)
    if pick == 0:
        return draw.multipart([("img", "x.png", valid)])  # wrong field name
    if pick == 1:
        return draw.multipart([("image", "x.png", b"")])  # empty file
    if pick == 2:
        return draw.multipart([("image", None, b64(valid).encode())])  # a form field, not a file
    if pick == 3:  # broken multipart framing
        body = b"--nope\r\n\r\n" + draw.bytes(0, 500)
        return draw.native(body, {"Content-Type": "multipart/form-data; boundary=xyz"})
    return draw.native(valid, {"Content-Type": "multipart/form-data"})  # no boundary


def unsupported_content_type(draw: Draw) -> Request:
    valid = draw.valid_image()
    ctype = draw.rng.choice(
        [
            "application/octet-stream",
            "text/plain",
            "",
            "application/x-www-form-urlencoded",
            "video/mp4",
            "application/xml",
            "image",
        ]
    )
    return draw.native(valid, {"Content-Type": ctype} if ctype else {})


def bad_query_options(draw: Draw) -> Request:
    valid = draw.valid_image()
    query = draw.rng.choice(
        [
            "?priority=abc",
            "?priority=-1",
            "?priority=99",
            "?timeout_ms=0",
            "?timeout_ms=-3",
            "?timeout_ms=1.5",
            "?timeout_ms=x",
        ]
    )
    return draw.raw(valid, "image/png", query=query)


# ---- doors (issue 38): refused from the headers ----------------------------------
NO_BODY_PATHS = ("/health/live", "/health/ready", "/v2/health/live", "/v2/health/ready", "/metrics", "/admin/reload")


def body_to_open_path(draw: Draw) -> Request:
    """A body to a path that takes none (a probe, /metrics, the page, a listing, the admin route): 413
    from the headers (401 first on a server with a token, where the path needs it)."""
    path = draw.rng.choice([*NO_BODY_PATHS, "/pipelines", "/page.css", "/", f"/{draw.name}/config"])
    method = draw.rng.choice(["POST", "GET", "PUT"])
    return Request(method, path, b"\0" * draw.rng.randint(1, 64 << 10), {"Content-Type": "application/json"})


def oversized_headers(draw: Draw) -> Request:
    """A header block over 256 KiB, or more than 256 header fields: 431."""
    req = draw.paddle_image(draw.valid_image())
    if draw.rng.random() < 0.5:
        req.headers["X-Big"] = "a" * draw.rng.randint(256 << 10, 300 << 10)
    else:
        req.headers.update({f"X-F{i}": "v" for i in range(draw.rng.randint(257, 2000))})
    return req
