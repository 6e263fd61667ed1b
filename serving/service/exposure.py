"""Refuse to serve a non-loopback address with no token, before any model loads: anyone
who reaches it could run predictions. Users behind their own gateway opt out with
``--insecure``, ``security: {insecure: true}`` or ``BATCHLINE_INSECURE=1``."""

from __future__ import annotations

import ipaddress
import logging
import os
from collections.abc import Mapping

from serving.service.auth import TOKEN_ENV

log = logging.getLogger(__name__)

INSECURE_ENV = "BATCHLINE_INSECURE"
_TRUE = frozenset({"1", "true", "yes", "on"})


class OpenBindRefused(Exception):
    """The server would listen beyond this machine with no token; the message says what to do."""


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 (also IPv4-mapped, bracketed) or ``localhost``; any
    other name, a wildcard (``0.0.0.0``, ``::``, ``""``) or a LAN address is not."""
    text = host.strip().strip("[]")
    if text.lower().rstrip(".") == "localhost":
        return True
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return False  # a name: it may resolve to anything
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


def insecure_env(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``BATCHLINE_INSECURE`` says yes (1, true, yes, on)."""
    env = os.environ if environ is None else environ
    return env.get(INSECURE_ENV, "").strip().lower() in _TRUE


def check_bind(host: str, *, token: str | None, insecure: bool, environ: Mapping[str, str] | None = None) -> None:
    """Raise :class:`OpenBindRefused` when ``host`` is not loopback, no token is
    set and no opt-out is given (``insecure``: ``--insecure`` or ``security.insecure``;
    or ``BATCHLINE_INSECURE`` in ``environ``); warn when an opt-out lets it through."""
    if token or is_loopback(host):
        return
    if insecure or insecure_env(environ):
        log.warning(
            "serving %r with no token (insecure opt-out): anyone who reaches this address can run "
            "predictions; the gateway in front must authenticate",
            host,
        )
        return
    raise OpenBindRefused(
        f"refusing to serve on {host!r} without a token: anyone who can reach it could run predictions. "
        f"Set auth_token in the config or {TOKEN_ENV} in the environment, or bind 127.0.0.1; "
        f"behind your own gateway, opt out with `batchline serve --insecure`, `security: {{insecure: true}}` "
        f"in the config, or {INSECURE_ENV}=1"
    )
