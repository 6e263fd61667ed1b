"""What a door refuses from a request's headers, before it reads the body (the HTTP
server and Ray's ingress), and the server's header limits. A refusal is what the app
would answer by the same rules, in its JSON error shape: only sooner."""

from __future__ import annotations

from dataclasses import dataclass
from http import HTTPStatus

from serving.config.schema import HttpConf
from serving.errors import ServingError
from serving.http.access import no_body_refusal, takes_body
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
