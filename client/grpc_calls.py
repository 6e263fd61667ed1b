"""The client's gRPC plumbing, shared by its gRPC protocols: one plaintext channel
to a server's ``rpc_port`` (``HOST:PORT``), calls sent pre-serialized with the
bearer token as ``authorization`` metadata and the client's timeout as the
deadline, and a failed call as a :class:`~client.answers.PipelineError` carrying
the HTTP status the same request gets over HTTP.

A batchline server names that status in the ``batchline-http-status`` trailer
(serving/grpc/call.py) and ``retry-after`` with a 503. Another server (Triton)
sends only a code: it is mapped back as the Open Inference Protocol maps HTTP
statuses to codes. A call that got no answer from a server (connection refused,
the client's own deadline) is status 0, as over HTTP.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import grpc

from .answers import PipelineError, retry_after_seconds

HTTP_STATUS_KEY = "batchline-http-status"  # the server's trailer (serving/grpc/call.py)
RETRY_AFTER_KEY = "retry-after"
Metadata = tuple[tuple[str, str], ...]

# codes only a server sends; UNAVAILABLE, DEADLINE_EXCEEDED and CANCELLED without the
# trailer are what grpc itself reports when no server answered, so they stay status 0
STATUS_BY_CODE = {
    grpc.StatusCode.INVALID_ARGUMENT: 400,
    grpc.StatusCode.UNAUTHENTICATED: 401,
    grpc.StatusCode.PERMISSION_DENIED: 403,
    grpc.StatusCode.NOT_FOUND: 404,
    grpc.StatusCode.FAILED_PRECONDITION: 409,
    grpc.StatusCode.RESOURCE_EXHAUSTED: 413,
    grpc.StatusCode.UNIMPLEMENTED: 501,
    grpc.StatusCode.INTERNAL: 500,
    grpc.StatusCode.UNKNOWN: 500,
}


def rpc_target(rpc_url: str) -> str:
    """``HOST:PORT`` from ``HOST:PORT`` or ``grpc://HOST:PORT``; ValueError for anything else."""
    target = rpc_url.split("://", 1)[1] if "://" in rpc_url else rpc_url
    host, _, port = target.rstrip("/").rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"a gRPC address is HOST:PORT (the server's rpc_port), got {rpc_url!r}")
    return f"{host}:{port}"


def route_metadata(route_key: str | None, route_header: str) -> Metadata:
    """The sticky routing key as metadata: gRPC metadata keys are lowercase header names."""
    return () if route_key is None else ((route_header.lower(), str(route_key)),)


def trailer(call: Any, key: str) -> str | None:
    """A trailing metadata value of a finished call (or of its RpcError), or None."""
    trailers: Sequence[Any] = getattr(call, "trailing_metadata", lambda: None)() or ()
    return next((str(value) for k, value in trailers if k == key), None)


def retry_after(call: Any) -> float | None:
    """The ``retry-after`` trailer in seconds, or None."""
    return retry_after_seconds(trailer(call, RETRY_AFTER_KEY))


def rpc_error(err: grpc.RpcError) -> PipelineError:
    """The PipelineError of a failed call (see the module docstring)."""
    code = err.code() if hasattr(err, "code") else grpc.StatusCode.UNKNOWN
    details = (err.details() if hasattr(err, "details") else None) or str(code)
    named = trailer(err, HTTP_STATUS_KEY)
    if named is not None and named.isdigit():
        status = int(named)
    else:
        status = STATUS_BY_CODE.get(code, 0)
    message = details if status else f"no answer ({code.name}): {details}"
    return PipelineError(status, message, retry_after=retry_after(err), body=details)


class GrpcCalls:
    """Unary calls on one channel (thread-safe, as grpc's channels are)."""

    def __init__(self, rpc_url: str, *, timeout: float, token: str | None):
        self.timeout = timeout
        self._metadata: Metadata = (("authorization", f"Bearer {token}"),) if token else ()
        # answers are as large as the server makes them (a page's OCR lines): no client-side cap
        options = [("grpc.max_receive_message_length", -1), ("grpc.max_send_message_length", -1)]
        self._channel = grpc.insecure_channel(rpc_target(rpc_url), options=options)

    def unary(self, method: str, read: Callable[[bytes], Any]) -> Callable[[bytes, Metadata], tuple[Any, Any]]:
        """``call(request_bytes, metadata)`` of ``method``: the answer read by ``read`` and the
        finished call (its trailers), or PipelineError."""
        # no request serializer: requests are serialized once, before they are sent (a load test's payloads)
        stub: Any = self._channel.unary_unary(method, request_serializer=None, response_deserializer=read)

        def call(request: bytes, metadata: Metadata) -> tuple[Any, Any]:
            try:
                return stub.with_call(request, timeout=self.timeout, metadata=self._metadata + metadata)
            except grpc.RpcError as err:
                raise rpc_error(err) from err

        return call

    def close(self) -> None:
        self._channel.close()
