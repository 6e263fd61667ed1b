"""The one HTTP/1.1 server: ``httptools`` on an event loop (uvloop where installed) in a
thread of its own, each complete request answered by the WSGI app in a worker thread
(:mod:`serving.http.wsgi_call`) or, a light one in a front process, on the loop.

It exists for the limits a hostile client meets before its request costs anything
(docs/DESIGN_NOTES.md, "Round 2" and "The house, round 3"; docs/RELIABILITY.md): refusals
from the headers, before the body (:mod:`serving.http.early_refusals`, the body limit, the
body budget); header, request and idle deadlines; 503 past ``http.connection_limit`` at
accept; one request in progress per connection. A refused connection answers, shuts its
side and drops what the client still sends, so the client reads the answer, not a reset.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import socket
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import unquote_to_bytes

import httptools

from serving.config.schema import HttpConf
from serving.errors import Overloaded, ServingError
from serving.http import shared_port
from serving.http.early_refusals import MAX_HEADER_BYTES, MAX_HEADER_FIELDS, FrontGate, cleanup_interval, refusal_parts
from serving.http.wsgi_call import (
    DateHeader,
    HttpAnswer,
    HttpRequest,
    answer_bytes,
    call_app,
    environ_of,
    internal_error,
)
from serving.service.body_budget import BodyBudget, Claim, front_buffered_bytes
from serving.service.core import HandlerCount
from serving.service.error_body import body_over_limit

log = logging.getLogger(__name__)

IDENT = "batchline"
#: unparsed bytes read ahead of the request in service (reading on notices a client gone); past them reading pauses
READ_AHEAD_BYTES = 64 << 10
#: the end of a header block, and of a chunked body (its trailers)
BLANK_LINE = b"\r\n\r\n"
TEXT = [("Content-Type", "text/plain")]


def new_event_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:  # a platform without uvloop: asyncio's own loop, slower
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


class HttpServer:
    """``app`` (a WSGI app with a ``body_limit``; with ``answers_on_loop``, an
    :class:`~serving.http.app.HttpApp`) served on ``host:port`` or an already bound ``sock``.
    Its connections share what it holds, on the loop thread."""

    def __init__(
        self,
        app: Any,
        http: HttpConf,
        gate: FrontGate,
        *,
        threads: int,
        host: str = "127.0.0.1",
        port: int = 0,
        sock: socket.socket | None = None,
        budget_share: float = 1.0,
        answers_on_loop: bool = False,
    ):
        self.app = app
        self.http = http
        self.gate = gate
        # light predictions answered on the loop: only where submitting never waits (a front process)
        self.answers_on_loop = answers_on_loop
        self.body_limit = 0
        self.body_budget = BodyBudget(0)
        self._budget_share = budget_share
        self.connection_limit = http.connection_limit or threads + 128
        self.executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="http")
        self.connections: set[Connection] = set()
        self.date = DateHeader(time.time)
        self.loop = new_event_loop()
        self._sock = sock if sock is not None else shared_port.listen_alone(host, port)
        self._server: asyncio.AbstractServer | None = None
        self._thread: threading.Thread | None = None
        self.apply_body_limits()

    @property
    def port(self) -> int:
        return int(self._sock.getsockname()[1])

    def apply_body_limits(self) -> None:
        """The app's body limit and the body budget derived from it (again after a reload)."""
        self.body_limit = int(self.app.body_limit)
        self.body_budget.resize(front_buffered_bytes(self.http.max_buffered_mb, self.body_limit, self._budget_share))

    def start(self) -> None:
        """Listen (a failure raises here), then run the loop in a thread of its own."""
        self._sock.setblocking(False)
        serving = self.loop.create_server(lambda: Connection(self), sock=self._sock, backlog=2048)
        self._server = self.loop.run_until_complete(serving)
        self._thread = threading.Thread(target=self._run_loop, name="http-loop", daemon=True)
        self._thread.start()

    def _run_loop(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self._enforce_limits())
        except asyncio.CancelledError:
            pass  # the drain
        finally:
            self.loop.run_until_complete(asyncio.sleep(0.05))  # the closed transports' last callbacks
            self.loop.close()

    async def _enforce_limits(self) -> None:
        interval = cleanup_interval(self.http)
        while True:
            await asyncio.sleep(interval)
            now = time.monotonic()
            for connection in list(self.connections):
                if connection.overdue(now):
                    connection.transport.close()

    def drain(self, handlers: HandlerCount) -> None:
        """After the engine stopped admitting: let every running handler answer,
        flush the answers, then close every connection and the listening socket."""
        handlers.wait_zero(timeout=10)
        end = time.monotonic() + 5
        while time.monotonic() < end and not all(c.idle() for c in list(self.connections)):
            time.sleep(0.02)
        if self._thread is not None and self._thread.is_alive():
            self.loop.call_soon_threadsafe(self._close_all)
            self._thread.join(timeout=5)
        self.executor.shutdown(wait=False, cancel_futures=True)

    def _close_all(self) -> None:
        if self._server is not None:
            self._server.close()
        for connection in list(self.connections):
            connection.transport.close()
        for task in asyncio.all_tasks(self.loop):
            task.cancel()


