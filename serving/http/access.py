"""Whether a request may reach its route, checked before any route runs, in this order:
health probes always pass; a ``Host`` not allowed is 400; the page's files pass; without
``auth_token``, a browser request from another origin is 403; a missing or wrong token 401;
a body on a route that takes none 413 (as the fronts refuse it); admin routes without an
admin token set 403."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from serving.errors import BadRequest, Forbidden, PayloadTooLarge
from serving.http.origins import AccessPolicy
from serving.service.auth import ADMIN_PATHS, ADMIN_TOKEN_ENV, OPEN_PATHS, required_token, token_accepts, token_refusal

#: how the path of every route that reads a body ends: a body sent elsewhere could only be
#: meant to cost the server, so every door refuses it 413 from the headers (after the token)
BODY_ROUTE_ENDS = ("/prediction", "/predict", "/infer")


def takes_body(path: str) -> bool:
    """Whether a request for ``path`` (without the app's mount prefix) may carry a body."""
    return path.endswith(BODY_ROUTE_ENDS)


def no_body_refusal(path: str) -> PayloadTooLarge:
    return PayloadTooLarge(f"{path[:128]} takes no request body")


class HeaderLookup(Protocol):
    def get(self, key: str, /) -> str | None: ...


class RequestView(Protocol):
    """What the check reads of a request (werkzeug's)."""

    @property
    def path(self) -> str: ...

    @property
    def scheme(self) -> str: ...

    @property
    def headers(self) -> HeaderLookup: ...


@dataclass(frozen=True)
class Access:
    auth_token: str | None
    admin_token: str | None
    policy: AccessPolicy

    def check(self, req: RequestView, *, page_file: bool) -> None:
        """Raise the refusal of ``req`` (400, 401, 403, 413), or return: it may go on."""
        path = req.path
        body_refused = _has_body(req.headers) and not takes_body(path)
        if path in OPEN_PATHS:
            if body_refused:
                raise no_body_refusal(path)
            return
        why = self.policy.host_refusal(req.headers.get("Host"))
        if why is not None:
            raise BadRequest(why)
        if page_file:
            if body_refused:
                raise no_body_refusal(path)
            return
        if not self.auth_token:
            why = self.policy.origin_refusal(
                scheme=req.scheme,
                host_header=req.headers.get("Host"),
                origin=req.headers.get("Origin"),
                fetch_site=req.headers.get("Sec-Fetch-Site"),
            )
            if why is not None:
                raise Forbidden(why)
        token = required_token(path, auth_token=self.auth_token, admin_token=self.admin_token)
        if token is not None and not token_accepts(req.headers.get("Authorization") or "", token):
            raise token_refusal(path)
        if body_refused:  # the fronts' order: the token, then the body
            raise no_body_refusal(path)
        if path in ADMIN_PATHS and token is None:
            raise Forbidden(
                f"reload over HTTP needs an admin token (admin_token in the config or {ADMIN_TOKEN_ENV}); "
                "without one, send the server SIGHUP"
            )


def _has_body(headers: HeaderLookup) -> bool:
    """Whether the request says it carries a body (a length over 0, or a chunked one)."""
    length = (headers.get("Content-Length") or "").strip().lstrip("0")
    return bool(length) or bool(headers.get("Transfer-Encoding"))
