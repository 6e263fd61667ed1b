"""One client connection of the asyncio front (:mod:`serving.http.http_server`):
HTTP/1.1 parsed by ``httptools``, gated before its body, its requests answered
in order, each by the app in a worker thread or, a light one, on the loop
(:meth:`~serving.http.app.HttpApp.respond_on_loop`).

The rules it applies are the module doc of :mod:`serving.http.http_server`."""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import unquote_to_bytes

import httptools

from serving.config.schema import HttpConf
from serving.errors import Overloaded, ServingError
from serving.http.early_refusals import MAX_HEADER_BYTES, MAX_HEADER_FIELDS, FrontGate, refusal_parts
from serving.http.wsgi_call import (
    DateHeader,
    HttpAnswer,
    HttpRequest,
    WsgiApp,
    answer_bytes,
    call_app,
    environ_of,
    first_header,
    internal_error,
    refusal_answer,
)
from serving.service.body_budget import BodyBudget, Claim
from serving.service.error_body import body_over_limit

log = logging.getLogger(__name__)

IDENT = "batchline"
#: unparsed bytes a connection reads ahead of the request in service; past them it stops reading
READ_AHEAD_BYTES = 64 << 10
#: the end of a header block (and of a chunked body's trailers)
BLANK_LINE = b"\r\n\r\n"


class Phase(enum.Enum):
    """What the connection's next unparsed bytes are."""

    HEAD = "head"  # a request line and headers, up to the blank line
    LENGTH = "length"  # the rest of a body of known length
    CHUNKED = "chunked"  # a chunked body, framing included


class FrontState:
    """What every connection of one front shares."""

    def __init__(
        self,
        app: WsgiApp,
        http: HttpConf,
        gate: FrontGate,
        budget: BodyBudget,
        threads: int,
        answers_on_loop: bool = False,
    ):
        # with answers_on_loop, an HttpApp (light, request, respond_on_loop); else any WSGI app with a body_limit
        self.app: Any = app
        # light predictions answered on the loop (serving.http.app.HttpApp.respond_on_loop): only where
        # submitting never waits, a front process's link to the engine
        self.answers_on_loop = answers_on_loop
        self.http = http
        self.gate = gate
        self.budget = budget
        self.body_limit = 0  # set by HttpServer.apply_body_limits
        self.connection_limit = http.connection_limit or threads + 128
        self.executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="http")
        self.connections: set[Connection] = set()
        self.date = DateHeader(time.time)


