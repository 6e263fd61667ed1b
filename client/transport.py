"""The client's HTTP transport: a urllib3 connection pool to one server.

``requests`` cost ~0.7 ms of Python per call on top of the socket round trip
(docs/BENCHMARKS.md, "Per-request path"); the pool it is built on costs
~0.1 ms. As ``requests`` did, the transport keeps connections alive, is safe
to share between threads (``pool_size`` connections), and goes through the
proxy that the ``http_proxy`` / ``https_proxy`` / ``no_proxy`` environment
variables name for the server's host (read once, when the client is made).
It does not follow redirects: a batchline server never sends one.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import urllib3


class TransportError(Exception):
    """No HTTP answer arrived; ``timed_out`` tells a client timeout from the rest."""

    def __init__(self, message: str, *, timed_out: bool):
        super().__init__(message)
        self.timed_out = timed_out


class Answer:
    """An HTTP answer, read in full: ``status_code``, ``headers``, ``content``,
    ``text``, ``reason`` and :meth:`json`, as ``requests.Response`` names them."""

    def __init__(self, status: int, headers: Mapping[str, str], content: bytes, reason: str | None = None):
        self.status_code = status
        self.headers = headers
        self.content = content
        self.reason = reason

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    def json(self) -> Any:
        """The body as JSON; ValueError if it is not JSON."""
        return json.loads(self.content)


def _proxy_for(url: str) -> str | None:
    """The proxy the environment names for ``url``'s host, or None."""
    parts = urlsplit(url)
    proxy = urllib.request.getproxies().get(parts.scheme)
    if not proxy or urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    return proxy


class Transport:
    """Requests to one server (``url``: scheme, host and port, no path)."""

    def __init__(self, url: str, *, pool_size: int, headers: Mapping[str, str] | None = None):
        self.url = url
        self.headers = dict(headers or {})
        self._proxy = _proxy_for(url)
        self._proxied = self._proxy is not None
        self._pool_size = pool_size
        self._pool: Any = self._new_pool()

    def _new_pool(self) -> Any:
        options: dict[str, Any] = {"maxsize": self._pool_size, "block": False, "retries": False}
        if self._proxy is not None:
            return urllib3.ProxyManager(self._proxy, num_pools=4, **options)
        return urllib3.connection_from_url(self.url, **options)

    def request(
        self,
        method: str,
        path: str,
        *,
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float,
    ) -> Answer:
        """Send one request and read the answer; TransportError when none arrives."""
        all_headers = {**self.headers, **(headers or {})}
        target = self.url + path if self._proxied else path
        try:
            resp = self._pool.urlopen(
                method,
                target,
                body=body,
                headers=all_headers,
                timeout=urllib3.Timeout(connect=timeout, read=timeout),
                retries=False,
                redirect=False,
                preload_content=True,
            )
        except urllib3.exceptions.NewConnectionError as exc:  # a subclass of the timeout errors, but refused
            raise TransportError(f"cannot reach {self.url}: {exc}", timed_out=False) from exc
        except urllib3.exceptions.TimeoutError as exc:
            raise TransportError(f"timed out after {timeout}s: {exc}", timed_out=True) from exc
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise TransportError(f"cannot reach {self.url}: {exc}", timed_out=False) from exc
        return Answer(resp.status, resp.headers, resp.data, resp.reason)

    def close(self) -> None:
        """Close the kept-alive connections; a later request opens new ones (as ``requests`` did)."""
        pool, self._pool = self._pool, self._new_pool()
        pool.clear() if self._proxied else pool.close()
