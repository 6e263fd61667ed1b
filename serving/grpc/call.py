"""One gRPC call as the HTTP layer's checks see a request: its metadata as headers, its
deadline as a time limit, its cancellation as a client gone, its failure as a status."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, NoReturn

import grpc

from serving.errors import ServingError, Unauthorized
from serving.service.auth import TOKEN_ENV, token_accepts

# a failure's status: the HTTP status every ServingError carries, mapped as Triton and KServe answer
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


class CallHeaders:
    """A call's invocation metadata, looked up like HTTP headers (case-insensitive; the first value)."""

    def __init__(self, metadata: Any):
        self._values: dict[str, str] = {}
        for key, value in metadata or ():
            if isinstance(value, bytes):  # "-bin" keys: not a header the server reads
                continue
            self._values.setdefault(key.lower(), value)

    def get(self, key: str, /) -> str | None:
        return self._values.get(key.lower())


@dataclass(frozen=True)
class Call:
    """The facts of one call the front ends read: ``context`` is grpc's ServicerContext."""

    context: grpc.ServicerContext
    headers: CallHeaders

    @classmethod
    def of(cls, context: grpc.ServicerContext) -> Call:
        return cls(context, CallHeaders(context.invocation_metadata()))

    def check_token(self, token: str | None) -> None:
        """401 (UNAUTHENTICATED) unless the ``authorization`` metadata carries ``token`` (when one is set)."""
        if token is not None and not token_accepts(self.headers.get("authorization") or "", token):
            raise Unauthorized(f"missing or wrong bearer token (auth_token or {TOKEN_ENV}) in 'authorization' metadata")

    def timeout_ms(self, asked_ms: int | None) -> int | None:
        """The request's time limit: what it asked for, cut to the call's gRPC deadline."""
        remaining = self.context.time_remaining()
        if remaining is None or remaining > 1e9:  # no deadline (grpc reports a huge number)
            return asked_ms
        deadline_ms = max(1, math.floor(remaining * 1000))
        return deadline_ms if asked_ms is None else min(asked_ms, deadline_ms)

    def gone(self) -> Callable[[], bool]:
        """Whether the client went away (cancelled, or its deadline passed)."""
        return lambda: not self.context.is_active()

    def abort(self, err: ServingError) -> NoReturn:
        """End the call with ``err``'s status; its message as the details."""
        self.context.set_trailing_metadata(trailers(err))
        self.context.abort(grpc_code(err), err.message)
        raise AssertionError("unreachable: abort raises")  # pragma: no cover


def without_frames(err: ServingError) -> ServingError:
    """``err`` cut from the frames it was raised through (traceback, context, cause): kept past
    its ``except`` block, it forms a cycle with the failed call's locals (the message's bytes)
    that only the garbage collector frees, much later."""
    err.__traceback__ = None
    err.__context__ = err.__cause__ = None
    return err


def bytes_handler(service: str, methods: dict[str, tuple[Callable[..., Any], Any]]) -> grpc.GenericRpcHandler:
    """``service``'s methods (name: (method, response class)), each stream-unary on our side (the
    same wire as unary) with its message left as bytes: grpc reads nothing before the handler
    runs, which reads it under room in the body budget (:mod:`serving.grpc.message_room`)."""
    return grpc.method_handlers_generic_handler(
        service,
        {
            name: grpc.stream_unary_rpc_method_handler(method, response_serializer=response.SerializeToString)
            for name, (method, response) in methods.items()
        },
    )