class Connection(asyncio.Protocol):
    """One client connection: frames, gates and answers its requests one at a time.

    The connection frames requests itself and hands ``httptools`` only what it
    has framed, so what it holds is bounded before any request is complete: a
    header block only once its blank line arrived (a header block over
    :data:`MAX_HEADER_BYTES` is 431 while it still arrives: httptools would join
    an unfinished header's pieces without limit), a body of known length up to
    that length, a chunked body up to each blank line (where it may end), its
    wire bytes counted. Bytes past the request in progress stay unparsed, at most
    :data:`READ_AHEAD_BYTES` (then reading pauses), until it is answered; while
    the transport's write buffer is full, nothing more is read or answered."""

    def __init__(self, state: FrontState, loop: asyncio.AbstractEventLoop):
        self.state = state
        self.loop = loop
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpRequestParser(self)
        self.remote: tuple[str, int] = ("", 0)
        self.server: tuple[str, int] = ("", 0)
        self.closed = False
        self.last_activity = time.monotonic()
        self.inbuf = bytearray()  # received, not yet parsed
        self.phase = Phase.HEAD
        self.scan_from = 0  # where in inbuf the blank line is still to be looked for
        self.body_left = 0  # Phase.LENGTH: body bytes still to come
        self.wire_bytes = 0  # Phase.CHUNKED: the body's bytes on the wire, framing included
        self.tail = b""  # Phase.CHUNKED: the last bytes parsed (a blank line may span two reads)
        # the request being read
        self.reading = False
        self.headers_done = False
        self.message_done = False
        self.began = 0.0
        self.target = bytearray()
        self.headers: list[tuple[bytes, bytes]] = []
        self.header_fields = 0
        self.body = bytearray()
        self.claim: Claim | None = None
        # the request complete and waiting or in service, a refusal's after-state
        self.queue: deque[tuple[HttpRequest, Claim | None]] = deque()
        self.serving = False
        self.write_paused = False
        self.read_paused = False
        self.discarding = False  # a refused request: every later byte is dropped
        self.lingering = False  # the refusal is out and our side shut: reading only to drop
        self._refusal: HttpAnswer | None = None  # a refusal waiting for the answer before it

    # ---- asyncio.Protocol -------------------------------------------------------------------
    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        self.remote = _address(transport.get_extra_info("peername"))
        self.server = _address(transport.get_extra_info("sockname"))
        self.state.connections.add(self)
        if len(self.state.connections) > self.state.connection_limit:
            # answered at once, not left open until it speaks: idle connections past the limit hold nothing
            self.began = time.monotonic()
            self._refuse(Overloaded("the server is at http.connection_limit, retry later", retry_after=1.0))

    def data_received(self, data: bytes) -> None:
        self.last_activity = time.monotonic()
        if self.discarding:
            return
        self.inbuf += data
        self._parse()
        self._flow()

    def eof_received(self) -> bool | None:
        return None  # close our side too (any answer still being written is flushed first)

    def pause_writing(self) -> None:
        self.write_paused = True  # the client is not reading: answer nothing more, read nothing more
        self._flow()

    def resume_writing(self) -> None:
        self.write_paused = False
        if not self.serving and not self.closed:
            self._serve_next()
        self._flow()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.state.connections.discard(self)
        if self.claim is not None:
            self.claim.release()
        for _, claim in self.queue:
            if claim is not None:
                claim.release()
        self.queue.clear()
        self.inbuf = bytearray()
        self.body = bytearray()

    # ---- framing ------------------------------------------------------------------------------
    def _parse(self) -> None:
        try:
            self._advance()
        except httptools.HttpParserUpgrade:
            self._refuse_plain("400 Bad Request", b"Upgrades are not supported")
        except httptools.HttpParserError:
            self._refuse_plain("400 Bad Request", b"Malformed HTTP request")

    def _advance(self) -> None:
        """Parse what inbuf holds of the request in progress, and no further."""
        while not self.discarding and not self.closed and self.inbuf:
            if self.phase is Phase.HEAD:
                if self.serving or self.queue or self.write_paused:
                    return  # the next request waits, unparsed, for the answer before it
                if not self.reading:  # its first bytes: the header deadline runs from now
                    self.reading, self.began = True, time.monotonic()
                end = self.inbuf.find(BLANK_LINE, self.scan_from)
                if end < 0:
                    if len(self.inbuf) > MAX_HEADER_BYTES:
                        self._refuse_431(b"Request header fields are too large")
                        return
                    self.scan_from = max(0, len(self.inbuf) - len(BLANK_LINE) + 1)
                    return
                size = end + len(BLANK_LINE)
                if size > MAX_HEADER_BYTES:
                    self._refuse_431(b"Request header fields are too large")
                    return
                self._feed(size)
            elif self.phase is Phase.LENGTH:
                self._feed(min(self.body_left, len(self.inbuf)))
            else:
                self._feed_chunked()

    def _feed(self, n: int) -> None:
        """Parse the first ``n`` bytes of inbuf (httptools' callbacks run meanwhile)."""
        self.scan_from = 0
        with memoryview(self.inbuf) as view:
            self.parser.feed_data(view[:n])
        del self.inbuf[:n]
        if self.phase is Phase.LENGTH:
            self.body_left -= n
        self._after_feed()

    def _feed_chunked(self) -> None:
        """Parse a chunked body up to the next blank line (it can end only at one, its
        trailers' end, so nothing past it is parsed), its wire bytes counted first."""
        end = (self.tail + self.inbuf[: len(BLANK_LINE) - 1]).find(BLANK_LINE)
        if end >= 0:
            n = end + len(BLANK_LINE) - len(self.tail)
        else:
            end = self.inbuf.find(BLANK_LINE)
            n = len(self.inbuf) if end < 0 else end + len(BLANK_LINE)
        self.wire_bytes += n
        if self.wire_bytes > self.state.body_limit:
            self._refuse(body_over_limit(self.state.body_limit))
            return
        if self.claim is not None and not self.claim.grow_to(self.wire_bytes):
            self._refuse(self.state.budget.refusal())
            return
        keep = len(BLANK_LINE) - 1
        self.tail = bytes(self.inbuf[n - keep : n]) if n >= keep else (self.tail + bytes(self.inbuf[:n]))[-keep:]
        self._feed(n)

    def _after_feed(self) -> None:
        """The phase the parsed bytes leave the connection in."""
        if self.discarding:
            return
        if self.message_done:
            self.message_done = False
            self.phase, self.tail = Phase.HEAD, b""
        elif self.headers_done and self.phase is Phase.HEAD:
            self.phase = Phase.CHUNKED if self._chunked() else Phase.LENGTH
            self.body_left, self.wire_bytes = self._content_length() or 0, 0

    def _flow(self) -> None:
        """Read on while there is room for what is received; pause reading while the
        unparsed bytes are past the read-ahead or the client reads no answers."""
        if self.transport is None or self.closed or self.lingering:
            return
        waiting = self.serving or bool(self.queue)  # else inbuf is parsed as it comes (a head: up to its limit)
        hold = self.write_paused or (waiting and len(self.inbuf) > READ_AHEAD_BYTES)
        if hold and not self.read_paused:
            self.transport.pause_reading()
            self.read_paused = True
        elif not hold and self.read_paused:
            self.transport.resume_reading()
            self.read_paused = False

    # ---- httptools callbacks ------------------------------------------------------------------
    def on_message_begin(self) -> None:
        self.reading, self.headers_done, self.message_done = True, False, False
        self.target.clear()
        self.headers = []
        self.header_fields = 0
        self.body = bytearray()
        self.claim = None

    def on_url(self, url: bytes) -> None:
        self.target += url

    def on_header(self, name: bytes, value: bytes) -> None:
        self.header_fields += 1
        if self.header_fields <= MAX_HEADER_FIELDS:  # past it, counted and refused once the block is parsed
            self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        self.headers_done = True
        if self.discarding:
            return
        if self.header_fields > MAX_HEADER_FIELDS:
            self._refuse_431(b"Too many request header fields")
            return
        refusal = self._gate()
        if refusal is not None:
            self._refuse(refusal)
            return
        if self._has_body() and self._header(b"expect", b"").lower() == b"100-continue":
            self._write(f"HTTP/{self.parser.get_http_version()} 100 Continue\r\n\r\n".encode())

    def on_body(self, body: bytes) -> None:
        if self.discarding:
            return
        if len(self.body) + len(body) > self.state.body_limit:
            self._refuse(body_over_limit(self.state.body_limit))
            return
        self.body += body

    def on_message_complete(self) -> None:
        self.reading = False
        self.message_done = True
        if self.discarding:
            return
        request = HttpRequest(
            method=self.parser.get_method().decode("latin-1"),
            target=bytes(self.target),
            version=self.parser.get_http_version(),
            headers=self.headers,
            body=bytes(self.body),
            keep_alive=self.parser.should_keep_alive(),
            remote=self.remote,
            server=self.server,
            disconnected=lambda: self.closed,
        )
        self.body = bytearray()
        self.queue.append((request, self.claim))
        self.claim = None
        if not self.serving:
            self._serve_next()

    # ---- gate ---------------------------------------------------------------------------------
    def _gate(self) -> ServingError | None:
        """Why the request whose headers just completed is refused before its body, or None;
        in waitress's order: the token, the body limit, then room for the body."""
        path = self._path()
        authorization = self._header(b"authorization", b"").decode("latin-1")
        length = self._content_length()
        chunked = self._chunked()
        refusal = self.state.gate.refusal(path, authorization, has_body=bool(length) or chunked)
        if refusal is not None:
            return refusal
        if length is not None and length > self.state.body_limit:
            return body_over_limit(self.state.body_limit)
        if length or chunked:
            self.claim = self.state.budget.claim()
            if length and not self.claim.grow_to(length):
                self.claim = None
                return self.state.budget.refusal()
        return None

    def _path(self) -> str:
        """The request's path as the app sees it (%-decoded, as waitress's parser gives it)."""
        return unquote_to_bytes(bytes(self.target).split(b"?", 1)[0]).decode("latin-1")

    def _has_body(self) -> bool:
        return bool(self._content_length()) or self._chunked()

    def _chunked(self) -> bool:
        return b"chunked" in self._header(b"transfer-encoding", b"").lower()

    def _content_length(self) -> int | None:
        raw = self._header(b"content-length", None)
        try:
            return int(raw) if raw is not None else None
        except ValueError:
            return None  # httptools refuses a malformed length before the headers complete

    def _header(self, name: bytes, default: Any) -> Any:
        value = first_header(self.headers, name)
        return default if value is None else value

    def _refuse(self, err: ServingError) -> None:
        """Answer ``err`` in the app's JSON shape, then linger (drop the rest) until the client closes."""
        path = self._path()
        authorization = self._header(b"authorization", b"").decode("latin-1")
        status, headers, body = refusal_parts(err, path, authorization)
        log.debug("refused before the body: %s (%d)", path[:128], err.status)
        self._answer_refusal(refusal_answer(status, headers, body))

    def _refuse_plain(self, status: str, text: bytes) -> None:
        self._answer_refusal(refusal_answer(status, [("Content-Type", "text/plain")], text))

    def _refuse_431(self, text: bytes) -> None:
        self._refuse_plain("431 Request Header Fields Too Large", text)

    def _answer_refusal(self, answer: HttpAnswer) -> None:
        self.discarding = True
        if self.claim is not None:
            self.claim.release()
            self.claim = None
        if self.serving:  # the requests read before it answer first (_serve_next); the refusal then closes
            self._refusal = answer
            return
        self._send_refusal(answer)

    def _send_refusal(self, answer: HttpAnswer) -> None:
        data, _ = answer_bytes(answer, version="1.1", keep_alive=False, head=False, ident=IDENT, date=self.state.date())
        self._write(data)
        if self.transport is not None and not self.transport.is_closing():
            if self.transport.can_write_eof():
                self.transport.write_eof()
                self.lingering = True
                self.read_paused = False
                self.transport.resume_reading()
            else:
                self.transport.close()

    # ---- service ------------------------------------------------------------------------------
    def _serve_next(self) -> None:
        if self.closed:
            return
        if not self.queue:
            if self._refusal is not None:  # nothing is read after a refusal: it is the last answer
                refusal, self._refusal = self._refusal, None
                self._send_refusal(refusal)
            elif self.inbuf and not self.discarding:  # a pipelined request, unparsed until now
                self._parse()
                self._flow()
            return
        if self.write_paused:
            return  # resume_writing serves it
        request, claim = self.queue.popleft()
        self.serving = True
        # the environ is built on the loop only where the loop may answer; else in the worker
        environ = environ_of(request, IDENT) if self.state.answers_on_loop else None
        future: asyncio.Future[Any]
        if environ is not None and self.state.app.light(environ):
            future = self.loop.create_task(self._on_loop(environ))
        else:
            future = self.loop.run_in_executor(self.state.executor, self._run, request, environ)
        future.add_done_callback(lambda f: self._answered(f, request, claim))

    def _run(self, request: HttpRequest, environ: dict[str, Any] | None) -> HttpAnswer:
        return call_app(self.state.app, environ if environ is not None else environ_of(request, IDENT))

    async def _on_loop(self, environ: dict[str, Any]) -> HttpAnswer:
        app = self.state.app
        response = await app.respond_on_loop(app.request(environ), self.state.executor)
        # the app's own answer, its body in hand and its length set: what the WSGI call would give
        return HttpAnswer(response.status, response.headers.to_wsgi_list(), response.get_data())

    def _answered(self, future: asyncio.Future[Any], request: HttpRequest, claim: Claim | None) -> None:
        answer = future.result() if not future.cancelled() and future.exception() is None else internal_error()
        self.serving = False
        if claim is not None:
            claim.release()
        if self.closed or answer is None:
            return
        data, keep = answer_bytes(
            answer,
            version=request.version,
            keep_alive=request.keep_alive,
            head=request.method == "HEAD",
            ident=IDENT,
            date=self.state.date(),
        )
        self._write(data)
        self.last_activity = time.monotonic()
        if not keep:
            self.discarding = True
            if self.transport is not None:
                self.transport.close()
            return
        self._serve_next()

    def _write(self, data: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

    # ---- the client limits (checked by HttpServer every cleanup interval) --------------------
    def overdue(self, now: float, http: HttpConf) -> bool:
        """Whether this connection is to be closed now: a request still being read past
        ``request_timeout_s`` (its headers past ``header_timeout_s``), a refused one lingering
        past ``request_timeout_s``, or one idle past ``channel_timeout_s``; never one in service."""
        if self.lingering:
            return now - self.began > http.request_timeout_s
        if self.serving:
            return False
        if self.reading:
            if now - self.began > http.request_timeout_s:
                return True
            return not self.headers_done and now - self.began > http.header_timeout_s
        return not self.queue and now - self.last_activity > http.channel_timeout_s

    def idle(self) -> bool:
        """Nothing in service, nothing waiting, nothing left to send."""
        pending = self.transport.get_write_buffer_size() if self.transport is not None else 0
        return not self.serving and not self.queue and not pending

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


def _address(info: Any) -> tuple[str, int]:
    if isinstance(info, tuple) and len(info) >= 2:
        return str(info[0]), int(info[1])
    return ("", 0)
