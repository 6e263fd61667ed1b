"""``batchline serve``: load the config, warm every predictor, serve the app
with waitress, and drain on SIGTERM/SIGINT.

Shutdown order: stop admitting (new requests get 503), let every accepted
request finish, let the HTTP layer write the answers, then stop. Exit 0.
"""

from __future__ import annotations

import argparse
import logging
import signal
import threading
import time
from typing import Any

from waitress import create_server

from serving.config import ConfigError, ServingConfig, load_config
from serving.config.report import format_op_table
from serving.engine.pipeline import Pipeline
from serving.http.app import create_app
from serving.http.auth import auth_token

log = logging.getLogger(__name__)

DEFAULT_CONFIG = "pkg://configs/ocr.yml"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "config",
        nargs="?",
        default=DEFAULT_CONFIG,
        help=f"pipeline config.yml (default: the embedded OCR pipeline, {DEFAULT_CONFIG})",
    )
    parser.add_argument("--host", default=None, help="bind address (default: config 'host', 127.0.0.1)")
    parser.add_argument("--port", type=int, default=None, help="port (default: config 'http_port')")
    parser.add_argument("--no-warmup", action="store_true", help="skip warming predictor shapes at start-up")


def http_threads(config: ServingConfig) -> int:
    """``worker_num`` threads do the HTTP work; one more per admissible
    request lets a request beyond ``max_queue_size`` reach admission control
    and get a fast 503 instead of waiting in the socket backlog."""
    return config.worker_num + config.dag.max_queue_size


class Server:
    """One pipeline behind waitress; :meth:`run` blocks until drained."""

    def __init__(self, config: ServingConfig, *, host: str | None = None, port: int | None = None, warmup: bool = True):
        self.config = config
        self.pipeline = Pipeline(config)
        self.warmup = warmup
        self.app = create_app(self.pipeline, auth_token=auth_token(config.auth_token))
        self.host = host or config.host
        self.port = config.http_port if port is None else port
        self._stopping = threading.Event()
        self._waitress: Any = None
        self._serve_thread: threading.Thread | None = None

    def start_listening(self) -> None:
        threads = http_threads(self.config)
        self._waitress = create_server(
            self.app,
            host=self.host,
            port=self.port,
            threads=threads,
            connection_limit=threads + 128,
            backlog=2048,
            channel_request_lookahead=1,
            # waitress refuses (plain 413, unread) bodies far over the limit; those
            # just over it still reach Flask for a JSON 413 naming the limit
            max_request_body_size=2 * self.app.config["MAX_CONTENT_LENGTH"] + (64 << 10),
            ident="batchline",
            clear_untrusted_proxy_headers=True,
        )
        self.port = self._waitress.effective_port

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def run(self) -> int:
        self.start_listening()
        log.info("pipeline %s:\n%s", self.pipeline.name, format_op_table(self.pipeline.op_table()))
        self._serve_thread = threading.Thread(target=self._waitress.run, name="waitress", daemon=True)
        self._serve_thread.start()
        log.info("loading and warming predictors ...")
        self.pipeline.start(warmup=self.warmup)
        log.info("ready: POST %s/%s/prediction (health %s/health/ready)", self.url, self.pipeline.name, self.url)
        self._install_signals()
        self._stopping.wait()
        self._drain()
        return 0

    def _install_signals(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda signum, frame: self.stop())

    def stop(self) -> None:
        self._stopping.set()

    def _drain(self) -> None:
        log.info("draining: refusing new requests, finishing accepted ones")
        drained = self.pipeline.shutdown()
        handlers = self.app.extensions["batchline.handlers"]
        handlers.wait_zero(timeout=10)
        self._wait_flushed(timeout=5)
        self._waitress.task_dispatcher.shutdown(cancel_pending=False, timeout=5)
        # Sockets are closed inside waitress's own loop thread (its trigger runs
        # the call there): closed from here, a select() in that thread could
        # still be watching them and fail with EBADF.
        self._waitress.trigger.pull_trigger(self._close_sockets)
        if self._serve_thread is not None:
            self._serve_thread.join(timeout=5)
        log.info("stopped (%s)", "all accepted requests answered" if drained else "drain timed out")

    def _close_sockets(self) -> None:
        """Close every connection and the listening socket; the loop then has nothing left and returns."""
        for channel in list(self._waitress.active_channels.values()):
            channel.close()
        self._waitress.close()

    def _wait_flushed(self, timeout: float) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            channels = list(self._waitress.active_channels.values())
            if all(not ch.requests and not ch.total_outbufs_len for ch in channels):
                return
            time.sleep(0.02)


def main(args: argparse.Namespace) -> int:
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        log.error("%s", exc)
        return 2
    server = Server(config, host=args.host, port=args.port, warmup=not args.no_warmup)
    return server.run()
