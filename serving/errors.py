"""Status-carrying errors: the one place where a failure gets its HTTP status.

Ops and the engine raise these; the HTTP layer maps ``status`` to the response
code and ``message`` to ``err_msg``. Any other exception escaping an op is
wrapped by :func:`as_serving_error` into a 500 without leaking a traceback to
the client (the traceback is logged).
"""
from __future__ import annotations


class ServingError(Exception):
    """Base class: a request failed with an HTTP status and a message."""

    status = 500
    err_no = 1  # Paddle Serving's ``err_no``; non-zero means failure

    def __init__(self, message: str, *, retry_after: float | None = None):
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"{type(self).__name__}({self.status}, {self.message!r})"


class BadRequest(ServingError):
    """The request or one of its inputs is malformed (400)."""

    status = 400


class Unauthorized(ServingError):
    """Missing or wrong bearer token (401)."""

    status = 401


class NotFound(ServingError):
    """Unknown pipeline or route (404)."""

    status = 404


class PayloadTooLarge(ServingError):
    """Body, image or item count over a configured limit (413)."""

    status = 413


class Overloaded(ServingError):
    """Admission refused: the server is at ``max_queue_size`` (503 + Retry-After)."""

    status = 503

    def __init__(self, message: str = "server overloaded, retry later", *, retry_after: float = 1.0):
        super().__init__(message, retry_after=retry_after)


class ShuttingDown(Overloaded):
    """The server is draining and accepts no new requests (503)."""

    def __init__(self, message: str = "server is shutting down", *, retry_after: float = 5.0):
        super().__init__(message, retry_after=retry_after)


class DeadlineExceeded(ServingError):
    """The request's deadline passed before it finished (504)."""

    status = 504


class ClientDisconnected(ServingError):
    """The client closed the connection; its items are dropped (nginx's 499)."""

    status = 499


class InternalError(ServingError):
    """An unexpected fault inside the server (500)."""

    status = 500


def as_serving_error(exc: BaseException) -> ServingError:
    """Return ``exc`` if it already carries a status, else wrap it as a 500."""
    if isinstance(exc, ServingError):
        return exc
    return InternalError(f"internal error: {type(exc).__name__}: {exc}")
