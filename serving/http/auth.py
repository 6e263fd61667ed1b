"""The bearer token the server requires: ``auth_token`` in the config, else
the ``BATCHLINE_AUTH_TOKEN`` environment variable. ``BATCHLINE_TOKEN`` (the
name the client once read) is accepted with a warning."""

from __future__ import annotations

import hmac
import logging
import os
from collections.abc import Mapping

log = logging.getLogger(__name__)

TOKEN_ENV = "BATCHLINE_AUTH_TOKEN"
OLD_TOKEN_ENV = "BATCHLINE_TOKEN"


def auth_token(configured: str | None, environ: Mapping[str, str] | None = None) -> str | None:
    """The token to require, or None for no authentication."""
    if configured:
        return configured
    env = os.environ if environ is None else environ
    if env.get(TOKEN_ENV):
        return env[TOKEN_ENV]
    if env.get(OLD_TOKEN_ENV):
        log.warning("%s is deprecated: set %s instead (used as the server's token now)", OLD_TOKEN_ENV, TOKEN_ENV)
        return env[OLD_TOKEN_ENV]
    return None


def bearer_matches(header: str, token: str) -> bool:
    """Whether an ``Authorization`` header carries ``token`` (constant-time compare)."""
    given = header[7:] if header.startswith("Bearer ") else ""
    return hmac.compare_digest(given.encode(), token.encode())
