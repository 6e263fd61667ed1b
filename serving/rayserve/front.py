"""What the ingress refuses before it reads a request's body, and the capped read.

Ray Serve's proxy hands an ingress replica each request while its body may
still be arriving. Before reading any of it, the ingress answers

* 401, with ``WWW-Authenticate``, a body for a route that needs a token, sent
  without that token (:class:`serving.http.front_gate.FrontGate`: the rule the
  waitress front and the app apply);
* 413 a ``Content-Length`` over the app's body limit (``MAX_CONTENT_LENGTH``,
  the largest ``max_body_size`` served);

then reads at most the limit + 1 bytes: a body without a length (chunked)
that goes past the limit is 413 as well. The answers are the app's own JSON
error bodies, with ``Connection: close`` (the rest of the body stays unread).
A request without a body is left to the app, which applies the same rules.

Ray itself keeps receiving what the client sends while the ingress decides
(its proxy and the replica pull the body in the background, unbounded):
answering at once ends the request, and that buffering with it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response

from serving.errors import BadRequest, ServingError
from serving.http.error_body import body_over_limit, error_document, error_headers
from serving.http.front_gate import FrontGate
from serving.http.jsonio import dumps


@dataclass(frozen=True)
class IngressFront:
    """The token rule and the body limit (read per request: it is the app's setting)."""

    gate: FrontGate
    body_limit: Callable[[], int]

    async def admit(self, request: Request, path: str) -> bytes | Response:
        """The body of ``request`` (for the app route ``path``), or the refusal to send instead."""
        authorization = request.headers.get("authorization", "")
        try:
            length = declared_length(request.headers.get("content-length"))
        except ValueError:
            return refusal(path, BadRequest("Content-Length is not a byte count"))
        has_body = bool(length) or "transfer-encoding" in request.headers
        unauthorized = self.gate.refusal(path, authorization, has_body)
        if unauthorized is not None:
            return refusal(path, unauthorized, authorization)
        limit = self.body_limit()
        if length is not None and length > limit:
            return refusal(path, body_over_limit(limit))
        body = await read_capped(request, limit)
        if body is None:
            return refusal(path, body_over_limit(limit))
        return body


def declared_length(value: str | None) -> int | None:
    """A ``Content-Length`` header's byte count (None when absent); ValueError when it is none."""
    if value is None:
        return None
    text = value.strip()
    if not text.isdigit():  # no sign, no spaces inside, no list of lengths
        raise ValueError(value)
    return int(text)


async def read_capped(request: Request, limit: int) -> bytes | None:
    """The body, or None once more than ``limit`` bytes arrived (no more are pulled;
    what is held never exceeds ``limit`` plus one received chunk)."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def refusal(path: str, err: ServingError, authorization: str = "") -> Response:
    """``err`` answered as the app answers it, before the body is read."""
    headers = {"Connection": "close", **dict(error_headers(err, authorization))}
    body = dumps(error_document(path, err), sort_keys=True) + b"\n"  # as the app writes it
    return Response(body, status_code=err.status, headers=headers, media_type="application/json")
