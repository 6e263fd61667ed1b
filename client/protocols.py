"""Every protocol the client speaks, behind one interface: a request is encoded
once (:func:`prepare`, e.g. before a load test measures anything) and sent by
the client's front for that protocol, which returns one parsed result per
input: the same Python objects whatever the protocol.

* ``paddle``, ``native``, ``binary``: the HTTP API (client/request_body.py);
* ``grpc``: Paddle Serving's ``PipelineService.inference`` on ``rpc_port`` (client/paddle_grpc.py);
* ``v2``: the Open Inference Protocol over HTTP, binary tensors (client/v2_http.py);
* ``v2-grpc``: the Open Inference Protocol's ``ModelInfer`` on ``rpc_port`` (client/v2_grpc.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from . import paddle_grpc, v2_grpc, v2_http
from .request_body import PROTOCOLS as HTTP_PROTOCOLS
from .request_body import encode_request
from .transport import Answer

GRPC_PROTOCOLS = ("grpc", "v2-grpc")  # on the server's rpc_port
PROTOCOLS = (*HTTP_PROTOCOLS, "grpc", "v2", "v2-grpc")

_ENCODERS: dict[str, Callable[..., Any]] = {
    "grpc": paddle_grpc.encode,
    "v2": v2_http.encode,
    "v2-grpc": v2_grpc.encode,
}


class Front(Protocol):
    """How one protocol sends a prepared request and reads its results."""

    def results(
        self, name: str, request: Any, *, version: int | None, route_key: str | None, route_header: str
    ) -> list[Any]: ...

    def close(self) -> None: ...


def check_protocol(protocol: str) -> None:
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {PROTOCOLS}, got {protocol!r}")


def prepare(
    inputs: Sequence[tuple],
    protocol: str,
    *,
    priority: int | None = None,
    timeout_ms: int | None = None,
    logid: int = 0,
) -> Any:
    """``inputs`` (``[("image", bytes) | ("text", str), ...]``) as one request of ``protocol``."""
    check_protocol(protocol)
    encode = _ENCODERS.get(protocol)
    if encode is None:
        return encode_request(inputs, protocol=protocol, priority=priority, timeout_ms=timeout_ms, logid=logid)
    return encode(inputs, priority=priority, timeout_ms=timeout_ms, logid=logid)


def open_front(
    protocol: str,
    *,
    http_request: Callable[..., Answer],
    rpc_url: str | None,
    timeout: float,
    token: str | None,
) -> Front:
    """The front of a protocol other than the HTTP API's; ValueError for a gRPC one without ``rpc_url``."""
    if protocol == "v2":
        return v2_http.V2Http(http_request)
    if protocol not in GRPC_PROTOCOLS:
        raise ValueError(f"no front for protocol {protocol!r}")
    if not rpc_url:
        raise ValueError(f"protocol {protocol!r} needs the server's gRPC address (rpc_url HOST:PORT, its rpc_port)")
    kind = paddle_grpc.PaddleGrpc if protocol == "grpc" else v2_grpc.V2Grpc
    return kind(rpc_url, timeout=timeout, token=token)
