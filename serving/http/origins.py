"""The browser checks of ``security:``. ``allowed_hosts`` (400) stops DNS rebinding. With
no token, a browser request must come from the server's own origin or ``allowed_origins``
(403): a page elsewhere can make a browser send a simple POST. ``Sec-Fetch-Site`` decides
when present, else ``Origin``; a request with neither is no browser page's and passes."""

from __future__ import annotations

from dataclasses import dataclass

from serving.config.netloc import host_matches, host_of, normalize_origin
from serving.config.schema import SecurityConf

CROSS_ORIGIN_REFUSAL = (
    "a browser request from another origin, to a server without a token: refused; "
    "set auth_token, or list the page's origin in security.allowed_origins"
)
_OTHER_ORIGIN = frozenset({"cross-site", "same-site"})  # same-site: a sibling subdomain, still another origin


@dataclass(frozen=True)
class AccessPolicy:
    """The allow-lists of one server, canonical (see :mod:`serving.config.netloc`)."""

    allowed_origins: frozenset[str] = frozenset()
    allowed_hosts: tuple[str, ...] = ()

    @classmethod
    def of(cls, conf: SecurityConf) -> AccessPolicy:
        return cls(frozenset(conf.allowed_origins), tuple(conf.allowed_hosts))

    def host_refusal(self, host_header: str | None) -> str | None:
        """Why a request with this ``Host`` is refused (400), or None."""
        if not self.allowed_hosts:
            return None
        host = host_of(host_header or "")
        if host is not None and any(host_matches(host, p) for p in self.allowed_hosts):
            return None
        return "Host not served here (not in security.allowed_hosts)"

    def origin_refusal(
        self, *, scheme: str, host_header: str | None, origin: str | None, fetch_site: str | None
    ) -> str | None:
        """Why a browser request from another origin is refused (403), or None."""
        site = (fetch_site or "").strip().lower()
        claimed = normalize_origin(origin) if origin is not None else None  # "null" and junk: None
        if claimed is not None and claimed in self.allowed_origins:
            return None
        if site in _OTHER_ORIGIN:
            return CROSS_ORIGIN_REFUSAL
        if site == "same-origin" or origin is None:
            return None
        own = normalize_origin(f"{scheme}://{host_header or ''}")
        return None if claimed is not None and claimed == own else CROSS_ORIGIN_REFUSAL