class Phase(enum.Enum):
    """What a connection's next unparsed bytes are."""

    HEAD = "head"  # a request line and headers, up to the blank line
    LENGTH = "length"  # the rest of a body of known length
    CHUNKED = "chunked"  # a chunked body, framing included


class Connection(asyncio.Protocol):
    """One client connection. It frames requests itself and hands ``httptools`` only a whole
    header block, a body of known length up to that length, or a chunked body up to each
    blank line (where it may end): httptools would join an unfinished header's pieces
    without bound, and never parses past the request in progress. Bytes after that request
    wait unparsed; while the client reads no answers, nothing more is read or answered."""

    transport: asyncio.Transport  # set before any other callback

    def __init__(self, front: HttpServer):
        self.front = front
        self.parser = httptools.HttpRequestParser(self)
        self.remote = self.local = ("", 0)
        self.closed = False
        self.last_activity = time.monotonic()
        self.inbuf = bytearray()  # received, not yet parsed
        self.scan_from = 0  # Phase.HEAD: where in inbuf the blank line is still to be looked for
        self.phase = Phase.HEAD
        self.body_left = 0  # Phase.LENGTH: body bytes still to come
        self.wire_bytes = 0  # Phase.CHUNKED: the body's bytes on the wire, framing included
        # the request in progress: being read, waiting (while writing is paused) or in service
        self.reading = False
        self.began = 0.0  # its first byte (a refusal's deadline runs from there too)
        self.target = bytearray()
        self.headers: list[tuple[bytes, bytes]] = []
        self.body = bytearray()
        self.claim: Claim | None = None
        self.waiting: HttpRequest | None = None
        self.serving = False
        self.write_paused = False
        self.read_paused = False
        self.discarding = False  # refused or closing: every later byte is dropped
        self.lingering = False  # the refusal is out and our side shut: reading only to drop

    # ---- asyncio.Protocol -------------------------------------------------------------------
    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        self.remote = _address(transport.get_extra_info("peername"))
        self.local = _address(transport.get_extra_info("sockname"))
        self.front.connections.add(self)
        if len(self.front.connections) > self.front.connection_limit:
            # answered at once, not left open until it speaks: idle connections past the limit hold nothing
            self.began = time.monotonic()
            self._refuse(Overloaded("the server is at http.connection_limit, retry later", retry_after=1.0))

    def data_received(self, data: bytes) -> None:
        self.last_activity = time.monotonic()
        if not self.discarding:
            self.inbuf += data
            self._parse()
            self._flow()

    def pause_writing(self) -> None:
        self.write_paused = True
        self._flow()

    def resume_writing(self) -> None:
        self.write_paused = False
        self._serve_next()
        self._flow()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.front.connections.discard(self)
        if not self.serving:  # else the app still holds the body: _answered gives its claim back
            self._release_claim()
        self.waiting = None
        self.inbuf = bytearray()
        self.body = bytearray()

    # ---- framing ------------------------------------------------------------------------------
    def _parse(self) -> None:
        """Parse what inbuf holds of the request in progress, and no further."""
        try:
            while self.inbuf and not self.discarding:
                if self.phase is Phase.HEAD:
                    n = self._head_size()
                elif self.phase is Phase.LENGTH:
                    n = min(self.body_left, len(self.inbuf))
                    self.body_left -= n
                else:
                    n = self._chunked_size()
                if n <= 0:
                    return
                with memoryview(self.inbuf) as view:
                    self.parser.feed_data(view[:n])  # httptools' callbacks run meanwhile
                del self.inbuf[:n]
        except httptools.HttpParserUpgrade:
            self._close_with("400 Bad Request", TEXT, b"Upgrades are not supported")
        except httptools.HttpParserError:
            self._close_with("400 Bad Request", TEXT, b"Malformed HTTP request")

    def _head_size(self) -> int:
        """The size of the header block in inbuf once it is whole, else 0."""
        if self.serving or self.waiting is not None or self.write_paused:
            return 0  # the next request waits, unparsed, for the answer before it
        if not self.reading:  # its first bytes: the header deadline runs from now
            self.reading, self.began = True, time.monotonic()
        end = self.inbuf.find(BLANK_LINE, self.scan_from)
        size = len(self.inbuf) if end < 0 else end + len(BLANK_LINE)
        if size > MAX_HEADER_BYTES:  # refused while it still arrives
            self._close_with("431 Request Header Fields Too Large", TEXT, b"Request header fields are too large")
            return 0
        if end < 0:
            self.scan_from = max(0, len(self.inbuf) - len(BLANK_LINE) + 1)
            return 0
        self.scan_from = 0
        return size

    def _chunked_size(self) -> int:
        """How much of a chunked body to parse: up to the next blank line, else all but the last
        3 bytes (a blank line may span two reads), its wire bytes counted against the limits first."""
        end = self.inbuf.find(BLANK_LINE)
        n = end + len(BLANK_LINE) if end >= 0 else len(self.inbuf) - len(BLANK_LINE) + 1
        if n <= 0:
            return 0
        self.wire_bytes += n
        if self.wire_bytes > self.front.body_limit:
            self._refuse(body_over_limit(self.front.body_limit))
            return 0
        if self.claim is not None and not self.claim.grow_to(self.wire_bytes):
            self._refuse(self.front.body_budget.refusal())
            return 0
        return n

    def _flow(self) -> None:
        """Pause reading while the client reads no answers, or while what is read ahead of
        the request in service is past :data:`READ_AHEAD_BYTES`; else read on."""
        if self.closed or self.lingering:
            return
        in_service = self.serving or self.waiting is not None
        self.read_paused = self.write_paused or (in_service and len(self.inbuf) > READ_AHEAD_BYTES)
        if self.read_paused:
            self.transport.pause_reading()
        else:
            self.transport.resume_reading()  # a no-op unless paused

    # ---- httptools callbacks ------------------------------------------------------------------
    def on_url(self, url: bytes) -> None:
        self.target += url

    def on_header(self, name: bytes, value: bytes) -> None:
        if len(self.headers) <= MAX_HEADER_FIELDS:  # one past it is refused at the block's end
            self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        if len(self.headers) > MAX_HEADER_FIELDS:
            self._close_with("431 Request Header Fields Too Large", TEXT, b"Too many request header fields")
            return
        fields = {name.lower(): value for name, value in reversed(self.headers)}  # the first of each name
        chunked = b"chunked" in fields.get(b"transfer-encoding", b"").lower()
        length = int(fields.get(b"content-length", 0))  # httptools refused a malformed one
        self.phase = Phase.CHUNKED if chunked else Phase.LENGTH
        self.body_left, self.wire_bytes = length, 0
        if not length and not chunked:
            return  # the app answers a request without a body
        authorization = fields.get(b"authorization", b"").decode("latin-1")
        refusal = self._gate(length, authorization)
        if refusal is not None:
            self._refuse(refusal, authorization)
        elif fields.get(b"expect", b"").lower() == b"100-continue":
            self._write(f"HTTP/{self.parser.get_http_version()} 100 Continue\r\n\r\n".encode())

    def on_body(self, body: bytes) -> None:
        self.body += body

    def on_message_complete(self) -> None:
        self.reading = False
        self.phase = Phase.HEAD
        if self.discarding:
            return
        self.waiting = HttpRequest(
            method=self.parser.get_method().decode("latin-1"),
            target=bytes(self.target),
            version=self.parser.get_http_version(),
            headers=self.headers,
            body=bytes(self.body),
            keep_alive=self.parser.should_keep_alive(),
            remote=self.remote,
            server=self.local,
            disconnected=lambda: self.closed,
        )
        self.target.clear()
        self.headers, self.body = [], bytearray()
        self._serve_next()

    # ---- refusals -----------------------------------------------------------------------------
    def _gate(self, length: int, authorization: str) -> ServingError | None:
        """Why a request with a body is refused before it, or None: the token, the body limit, then
        room for the body (so a refused body takes none of the budget; a chunked one claims as it arrives)."""
        refusal = self.front.gate.refusal(self._path(), authorization, has_body=True)
        if refusal is not None:
            return refusal
        if length > self.front.body_limit:
            return body_over_limit(self.front.body_limit)
        self.claim = self.front.body_budget.claim()
        return None if self.claim.grow_to(length) else self.front.body_budget.refusal()

    def _path(self) -> str:
        """The request's path as the app sees it (%-decoded)."""
        return unquote_to_bytes(bytes(self.target).split(b"?", 1)[0]).decode("latin-1")

    def _refuse(self, err: ServingError, authorization: str = "") -> None:
        """Answer ``err`` as the app would (its JSON error shape), then :meth:`_close_with`."""
        path = self._path()
        status, headers, body = refusal_parts(err, path, authorization)
        log.debug("refused before the body: %s (%d)", path[:128], err.status)
        self._close_with(status, headers, body)

    def _close_with(self, status: str, headers: Sequence[tuple[str, str]], body: bytes) -> None:
        """Answer (``Connection: close``), shut our side and drop whatever the client still
        sends until it closes or the request's deadline passes: it reads the answer, not a reset."""
        self.discarding = True
        self._release_claim()
        answer = HttpAnswer(status, list(headers), body)
        data, _ = answer_bytes(answer, version="1.1", keep_alive=False, head=False, ident=IDENT, date=self.front.date())
        self._write(data)
        if not self.transport.is_closing():
            self.transport.write_eof()
            self.lingering = True
            self.read_paused = False
            self.transport.resume_reading()

    def _release_claim(self) -> None:
        if self.claim is not None:
            self.claim.release()
            self.claim = None

    # ---- service ------------------------------------------------------------------------------
    def _serve_next(self) -> None:
        """Serve the request waiting, else parse the next one (pipelined, unparsed until now)."""
        if self.closed or self.serving or self.write_paused:
            return
        request, self.waiting = self.waiting, None
        if request is None:
            if self.inbuf and not self.discarding:
                self._parse()
                self._flow()
            return
        self.serving = True
        # the environ is built on the loop only where the loop may answer; else in the worker
        environ = environ_of(request, IDENT) if self.front.answers_on_loop else None
        future: asyncio.Future[Any]
        if environ is not None and self.front.app.light(environ):
            future = self.front.loop.create_task(self._on_loop(environ))
        else:
            future = self.front.loop.run_in_executor(self.front.executor, self._run, request, environ)
        future.add_done_callback(lambda f: self._answered(f, request))

    def _run(self, request: HttpRequest, environ: dict[str, Any] | None) -> HttpAnswer:
        return call_app(self.front.app, environ if environ is not None else environ_of(request, IDENT))

    async def _on_loop(self, environ: dict[str, Any]) -> HttpAnswer:
        app = self.front.app
        response = await app.respond_on_loop(app.request(environ), self.front.executor)
        # the app's own answer, its body in hand and its length set: what the WSGI call would give
        return HttpAnswer(response.status, response.headers.to_wsgi_list(), response.get_data())

    def _answered(self, future: asyncio.Future[Any], request: HttpRequest) -> None:
        answer = future.result() if not future.cancelled() and future.exception() is None else internal_error()
        self.serving = False
        self._release_claim()
        if self.closed:
            return
        data, keep = answer_bytes(
            answer,
            version=request.version,
            keep_alive=request.keep_alive,
            head=request.method == "HEAD",
            ident=IDENT,
            date=self.front.date(),
        )
        self._write(data)
        self.last_activity = time.monotonic()
        if keep:
            self._serve_next()
        else:
            self.discarding = True
            self.transport.close()

    def _write(self, data: bytes) -> None:
        if not self.transport.is_closing():
            self.transport.write(data)

    # ---- what the server checks -----------------------------------------------------------------
    def overdue(self, now: float) -> bool:
        """Whether to close this connection now: a request read (or a refusal lingering) past
        its deadline, or idle past ``channel_timeout_s``; never one in service."""
        http = self.front.http
        if self.lingering:
            return now - self.began > http.request_timeout_s
        if self.serving:
            return False
        if self.reading:
            late = now - self.began
            return late > http.request_timeout_s or (self.phase is Phase.HEAD and late > http.header_timeout_s)
        return self.waiting is None and now - self.last_activity > http.channel_timeout_s

    def idle(self) -> bool:
        """Nothing in service, nothing waiting, nothing left to send."""
        return not self.serving and self.waiting is None and not self.transport.get_write_buffer_size()


def _address(info: Any) -> tuple[str, int]:
    return (str(info[0]), int(info[1])) if isinstance(info, tuple) and len(info) >= 2 else ("", 0)
