"""Origins and host names in one canonical form, for ``security`` and the HTTP layer's checks."""

from __future__ import annotations

import ipaddress
import re

DEFAULT_PORTS = {"http": 80, "https": 443}
_HOST = r"\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+"
_ORIGIN = re.compile(rf"([A-Za-z][A-Za-z0-9+.-]*)://({_HOST})(?::([0-9]{{1,5}}))?")
_HOST_PORT = re.compile(rf"({_HOST})(?::([0-9]{{1,5}}))?")
_NAME = re.compile(r"(\*\.)?[a-z0-9_-]+(\.[a-z0-9_-]+)*")


def _host(text: str) -> str | None:
    """Lower case, without IPv6 brackets or a trailing dot; None when not a host."""
    if text.startswith("["):
        try:
            return str(ipaddress.IPv6Address(text[1:-1]))
        except ValueError:
            return None
    host = text.lower().rstrip(".")
    return host or None


def normalize_origin(value: str) -> str | None:
    """``scheme://host:port`` (default ports of http/https written out, lower
    case), or None when ``value`` is no origin (``null``, a path, user info ...)."""
    m = _ORIGIN.fullmatch(value.strip())
    if m is None:
        return None
    scheme, host, port = m.group(1).lower(), _host(m.group(2)), m.group(3)
    if host is None:
        return None
    number = int(port) if port is not None else DEFAULT_PORTS.get(scheme)
    if number is not None and not 0 < number < 65536:
        return None
    shown = f"[{host}]" if ":" in host else host
    return f"{scheme}://{shown}" + (f":{number}" if number is not None else "")


def host_of(header_value: str) -> str | None:
    """The host name of a ``Host`` header (``name[:port]``), canonical, or None when malformed."""
    m = _HOST_PORT.fullmatch(header_value.strip())
    return None if m is None else _host(m.group(1))


def normalize_host_pattern(value: str) -> str | None:
    """A host name, an IP address or ``*.`` + a name, canonical; None when it is none of these."""
    text = value.strip()
    try:
        return str(ipaddress.ip_address(text.strip("[]")))
    except ValueError:
        pass
    text = text.lower().rstrip(".")
    return text if _NAME.fullmatch(text) else None


def host_matches(host: str, pattern: str) -> bool:
    """``host`` (canonical) is ``pattern``, or below it for ``*.name`` (the name itself is not)."""
    if pattern.startswith("*."):
        return host.endswith(pattern[1:])
    return host == pattern
