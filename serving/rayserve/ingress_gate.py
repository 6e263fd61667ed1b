"""What the ingress refuses before it reads a request's body (the token and body-path rule
first, so a refused body takes no budget; the body limit; the body budget), and the capped
read. Answering at once also ends Ray's own buffering of the body.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response

from serving.errors import BadRequest, ServingError
from serving.http.early_refusals import FrontGate
from serving.http.json_answer import json_body
from serving.service.body_budget import BodyBudget, Claim, buffered_bytes
from serving.service.error_body import body_over_limit, error_document, error_headers


@dataclass(frozen=True)
class Admitted:
    """A request's body, read whole, and its claim on the body budget (to release once the app is done)."""

    body: bytes
    claim: Claim


class IngressGate:
    """The gate's rule, the app's body limit (read per request) and the replica's body budget."""

    def __init__(self, gate: FrontGate, body_limit: Callable[[], int], max_buffered_mb: int | None):
        self.gate = gate
        self._body_limit = body_limit
        self._max_buffered_mb = max_buffered_mb
        self.budget = BodyBudget(0)
        self._sized_for = -1  # the body limit the budget was last sized for
        self.body_limit()

    def body_limit(self) -> int:
        """The app's body limit now, the budget resized when it changed (one event loop calls this)."""
        limit = self._body_limit()
        if limit != self._sized_for:
            self.budget.resize(buffered_bytes(self._max_buffered_mb, limit))
            self._sized_for = limit
        return limit

    async def admit(self, request: Request, path: str) -> Admitted | Response:
        """The body of ``request`` (for the app route ``path``) and its claim, or the refusal to send instead."""
        authorization = request.headers.get("authorization", "")
        try:
            length = declared_length(request.headers.get("content-length"))
        except ValueError:
            return refusal(path, BadRequest("Content-Length is not a byte count"))
        has_body = bool(length) or "transfer-encoding" in request.headers
        refused = self.gate.refusal(path, authorization, has_body)
        if refused is not None:  # before the limit and the budget: a refused body takes nothing
            return refusal(path, refused, authorization)
        limit = self.body_limit()
        if length is not None and length > limit:
            return refusal(path, body_over_limit(limit))
        claim = self.budget.claim()
        if length and not claim.grow_to(length):
            return refusal(path, self.budget.refusal())
        try:
            body = await read_claimed(request, limit, claim)
        except BaseException:  # the client went away (ClientDisconnect), or Ray cancelled the call
            claim.release()
            raise
        if isinstance(body, ServingError):
            claim.release()
            return refusal(path, body)
        return Admitted(body, claim)


def declared_length(value: str | None) -> int | None:
    """A ``Content-Length`` header's byte count (None when absent); ValueError when it is none."""
    if value is None:
        return None
    text = value.strip()
    if not text.isdigit():  # no sign, no spaces inside, no list of lengths
        raise ValueError(value)
    return int(text)


async def read_claimed(request: Request, limit: int, claim: Claim) -> bytes | ServingError:
    """The body, or why it was refused part way: 413 past ``limit`` bytes, 503 once ``claim``
    cannot grow to hold it. One bytearray, not a list of Ray's chunks: tiny chunks would
    each cost an object many times their size."""
    body = bytearray()
    async for chunk in request.stream():
        size = len(body) + len(chunk)
        if size > limit:
            return body_over_limit(limit)
        if not claim.grow_to(size):
            return claim.budget.refusal()
        body += chunk
    return bytes(body)


def refusal(path: str, err: ServingError, authorization: str = "") -> Response:
    """``err`` answered as the app answers it, before the body is read."""
    headers = {"Connection": "close", **dict(error_headers(err, authorization))}
    body = json_body(error_document(path, err))  # as the app writes it
    return Response(body, status_code=err.status, headers=headers, media_type="application/json")
