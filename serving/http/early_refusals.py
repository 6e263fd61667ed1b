"""What the HTTP front refuses as soon as a request's headers are complete,
before it reads or buffers the body:

* a body for a route that needs a token (``auth.required_token``), without
  that token: 401 with ``WWW-Authenticate``;
* a body for a route that takes none (:mod:`serving.http.body_paths`): 413;
* (in :mod:`serving.http.http_connection`) a header block or a body over its
  limit, and a body the server-wide body budget has no room for.

All answers are the app's own JSON error shape (``error_body``) with
``Connection: close``. The 401 and 413 are what the app would answer
anyway, by the same rules; a request without a body is left to the app.
"""

from __future__ import annotations

from dataclasses import dataclass
from http import HTTPStatus

from serving.config.schema import HttpConf
from serving.errors import ServingError
from serving.http.body_paths import no_body_refusal, takes_body
from serving.http.json_answer import json_body
from serving.service.auth import required_token, token_accepts, token_refusal
from serving.service.error_body import error_document, error_headers

#: request line and headers together, at most (waitress's ``max_request_header_size``)
MAX_HEADER_BYTES = 256 << 10
#: header fields of one request, at most (Apache's and Tomcat's default is 100)
MAX_HEADER_FIELDS = 256


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


def refusal_parts(err: ServingError, path: str, authorization: str = "") -> tuple[str, list[tuple[str, str]], bytes]:
    """A refusal's status line, headers and body, the app's own JSON error answer."""
    headers = [("Content-Type", "application/json"), *error_headers(err, authorization)]
    body = json_body(error_document(path, err))  # as the app writes it
    return f"{err.status} {HTTPStatus(err.status).phrase}", headers, body


def cleanup_interval(http: HttpConf) -> float:
    """How often the front checks its connections: often enough that a timeout
    is honoured within a quarter of it, at most every 0.5 s."""
    return max(0.5, min(http.channel_timeout_s, http.request_timeout_s, http.header_timeout_s) / 4)
