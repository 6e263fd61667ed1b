"""What the waitress front refuses as soon as a request's headers are complete,
before it reads or buffers the body (waitress buffers a whole body, past
``inbuf_overflow`` in a temp file, before the app sees the request):

* a body for a route that needs a token (``auth.required_token``), without
  that token: 401 with ``WWW-Authenticate``;
* a body for a route that takes none (:mod:`serving.http.body_paths`): 413;
* a ``Content-Length`` over the app's body limit (``MAX_CONTENT_LENGTH``, the
  largest ``max_body_size`` served): 413. A chunked body has no length up
  front: waitress counts it as it arrives (chunk framing included) and it is
  refused once past the limit;
* a body the server-wide body budget (:mod:`serving.service.body_budget`,
  ``http.max_buffered_mb``) has no room for: 503 with ``Retry-After``. A
  request takes its ``Content-Length`` from the budget before its body is
  read (a chunked one, each read before it is stored) and gives it back when
  waitress closes the request.

All answers are the app's own JSON error shape (``error_body``) with
``Connection: close``. The 401 and 413 are what the app would answer
anyway, by the same rules; a request without a body is left to the app.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from waitress.parser import HTTPRequestParser
from waitress.utilities import Error, RequestEntityTooLarge, RequestHeaderFieldsTooLarge

from serving.errors import ServingError
from serving.http.body_paths import no_body_refusal, takes_body
from serving.service.auth import required_token, token_accepts, token_refusal
from serving.service.body_budget import BodyBudget
from serving.service.error_body import body_over_limit, error_document, error_headers
from serving.service.jsonio import dumps

log = logging.getLogger(__name__)

#: request line and headers together, at most (waitress's ``max_request_header_size``): both fronts
MAX_HEADER_BYTES = 256 << 10
#: header fields of one request, at most (Apache's and Tomcat's default is 100): both fronts
MAX_HEADER_FIELDS = 256


def waitress_body_limit(max_body_size: int) -> int:
    """waitress's ``max_request_body_size`` for a limit of ``max_body_size``:
    waitress refuses a body of *at least* its setting, the app one *over* its limit."""
    return max_body_size + 1


def app_body_limit(waitress_limit: int) -> int:
    """The inverse of :func:`waitress_body_limit`."""
    return waitress_limit - 1


@dataclass(frozen=True)
class FrontGate:
    """The tokens the front checks (None: that kind of route needs none)."""

    auth_token: str | None = None
    admin_token: str | None = None

    def refusal(self, path: str, authorization: str, has_body: bool) -> ServingError | None:
        """Why a request for ``path`` is refused before its body is read, or None."""
        if not has_body:
            return None
        token = required_token(path, auth_token=self.auth_token, admin_token=self.admin_token)
        if token is not None and not token_accepts(authorization, token):
            return token_refusal(path)  # the app's own 401
        if not takes_body(path):
            return no_body_refusal(path)
        return None


class FrontRefusal(Error):
    """A waitress error answered with the app's JSON error body."""

    def __init__(self, err: ServingError, path: str, authorization: str = ""):
        super().__init__(err.message)
        self.err = err
        self.path = path
        self.authorization = authorization
        self.code = err.status
        self.reason = HTTPStatus(err.status).phrase

    def to_response(self, ident: str | None = None) -> tuple[str, list[tuple[str, str]], bytes]:
        headers = [("Content-Type", "application/json"), *error_headers(self.err, self.authorization)]
        body = dumps(error_document(self.path, self.err), sort_keys=True) + b"\n"  # as the app writes it
        return f"{self.code} {self.reason}", headers, body


class GatedParser(HTTPRequestParser):
    """waitress's request parser, plus :class:`FrontGate`'s checks the moment
    the headers are complete (a 401 before a 413: the limit is no business of
    a caller without the token; a 413 before a 503: a body refused anyway
    takes nothing), and its body's claim on ``budget`` (None: no budget),
    given back by :meth:`close`."""

    error: Any = None  # waitress's: why the request is answered with an error

    def __init__(
        self,
        adj: Any,
        gate: FrontGate,
        on_refused: Callable[[], None] = lambda: None,
        budget: BodyBudget | None = None,
    ):
        super().__init__(adj)
        self.gate = gate
        self.on_refused = on_refused  # the channel drops the rest of the connection's input
        self.claim = budget.claim() if budget is not None else None

    def received(self, data: bytes) -> int:
        if self.chunked and not self.completed:  # each read of a chunked body is claimed before it is stored
            busy = self._no_room(self._chunked_need(data))
            if busy is not None:
                return self._refuse(busy, data)
        had_headers = self.headers_finished
        consumed = int(super().received(data))
        refusal: ServingError | None = None
        just_headers = self.headers_finished and not had_headers
        if just_headers and (self.error is None or self._too_large()):
            authorization = self.headers.get("AUTHORIZATION", "")
            refusal = self.gate.refusal(self.path, authorization, has_body=self.body_rcv is not None)
        if refusal is None and self._too_large():
            refusal = body_over_limit(app_body_limit(self.adj.max_request_body_size))
        if refusal is None and just_headers and self.error is None:
            refusal = self._no_room(self.content_length)
        if refusal is None:
            return consumed
        return self._refuse(refusal, data)

    def parse_header(self, header_plus: bytes) -> None:
        """waitress's, but 431 for more than :data:`MAX_HEADER_FIELDS` fields (a line each:
        without a bound, many tiny ones cost far more as parsed headers than on the wire)."""
        if header_plus.rstrip(b"\r\n").count(b"\n") > MAX_HEADER_FIELDS:  # the request line's end, one a field
            super().parse_header(b"GET / HTTP/1.0\r\n")  # as waitress does for a header over its size
            self.error = RequestHeaderFieldsTooLarge(f"more than {MAX_HEADER_FIELDS} header fields")
            self.completed = True
            return
        super().parse_header(header_plus)

    def close(self) -> None:
        """waitress's (the body's buffer), and the body's bytes back to the budget."""
        try:
            super().close()
        finally:
            if self.claim is not None:
                self.claim.release()

    def _no_room(self, nbytes: int) -> ServingError | None:
        """None when the body may hold ``nbytes`` in all (then taken from the budget), else the 503."""
        if self.claim is None or self.claim.grow_to(nbytes):
            return None
        return self.claim.budget.refusal()

    def _chunked_need(self, data: bytes) -> int:
        """What a chunked body holds once ``data`` is stored: at most all of it
        (framing included, as waitress counts), at most the body limit (past it: 413)."""
        return min(self.body_bytes_received + len(data), self.adj.max_request_body_size)

    def _refuse(self, refusal: ServingError, data: bytes) -> int:
        self.error = FrontRefusal(refusal, self.path, self.headers.get("AUTHORIZATION", ""))
        self.completed = True
        self.expect_continue = False  # else waitress sends 100 Continue and reopens the request
        self.on_refused()
        log.debug("refused before the body: %s %s (%d)", self.command, self.path[:128], refusal.status)
        # the rest of this read is the refused body: swallow it, not parse it as a next request
        return len(data)

    def _too_large(self) -> bool:
        return isinstance(self.error, RequestEntityTooLarge)
