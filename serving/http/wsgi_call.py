"""One complete HTTP request run through a WSGI app, and its answer as bytes (the HTTP
server's worker threads; Ray's ingress calls :func:`call_app` too). The environ and the
answer's framing headers are waitress's, which the app was written against."""

from __future__ import annotations

import io
import logging
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from email.utils import formatdate
from functools import lru_cache
from typing import Any
from urllib.parse import unquote_to_bytes

log = logging.getLogger(__name__)

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

#: headers of proxies, dropped: no proxy is trusted (waitress's ``clear_untrusted_proxy_headers``)
UNTRUSTED_PROXY_HEADERS = frozenset(
    {"FORWARDED", "X_FORWARDED_FOR", "X_FORWARDED_HOST", "X_FORWARDED_PROTO", "X_FORWARDED_PORT", "X_FORWARDED_BY"}
)
#: the environ key of a callable that says whether the request's client went away
CLIENT_GONE = "batchline.client_gone"
#: the environ key of the whole body as read (``wsgi.input`` holds the same bytes)
BODY = "batchline.body"
INTERNAL_ERROR = b"Internal Server Error\r\n\r\nThe server encountered an unexpected internal server error"


def _never() -> bool:
    return False


@dataclass
class HttpRequest:
    """A request as read off a connection (headers as sent, the body whole)."""

    method: str
    target: bytes  # the request target: path and query, still %-encoded
    version: str  # "1.0" or "1.1"
    headers: list[tuple[bytes, bytes]]
    body: bytes = b""
    keep_alive: bool = True  # as the request's version and Connection header say
    remote: tuple[str, int] = ("", 0)
    server: tuple[str, int] = ("", 0)
    disconnected: Callable[[], bool] = _never


def client_gone(environ: dict[str, Any]) -> Callable[[], bool]:
    """Whether the client of the request of ``environ`` went away (never, where no front says)."""
    gone: Callable[[], bool] = environ.get(CLIENT_GONE, _never)
    return gone


def internal_error() -> HttpAnswer:
    """A 500 of the front's own (the app failed outside its error handlers), worded as waitress's."""
    return HttpAnswer("500 Internal Server Error", [("Content-Type", "text/plain")], INTERNAL_ERROR)


@lru_cache(maxsize=512)
def environ_key(raw_name: bytes) -> str | None:
    """The environ key of header ``raw_name`` (``HTTP_X_THING``), or None where it is dropped: a
    name with an underscore (it would alias a dashed one) or an untrusted proxy header."""
    name = raw_name.decode("latin-1")
    if "_" in name or name.upper().replace("-", "_") in UNTRUSTED_PROXY_HEADERS:
        return None
    return environ_name(name)


@lru_cache(maxsize=256)
def environ_name(header: str) -> str:
    """Where the environ keeps header ``header`` (any case): ``HTTP_X_THING``, or
    ``CONTENT_TYPE`` / ``CONTENT_LENGTH`` unprefixed."""
    key = header.upper().replace("-", "_")
    return key if key in ("CONTENT_TYPE", "CONTENT_LENGTH") else "HTTP_" + key


def environ_of(request: HttpRequest, ident: str) -> dict[str, Any]:
    """The WSGI environ of ``request``, as waitress writes it."""
    path, _, query = request.target.partition(b"?")
    if path.startswith((b"http://", b"https://")):  # an absolute-form target: its path only
        path = b"/" + path.split(b"/", 3)[3] if path.count(b"/") >= 3 else b"/"
    environ: dict[str, Any] = {
        "REMOTE_ADDR": request.remote[0],
        "REMOTE_HOST": request.remote[0],
        "REMOTE_PORT": str(request.remote[1]),
        "REQUEST_METHOD": request.method,
        "SERVER_PORT": str(request.server[1]),
        "SERVER_NAME": request.server[0] or "localhost",
        "SERVER_SOFTWARE": ident,
        "SERVER_PROTOCOL": f"HTTP/{request.version}",
        "SCRIPT_NAME": "",
        "PATH_INFO": unquote_to_bytes(path).decode("latin-1"),
        "REQUEST_URI": request.target.decode("latin-1"),
        "RAW_URI": request.target.decode("latin-1"),
        "QUERY_STRING": query.decode("latin-1"),
        "wsgi.url_scheme": "http",
        "wsgi.version": (1, 0),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
        "wsgi.input": io.BytesIO(request.body),
        "wsgi.input_terminated": True,
        # the prediction routes watch for a client gone while its request waits
        CLIENT_GONE: request.disconnected,
        BODY: request.body,
    }
    for raw_name, raw_value in request.headers:
        key = environ_key(raw_name)
        if key is None:
            continue
        value = raw_value.decode("latin-1").strip()
        environ[key] = f"{environ[key]}, {value}" if key in environ else value
    environ["CONTENT_LENGTH"] = str(len(request.body))
    return environ


@dataclass
class HttpAnswer:
    """What the app answered: its status line's text, headers and whole body."""

    status: str
    headers: list[tuple[str, str]]
    body: bytes


def call_app(app: WsgiApp, environ: dict[str, Any]) -> HttpAnswer:
    """Run ``app`` for ``environ``, its body read whole; a failure of the app itself is a 500."""
    started: list[Any] = []

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Callable[[bytes], None]:
        if started and exc_info is None:
            raise AssertionError("start_response called twice without exc_info")
        started[:] = [status, headers]
        return lambda data: None  # the write() callable: the app never uses it

    try:
        result = app(environ, start_response)
        try:
            body = b"".join(result)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
    except Exception:
        log.exception("the app failed on %s %s", environ.get("REQUEST_METHOD"), environ.get("PATH_INFO"))
        return internal_error()
    if not started:
        return internal_error()
    return HttpAnswer(started[0], list(started[1]), body)


class DateHeader:
    """The ``Date`` header's value, formatted once a second (``clock``: epoch seconds)."""

    def __init__(self, clock: Callable[[], float]):
        self._clock = clock
        self._second = -1
        self._text = ""

    def __call__(self) -> str:
        second = int(self._clock())
        if second != self._second:
            self._second, self._text = second, formatdate(second, usegmt=True)
        return self._text


def answer_bytes(
    answer: HttpAnswer, *, version: str, keep_alive: bool, head: bool, ident: str, date: str
) -> tuple[bytes, bool]:
    """The bytes of ``answer`` on the wire, and whether the connection stays open after it
    (not when the request or the app asked to close)."""
    names = {name.lower() for name, _ in answer.headers}
    connection = next((v.lower() for n, v in answer.headers if n.lower() == "connection"), "")
    keep = keep_alive and connection != "close"
    lines = [f"HTTP/{version} {answer.status}"]
    lines += [f"{_titled(name)}: {value}" for name, value in answer.headers if name.lower() != "connection"]
    if "content-length" not in names:
        lines.append(f"Content-Length: {len(answer.body)}")
    if "date" not in names:
        lines.append(f"Date: {date}")
    if "server" not in names:
        lines.append(f"Server: {ident}")
    if not keep:
        lines.append("Connection: close")
    elif version == "1.0":
        lines.append("Connection: Keep-Alive")
    head_bytes = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return (head_bytes if head else head_bytes + answer.body), keep


def _titled(name: str) -> str:
    """``www-authenticate`` as ``Www-Authenticate``: waitress writes every header name so."""
    return "-".join(part.capitalize() for part in name.split("-"))
