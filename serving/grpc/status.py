"""A failure's gRPC status: the HTTP status every ServingError carries, mapped once
(the Open Inference Protocol's codes, as Triton and KServe answer them)."""

from __future__ import annotations

from types import MappingProxyType

import grpc

from serving.errors import ServingError

CODE_BY_HTTP_STATUS = MappingProxyType(
    {
        400: grpc.StatusCode.INVALID_ARGUMENT,
        401: grpc.StatusCode.UNAUTHENTICATED,
        403: grpc.StatusCode.PERMISSION_DENIED,
        404: grpc.StatusCode.NOT_FOUND,
        405: grpc.StatusCode.UNIMPLEMENTED,
        409: grpc.StatusCode.FAILED_PRECONDITION,
        413: grpc.StatusCode.RESOURCE_EXHAUSTED,
        415: grpc.StatusCode.INVALID_ARGUMENT,
        422: grpc.StatusCode.INVALID_ARGUMENT,
        499: grpc.StatusCode.CANCELLED,
        500: grpc.StatusCode.INTERNAL,
        503: grpc.StatusCode.UNAVAILABLE,
        504: grpc.StatusCode.DEADLINE_EXCEEDED,
    }
)

#: trailing metadata keys: the HTTP status the same request gets over HTTP, and Retry-After
HTTP_STATUS_KEY = "batchline-http-status"
RETRY_AFTER_KEY = "retry-after"


def grpc_code(err: ServingError) -> grpc.StatusCode:
    return CODE_BY_HTTP_STATUS.get(err.status, grpc.StatusCode.UNKNOWN)


def trailers(err: ServingError) -> tuple[tuple[str, str], ...]:
    """What a client can read besides the code: the HTTP status, and when to retry (503)."""
    found: tuple[tuple[str, str], ...] = ((HTTP_STATUS_KEY, str(err.status)),)
    if err.retry_after is not None:
        found += ((RETRY_AFTER_KEY, str(max(1, round(err.retry_after)))),)
    return found
