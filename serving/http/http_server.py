"""The asyncio front: HTTP/1.1 read by ``httptools`` on an event loop (uvloop
where installed) in a thread of its own, each complete request run through
the WSGI app in a worker thread (:mod:`serving.http.wsgi_call`).

The one in-process HTTP server (docs/DESIGN_NOTES.md, "The house, round 3"):
waitress, which it replaced, handed every request from its loop thread to a
worker through a queue and a condition, a hand-off that cost about as much as
a small Flask app itself (docs/BENCHMARKS.md, "HTTP fronts alone"). This front
keeps waitress's answers (tests/integration/test_asyncio_front.py holds them)
and batchline's rules on it:

* :class:`~serving.http.early_refusals.FrontGate`'s refusals the moment a
  request's headers are complete, before its body is read: 401 without the
  token, 413 over the body limit, 503 when the body budget has no room (a
  chunked body claims as it arrives). A connection past
  ``http.connection_limit`` is answered 503 as soon as it is accepted. A
  refused connection answers, shuts its side and drops what the client still
  sends until it closes or the request's deadline passes, so the client reads
  the answer instead of a reset.
* the client limits (:meth:`~serving.http.http_connection.Connection.overdue`): headers within
  ``header_timeout_s`` of a request's first byte, the whole request within
  ``request_timeout_s``, idle connections closed after ``channel_timeout_s``;
  a header block over waitress's 256 KiB is refused with 431 while it still
  arrives, and so are more than 256 header fields.
* bounded per connection before any request is complete
  (:class:`~serving.http.http_connection.Connection` frames requests itself):
  a header block is held raw until its blank line, a chunked body is counted
  on the wire (framing included) against the body limit and the budget and
  stored whole, without a piece per chunk.
* one request in progress per connection: bytes after it (pipelined requests)
  stay unparsed, up to a read-ahead that still notices a client gone while its
  request waits; and while the client does not read its answers (the
  transport's write buffer is full), nothing more is read or answered.
* drain: running handlers answer, answers are flushed, then every connection
  and the listening socket close.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from typing import Any

from serving.config.schema import HttpConf
from serving.http import shared_port
from serving.http.early_refusals import FrontGate, cleanup_interval
from serving.http.http_connection import Connection, FrontState
from serving.service.body_budget import BodyBudget, front_buffered_bytes
from serving.service.handler_count import HandlerCount

log = logging.getLogger(__name__)


def new_event_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:  # a platform without uvloop: asyncio's own loop, slower
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


class HttpServer:
    """``app`` (a WSGI app with a ``body_limit``: :class:`~serving.http.app.HttpApp`) on an
    asyncio front on ``host:port``, or on an already bound ``sock``."""

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
        self.body_budget = BodyBudget(0)
        self._budget_share = budget_share
        self.state = FrontState(app, http, gate, self.body_budget, threads, answers_on_loop)
        self._loop = new_event_loop()
        self._sock = sock if sock is not None else shared_port.listen_alone(host, port)
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None
        self._started = threading.Event()
        self._failure: BaseException | None = None
        self.apply_body_limits()

    @property
    def port(self) -> int:
        return int(self._sock.getsockname()[1])

    def apply_body_limits(self) -> None:
        """The app's body limit and the body budget derived from it."""
        limit = int(self.app.body_limit)
        self.state.body_limit = limit
        self.body_budget.resize(front_buffered_bytes(self.http.max_buffered_mb, limit, self._budget_share))

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run_loop, name="http-loop", daemon=True)
        self._thread.start()
        self._started.wait(timeout=30)
        if self._failure is not None:
            raise self._failure

    def _run_loop(self) -> None:
        asyncio.set_event_loop(self._loop)
        loop = self._loop

        async def serve() -> None:
            self._sock.setblocking(False)
            self._server = await loop.create_server(lambda: Connection(self.state, loop), sock=self._sock, backlog=2048)
            self._started.set()
            await self._enforce_limits()

        try:
            loop.run_until_complete(serve())
        except asyncio.CancelledError:
            pass  # the drain
        except BaseException as exc:  # noqa: BLE001 - start() raises it in the caller's thread
            self._failure = exc
        finally:
            self._started.set()
            loop.run_until_complete(asyncio.sleep(0.05))  # the closed transports' last callbacks
            loop.close()

    async def _enforce_limits(self) -> None:
        interval = cleanup_interval(self.http)
        while True:
            await asyncio.sleep(interval)
            now = time.monotonic()
            for connection in list(self.state.connections):
                if connection.overdue(now, self.http):
                    connection.close()

    def drain(self, handlers: HandlerCount) -> None:
        """After the engine stopped admitting: let every running handler answer,
        flush the answers, then close every connection and the listening socket."""
        handlers.wait_zero(timeout=10)
        self._wait_idle(timeout=5)
        if self._thread is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._close_all)
            self._thread.join(timeout=5)
        self.state.executor.shutdown(wait=False, cancel_futures=True)

    def _wait_idle(self, timeout: float) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if all(c.idle() for c in list(self.state.connections)):
                return
            time.sleep(0.02)

    def _close_all(self) -> None:
        if self._server is not None:
            self._server.close()
        for connection in list(self.state.connections):
            connection.close()
        for task in asyncio.all_tasks(self._loop):
            task.cancel()
