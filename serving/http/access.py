"""Whether a request may reach its route, checked before any route runs:

1. health probes (:data:`~serving.http.auth.OPEN_PATHS`): always;
2. ``Host`` not in ``security.allowed_hosts`` (when set): 400;
3. the page's files: no token, no Origin check (they hold no data);
4. no ``auth_token``: a browser request from another origin is 403;
5. admin routes: the admin token (none set: 403, reload is SIGHUP-only);
   other routes: the prediction token; missing or wrong: 401.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from serving.errors import BadRequest, Forbidden
from serving.http.auth import ADMIN_PATHS, ADMIN_TOKEN_ENV, OPEN_PATHS, required_token, token_accepts, token_refusal
from serving.http.origins import AccessPolicy


class HeaderLookup(Protocol):
    def get(self, key: str, /) -> str | None: ...


class RequestView(Protocol):
    """What the check reads of a request (Flask's, or the asyncio front's own view)."""

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
        """Raise the refusal of ``req`` (400, 401, 403), or return: it may go on."""
        path = req.path
        if path in OPEN_PATHS:
            return
        why = self.policy.host_refusal(req.headers.get("Host"))
        if why is not None:
            raise BadRequest(why)
        if page_file:
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
        admin = path in ADMIN_PATHS
        if admin and token is None:
            raise Forbidden(
                f"reload over HTTP needs an admin token (admin_token in the config or {ADMIN_TOKEN_ENV}); "
                "without one, send the server SIGHUP"
            )
        if token is not None and not token_accepts(req.headers.get("Authorization") or "", token):
            raise token_refusal(path)
