"""Who may call what, the one rule every HTTP layer applies (the app, and the fronts that
refuse before the body): ``auth_token`` (or ``BATCHLINE_AUTH_TOKEN``) for every route but
the probes and the page's files; ``admin_token`` (or ``BATCHLINE_ADMIN_TOKEN``) for the
admin routes, refused (403) without one, so a reload stays SIGHUP-only. Tokens are
compared in constant time and never logged or echoed."""

from __future__ import annotations

import hmac
import os
from collections.abc import Mapping

from serving.errors import Unauthorized

TOKEN_ENV = "BATCHLINE_AUTH_TOKEN"
ADMIN_TOKEN_ENV = "BATCHLINE_ADMIN_TOKEN"

# need no token, no Origin and no Host check: probes come from the cluster, by pod IP
OPEN_PATHS = frozenset({"/health/live", "/health/ready", "/v2/health/live", "/v2/health/ready"})
# need the admin token, never the prediction token
ADMIN_PATHS = frozenset({"/admin/reload"})

REALM = 'Bearer realm="batchline"'
_SCHEME = "bearer"


def auth_token(configured: str | None, environ: Mapping[str, str] | None = None) -> str | None:
    """The token predictions need, or None for no authentication."""
    return configured or (os.environ if environ is None else environ).get(TOKEN_ENV) or None


def admin_token(configured: str | None, environ: Mapping[str, str] | None = None) -> str | None:
    """The token the admin routes need, or None: they are refused."""
    return configured or (os.environ if environ is None else environ).get(ADMIN_TOKEN_ENV) or None


def presented_token(header_value: str) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header (scheme in any
    case, spaces around either part tolerated), or None when it carries none."""
    scheme, _, token = header_value.strip().partition(" ")
    if scheme.lower() != _SCHEME:
        return None
    return token.strip() or None


def token_accepts(header_value: str, token: str) -> bool:
    """Whether an ``Authorization`` header value carries ``token`` (constant-time compare)."""
    given = presented_token(header_value) or ""
    return hmac.compare_digest(given.encode(), token.encode())


def required_token(path: str, *, auth_token: str | None, admin_token: str | None) -> str | None:
    """The token a request for ``path`` (without the app's mount prefix) must carry, or None.
    The page's files need none either, but carry no body, so the fronts leave them to the app."""
    if path in OPEN_PATHS:
        return None
    if path in ADMIN_PATHS:
        return admin_token
    return auth_token


def token_refusal(path: str) -> Unauthorized:
    """The 401 for a missing or wrong token on ``path``: one wording for the app and every front."""
    admin = path in ADMIN_PATHS
    which = f"admin token (admin_token or {ADMIN_TOKEN_ENV})" if admin else f"token (auth_token or {TOKEN_ENV})"
    return Unauthorized(f"missing or wrong bearer {which}")


def challenge(header_value: str | None) -> str:
    """The ``WWW-Authenticate`` value of a 401 (RFC 6750): ``invalid_token`` when one was sent."""
    if header_value and presented_token(header_value) is not None:
        return f'{REALM}, error="invalid_token"'
    return REALM
