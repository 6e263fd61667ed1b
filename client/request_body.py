"""A prediction request encoded once, in one of the client's protocols:

* ``paddle``: Paddle Serving's JSON (``key``/``value``, images in base64), ``/{name}/prediction``;
* ``native``: batchline's JSON (``{"inputs": [...]}``, images in base64), ``/{name}/predict``;
* ``binary``: the native endpoint without base64 or JSON: one input as the raw body
  (``image/*`` or ``text/plain``), several as ``multipart/form-data``; options in the
  query string. A third smaller than base64 on the wire, and neither side encodes or
  decodes it.

:func:`encode_request` builds a :class:`RequestBody`; the client sends it as it is, so a
load test encodes each input once, before it measures anything.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import orjson
from urllib3.filepost import encode_multipart_formdata

PROTOCOLS = ("paddle", "native", "binary")

# the server reads any image/* body alike; the subtype is named where the bytes say it
_IMAGE_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF8", "image/gif"),
    (b"BM", "image/bmp"),
    (b"II*\x00", "image/tiff"),
    (b"MM\x00*", "image/tiff"),
)


@dataclass(frozen=True)
class RequestBody:
    """What one prediction request sends: the body, its Content-Type, and the query string."""

    data: bytes
    content_type: str
    query: str = ""


def route(protocol: str) -> str:
    """The endpoint a protocol posts to: ``prediction`` (paddle) or ``predict`` (native, binary)."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {PROTOCOLS}, got {protocol!r}")
    return "prediction" if protocol == "paddle" else "predict"


def json_body(payload: Any) -> bytes:
    """A request body: orjson where it can write ``payload``, else json (e.g. integers over 64 bits)."""
    try:
        return orjson.dumps(payload)
    except TypeError:  # orjson.JSONEncodeError is one
        return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def make_payload(
    inputs: Sequence[tuple],
    *,
    protocol: str = "paddle",
    priority: int | None = None,
    timeout_ms: int | None = None,
    logid: int = 0,
) -> dict[str, Any]:
    """The JSON body for ``inputs`` (``[("image", bytes) | ("text", str), ...]``) in a JSON protocol."""
    if protocol not in ("paddle", "native"):
        route(protocol)  # an unknown protocol: the usual error
        raise ValueError(f"protocol {protocol!r} has no JSON body: use encode_request")

    def enc(kind: str, value: Any) -> str:
        return b64(value) if kind == "image" else value

    if protocol == "paddle":
        payload: dict[str, Any] = {
            "key": [k for k, _ in inputs],
            "value": [enc(k, v) for k, v in inputs],
            "logid": logid,
        }
    else:
        payload = {"inputs": [{k: enc(k, v)} for k, v in inputs]}
    if priority is not None:
        payload["priority"] = int(priority)
    if timeout_ms is not None:
        payload["timeout_ms"] = int(timeout_ms)
    return payload


def encode_request(
    inputs: Sequence[tuple],
    *,
    protocol: str = "paddle",
    priority: int | None = None,
    timeout_ms: int | None = None,
    logid: int = 0,
) -> RequestBody:
    """``inputs`` as one request of ``protocol``."""
    if protocol != "binary":
        payload = make_payload(inputs, protocol=protocol, priority=priority, timeout_ms=timeout_ms, logid=logid)
        return RequestBody(json_body(payload), "application/json")
    kinds = {kind for kind, _ in inputs}
    if len(kinds) != 1:
        raise ValueError("a binary request carries inputs of one kind (a pipeline takes images or texts)")
    options = {k: int(v) for k, v in (("priority", priority), ("timeout_ms", timeout_ms)) if v is not None}
    query = urlencode(options)
    if len(inputs) == 1:
        ((kind, value),) = inputs
        if kind == "image":
            return RequestBody(bytes(value), image_type(value), query)
        return RequestBody(str(value).encode("utf-8"), "text/plain; charset=utf-8", query)
    fields = [
        (kind, (f"{kind}{i}", bytes(value), image_type(value))) if kind == "image" else (kind, str(value))
        for i, (kind, value) in enumerate(inputs)
    ]
    data, content_type = encode_multipart_formdata(fields)
    return RequestBody(data, content_type, query)


def image_type(data: bytes) -> str:
    """The Content-Type an image's first bytes say (``image/x-unknown`` when they say none)."""
    head = bytes(data[:12])
    for magic, mime in _IMAGE_MAGIC:
        if head.startswith(magic):
            return mime
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return "image/x-unknown"
