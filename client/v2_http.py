"""``--protocol v2``: the Open Inference Protocol (KServe v2) over HTTP,
``POST /v2/models/{name}[/versions/{v}]/infer`` with Triton's binary tensor
extension: the request is a JSON header (its length in the
``Inference-Header-Content-Length`` header) followed by the input tensor's
BYTES, and the ``"result"`` output is asked for as binary data too, so neither
side base64-encodes or JSON-escapes an image (client/v2_tensors.py has the
tensors). An answer whose ``"result"`` came as JSON ``data`` is read as well.

A failure is KServe's ``{"error": "..."}`` with the HTTP status, as
:class:`~client.answers.PipelineError`."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from . import v2_tensors
from .answers import PipelineError, answer_error
from .request_body import RequestBody, json_body
from .transport import Answer

HEADER_LENGTH = "Inference-Header-Content-Length"
CONTENT_TYPE = "application/octet-stream"


@dataclass(frozen=True)
class V2Body:
    """An infer request encoded once: the body, its JSON header's length, and its rows (inputs)."""

    data: bytes
    header_length: int
    rows: int


def encode(
    inputs: Sequence[tuple], *, priority: int | None = None, timeout_ms: int | None = None, logid: int = 0
) -> V2Body:
    """``inputs`` (``[("image", bytes) | ("text", str), ...]``, one kind) as one infer request."""
    kind, elements = v2_tensors.input_tensor(inputs)
    blob = v2_tensors.pack_bytes(elements)
    header: dict[str, Any] = {
        "id": str(logid),
        "inputs": [
            {
                "name": kind,
                "shape": [len(elements)],
                "datatype": v2_tensors.DATATYPE,
                "parameters": {"binary_data_size": len(blob)},
            }
        ],
        "outputs": [{"name": v2_tensors.RESULT, "parameters": {"binary_data": True}}],
    }
    params = v2_tensors.parameters(priority, timeout_ms)
    if params:
        header["parameters"] = params
    head = json_body(header)
    return V2Body(head + blob, len(head), len(elements))


def infer_path(name: str, version: int | None) -> str:
    base = f"/v2/models/{quote(name, safe='')}"
    return f"{base}/infer" if version is None else f"{base}/versions/{version}/infer"


def result_elements(resp: Answer) -> list[bytes]:
    """The ``"result"`` output's elements in a 200 answer; ValueError when the answer has none or is malformed."""
    length = resp.headers.get(HEADER_LENGTH)
    content = resp.content
    head_size = int(length) if length is not None else len(content)
    if not 0 <= head_size <= len(content):
        raise ValueError(f"{HEADER_LENGTH} {length} is past the body's {len(content)} bytes")
    header = json.loads(content[:head_size])
    offset = head_size
    for output in header.get("outputs") or ():
        size = (output.get("parameters") or {}).get("binary_data_size")
        if output.get("name") == v2_tensors.RESULT:
            if size is not None:
                return v2_tensors.unpack_bytes(content[offset : offset + int(size)])
            return [str(text).encode("utf-8") for text in output.get("data") or ()]
        offset += int(size or 0)  # binary outputs lie in the order the header lists them
    raise ValueError(f"the answer has no {v2_tensors.RESULT!r} output")


class V2Http:
    """Infer requests sent by ``request`` (the HTTP client's: its server, token and timeout)."""

    def __init__(self, request: Callable[..., Answer]):
        self._request = request

    def results(
        self, name: str, request: V2Body, *, version: int | None, route_key: str | None, route_header: str
    ) -> list[Any]:
        """One parsed result per input, as ``/{name}/predict`` answers them; PipelineError on failure."""
        headers = {HEADER_LENGTH: str(request.header_length)}
        if route_key is not None:
            headers[route_header] = str(route_key)
        body = RequestBody(request.data, CONTENT_TYPE)
        resp = self._request("POST", infer_path(name, version), body=body, headers=headers)
        if resp.status_code != 200:
            raise answer_error(resp)
        try:
            return v2_tensors.results(result_elements(resp), request.rows)
        except (ValueError, TypeError) as e:
            raise PipelineError(200, f"unreadable v2 answer: {e}", body=resp.text[:2000]) from e

    def close(self) -> None:
        pass  # the HTTP client owns the connections
