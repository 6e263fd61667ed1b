"""The client's HTTP transport: kept-alive ``http.client`` connections to one server.

``requests`` cost ~0.7 ms of Python per call on top of the socket round trip,
urllib3 (which it is built on) ~0.1 ms (docs/DESIGN_NOTES.md, "Where one rec
request's time goes"); a bare ``http.client`` connection is the floor, so the transport is
that plus what a client needs: a pool of idle connections (``pool_size``
kept, safe to share between threads), a connection the server closed while
idle is noticed before it is reused (as urllib3 does), https, and the proxy
the ``http_proxy`` / ``https_proxy`` / ``no_proxy`` environment variables name
for the server's host (read once, when the client is made). It never retries
a request and does not follow redirects: a batchline server sends none.
"""

from __future__ import annotations

import http.client
import json
import select
import ssl
import threading
import urllib.request
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit


class TransportError(Exception):
    """No HTTP answer arrived; ``timed_out`` tells a client timeout from the rest."""

    def __init__(self, message: str, *, timed_out: bool):
        super().__init__(message)
        self.timed_out = timed_out


class Answer:
    """An HTTP answer, read in full: ``status_code``, ``headers``, ``content``,
    ``text``, ``reason`` and :meth:`json`, as ``requests.Response`` names them."""

    def __init__(self, status: int, headers: Any, content: bytes, reason: str | None = None):
        self.status_code = status
        self.headers = headers  # case-insensitive ``get`` and ``[]`` (an http.client message)
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
        parts = urlsplit(url)
        self._https = parts.scheme == "https"
        self._host = parts.hostname or "localhost"
        self._port = parts.port or (443 if self._https else 80)
        self._proxy = _proxy_for(url)
        self._pool_size = max(1, pool_size)
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()

    def _connect(self, timeout: float) -> http.client.HTTPConnection:
        host, port = self._host, self._port
        if self._proxy is not None:
            proxy = urlsplit(self._proxy)
            host, port = proxy.hostname or "localhost", proxy.port or 80
        if not self._https:
            return http.client.HTTPConnection(host, port, timeout=timeout)
        conn = http.client.HTTPSConnection(host, port, timeout=timeout, context=ssl.create_default_context())
        if self._proxy is not None:
            conn.set_tunnel(self._host, self._port)
        return conn

    def _idle_connection(self) -> http.client.HTTPConnection | None:
        """A kept-alive connection the server has not closed meanwhile, or None."""
        while True:
            with self._lock:
                if not self._idle:
                    return None
                conn = self._idle.pop()
            sock = conn.sock
            # readable while idle: the server closed it (or sent what no request asked for)
            if sock is not None and not select.select([sock], [], [], 0)[0]:
                return conn
            conn.close()

    def _keep(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if len(self._idle) < self._pool_size:
                self._idle.append(conn)
                return
        conn.close()

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
        target = self.url + path if self._proxy is not None and not self._https else path
        conn = self._idle_connection()
        try:
            if conn is None:
                conn = self._connect(timeout)
            else:
                conn.timeout = timeout
                if conn.sock is not None:
                    conn.sock.settimeout(timeout)
            conn.request(method, target, body=body, headers=all_headers)
            resp = conn.getresponse()
            content = resp.read()
        except TimeoutError as exc:
            if conn is not None:
                conn.close()
            raise TransportError(f"timed out after {timeout}s: {exc}", timed_out=True) from exc
        except (OSError, http.client.HTTPException) as exc:
            if conn is not None:
                conn.close()
            raise TransportError(f"cannot reach {self.url}: {exc}", timed_out=False) from exc
        if resp.will_close:
            conn.close()
        else:
            self._keep(conn)
        return Answer(resp.status, resp.headers, content, resp.reason)

    def close(self) -> None:
        """Close the kept-alive connections; a later request opens new ones (as ``requests`` did)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
