"""The waitress front of one process: the app behind waitress with batchline's
client limits (:mod:`serving.http.client_limits`), run in a thread, and its
part of a drain (answer what was accepted, flush, close).

The single-process server runs one in the engine's process; with
``http.front_workers`` each front process runs one on the shared listening socket
(:mod:`serving.http.front_process`)."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

from flask import Flask
from waitress import create_server

from serving.config.schema import HttpConf
from serving.http.client_limits import guard_front, set_body_limit, waitress_options
from serving.http.front_gate import FrontGate
from serving.service.body_budget import BodyBudget, front_buffered_bytes
from serving.service.handler_count import HandlerCount


class WaitressFront:
    """``app`` behind waitress on ``host:port``, or on an already bound ``sock``."""

    def __init__(
        self,
        app: Flask,
        http: HttpConf,
        gate: FrontGate,
        *,
        threads: int,
        host: str = "127.0.0.1",
        port: int = 0,
        sock: socket.socket | None = None,
        budget_share: float = 1.0,
    ):
        self.app = app
        self.http = http
        # request bodies this front holds at once; sized by apply_body_limits
        self.body_budget = BodyBudget(0)
        self._budget_share = budget_share
        listen: dict[str, Any] = {"sockets": [sock]} if sock is not None else {"host": host, "port": port}
        self.waitress: Any = create_server(
            app,
            threads=threads,
            **waitress_options(http, threads),
            **listen,
            backlog=2048,
            channel_request_lookahead=1,
            ident="batchline",
            clear_untrusted_proxy_headers=True,
        )
        guard_front(self.waitress, http, gate, self.body_budget)
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self.waitress.effective_port)

    def apply_body_limits(self) -> None:
        """The app's body limit (MAX_CONTENT_LENGTH, the largest max_body_size served) is
        waitress's too, so an over-limit body is refused before it is buffered, and sizes the
        derived body budget; a reload may change it (``http`` itself needs a restart)."""
        limit = self.app.config["MAX_CONTENT_LENGTH"]
        set_body_limit(self.waitress, limit)
        self.body_budget.resize(front_buffered_bytes(self.http.max_buffered_mb, limit, self._budget_share))

    def start(self) -> None:
        self._thread = threading.Thread(target=self.waitress.run, name="waitress", daemon=True)
        self._thread.start()

    def drain(self, handlers: HandlerCount) -> None:
        """After the engine stopped admitting: let every running handler answer,
        flush the answers, then close every connection and the listening socket."""
        handlers.wait_zero(timeout=10)
        self._wait_flushed(timeout=5)
        self.waitress.task_dispatcher.shutdown(cancel_pending=False, timeout=5)
        # Sockets are closed inside waitress's own loop thread (its trigger runs
        # the call there): closed from here, a select() in that thread could
        # still be watching them and fail with EBADF.
        self.waitress.trigger.pull_trigger(self._close_sockets)
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _close_sockets(self) -> None:
        """Close every connection and the listening socket; the loop then has nothing left and returns."""
        for channel in list(self.waitress.active_channels.values()):
            channel.close()
        self.waitress.close()

    def _wait_flushed(self, timeout: float) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            channels = list(self.waitress.active_channels.values())
            if all(not ch.requests and not ch.total_outbufs_len for ch in channels):
                return
            time.sleep(0.02)
