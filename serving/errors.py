"""Status-carrying errors: the one place where a failure gets its HTTP status, which is also
the Paddle answer's ``err_no``. Anything else escaping an op becomes a 500
(:func:`as_serving_error`), its traceback logged, never sent.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from types import MappingProxyType
from typing import ClassVar, TypeVar

E = TypeVar("E", bound="ServingError")


class ServingError(Exception):
    """Base class: a request failed with an HTTP status and a message."""

    status: ClassVar[int] = 500

    def __init__(self, message: str, *, retry_after: float | None = None):
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after

    @property
    def err_no(self) -> int:
        """Paddle Serving's ``err_no``: the HTTP status (non-zero means failure)."""
        return self.status

    def with_prefix(self: E, prefix: str) -> E:
        """A copy of this error (same class, status and Retry-After) whose message starts with ``prefix``."""
        clone = copy.copy(self)
        clone.message = prefix + self.message
        clone.args = (clone.message,)
        return clone

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"{type(self).__name__}({self.status}, {self.message!r})"


class BadRequest(ServingError):
    """The request or one of its inputs is malformed (400)."""

    status = 400


class Unauthorized(ServingError):
    """Missing or wrong bearer token (401)."""

    status = 401


class Forbidden(ServingError):
    """The caller may not do this here, e.g. reload over HTTP with no token configured (403)."""

    status = 403


class NotFound(ServingError):
    """Unknown pipeline or route (404)."""

    status = 404


class MethodNotAllowed(ServingError):
    """A known route called with the wrong HTTP method (405)."""

    status = 405


class PayloadTooLarge(ServingError):
    """Body, image or item count over a configured limit (413)."""

    status = 413


class UnsupportedMediaType(ServingError):
    """A body in a content type the route does not take (415)."""

    status = 415


class Conflict(ServingError):
    """The request cannot be carried out in the server's current state, e.g. a reload while one runs (409)."""

    status = 409


class InvalidConfig(ServingError):
    """A config given to the running server (reload) failed validation; nothing changed (422)."""

    status = 422


class ClientDisconnected(ServingError):
    """The client closed the connection; its items are dropped (nginx's 499)."""

    status = 499


class InternalError(ServingError):
    """An unexpected fault inside the server (500)."""

    status = 500


class Overloaded(ServingError):
    """Admission refused: the server is at ``max_queue_size`` (503 + Retry-After)."""

    status = 503

    def __init__(self, message: str = "server overloaded, retry later", *, retry_after: float | None = 1.0):
        super().__init__(message, retry_after=retry_after)


class ShuttingDown(Overloaded):
    """The server is draining and accepts no new work (503 + Retry-After)."""

    def __init__(self, message: str = "server is shutting down", *, retry_after: float | None = 5.0):
        super().__init__(message, retry_after=retry_after)


class InstanceRestarting(Overloaded):
    """The predictor process a batch ran on died or is being restarted (503 + Retry-After)."""

    def __init__(self, message: str = "predictor process restarting, retry later", *, retry_after: float | None = 1.0):
        super().__init__(message, retry_after=retry_after)


class DeadlineExceeded(ServingError):
    """The request's deadline passed before it finished (504)."""

    status = 504


_BY_STATUS: Mapping[int, type[ServingError]] = MappingProxyType(
    {
        cls.status: cls
        for cls in (
            BadRequest,
            Unauthorized,
            Forbidden,
            NotFound,
            MethodNotAllowed,
            PayloadTooLarge,
            UnsupportedMediaType,
            Conflict,
            InvalidConfig,
            InternalError,
            Overloaded,
            DeadlineExceeded,
        )
    }
)


def error_for_status(status: int, message: str) -> ServingError:
    """The error for a status from outside our code; unlisted 4xx become 400, anything else 500."""
    cls = _BY_STATUS.get(status) or (BadRequest if 400 <= status < 500 else InternalError)
    return cls(message)


def as_serving_error(exc: BaseException) -> ServingError:
    """Return ``exc`` if it already carries a status, else wrap it as a 500."""
    if isinstance(exc, ServingError):
        return exc
    return InternalError(f"internal error: {type(exc).__name__}: {exc}")
