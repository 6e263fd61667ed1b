"""``batchline serve``: load the configs (one file, several, or a directory),
warm every predictor, serve the app with waitress, reload on SIGHUP, and
drain on SIGTERM/SIGINT.

Shutdown order: stop admitting (new requests get 503), let every accepted
request finish, let the HTTP layer write the answers, then stop. Exit 0.
"""

from __future__ import annotations

import argparse
import logging
import signal
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

from waitress import create_server

from serving.config import ConfigError, ServingConfig
from serving.config.report import format_op_table
from serving.config.repository_files import RepositoryConfig, load_repository, repository_of
from serving.engine.pipeline import Pipeline
from serving.engine.pipeline_repository import PipelineRepository
from serving.errors import ServingError
from serving.http.app import create_app
from serving.http.auth import admin_token, auth_token
from serving.http.body_budget import BodyBudget, buffered_bytes
from serving.http.client_limits import guard_front, set_body_limit, waitress_options
from serving.http.exposure import INSECURE_ENV, OpenBindRefused, check_bind
from serving.http.front_gate import FrontGate

log = logging.getLogger(__name__)

DEFAULT_CONFIG = "pkg://configs/ocr.yml"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "config",
        nargs="*",
        default=[DEFAULT_CONFIG],
        metavar="CONFIG",
        help="pipeline config.yml files, or directories (every *.yml in them), all served on one port "
        f"(default: the embedded OCR pipeline, {DEFAULT_CONFIG})",
    )
    parser.add_argument("--host", default=None, help="bind address (default: config 'host', 127.0.0.1)")
    parser.add_argument("--port", type=int, default=None, help="port (default: config 'http_port')")
    parser.add_argument(
        "--insecure",
        action="store_true",
        help=f"serve a non-loopback --host without a token (behind your own gateway; also: config "
        f"'security: {{insecure: true}}', {INSECURE_ENV}=1)",
    )
    parser.add_argument("--no-warmup", action="store_true", help="skip warming predictor shapes at start-up")


def http_threads(config: RepositoryConfig) -> int:
    """``worker_num`` threads do the HTTP work; one more per admissible
    request lets a request beyond ``max_queue_size`` (summed over the
    pipelines) reach admission control and get a fast 503 instead of waiting
    in the socket backlog."""
    return config.worker_num + config.max_queue_size


class Server:
    """The pipelines of a repository behind waitress; :meth:`run` blocks until drained."""

    def __init__(
        self,
        config: ServingConfig | RepositoryConfig,
        *,
        host: str | None = None,
        port: int | None = None,
        warmup: bool = True,
        insecure: bool = False,
    ):
        self.config = config if isinstance(config, RepositoryConfig) else repository_of(config)
        # the tokens, resolved once: the app checks them, and the waitress front before any body
        self.gate = FrontGate(auth_token(self.config.auth_token), admin_token(self.config.admin_token))
        self.host = host or self.config.host
        # before anything loads: an open server on the network does not start (OpenBindRefused)
        check_bind(self.host, token=self.gate.auth_token, insecure=insecure or self.config.security.insecure)
        self.repository = PipelineRepository(self.config, warmup=warmup)
        self.warmup = warmup
        self.app = create_app(self.repository, auth_token=self.gate.auth_token, admin_token=self.gate.admin_token)
        self.port = self.config.http_port if port is None else port
        self._stopping = threading.Event()
        self._started = threading.Event()  # every pipeline of generation 1 loaded: a reload may run
        self._waitress: Any = None
        # request bodies the HTTP front holds at once; sized by _apply_body_limits once listening
        self.body_budget = BodyBudget(0)
        self._serve_thread: threading.Thread | None = None

    def start_listening(self) -> None:
        threads = http_threads(self.config)
        self._waitress = create_server(
            self.app,
            host=self.host,
            port=self.port,
            threads=threads,
            **waitress_options(self.config.http, threads),
            backlog=2048,
            channel_request_lookahead=1,
            ident="batchline",
            clear_untrusted_proxy_headers=True,
        )
        guard_front(self._waitress, self.config.http, self.gate, self.body_budget)
        self.repository.on_reload(self._apply_body_limits)
        self.port = self._waitress.effective_port

    def _apply_body_limits(self) -> None:
        """The app's body limit (MAX_CONTENT_LENGTH, the largest max_body_size served) is
        waitress's too, so an over-limit body is refused before it is buffered, and sizes the
        derived body budget; a reload may change it (``http`` itself needs a restart)."""
        limit = self.app.config["MAX_CONTENT_LENGTH"]
        set_body_limit(self._waitress, limit)
        self.body_budget.resize(buffered_bytes(self.config.http.max_buffered_mb, limit))

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def pipeline(self) -> Pipeline:
        """The default version of the first pipeline (the only one, for a single config)."""
        return self.repository.pipeline(self.config.pipelines[0].name)

    def run(self) -> int:
        self.start_listening()
        for pconf in self.config.pipelines:
            log.info("pipeline %s v%d:\n%s", pconf.name, pconf.effective_version, format_op_table(pconf.op_table()))
        self._serve_thread = threading.Thread(target=self._waitress.run, name="waitress", daemon=True)
        self._serve_thread.start()
        # SIGHUP's default action ends the process: take it over before the (long) loading, where an
        # edited config is likely; the reload it asks for waits until loading is done
        self._install_signal(signal.SIGHUP, lambda signum, frame: self.reload_in_background())
        log.info("loading and warming predictors ...")
        self.repository.start()
        self._started.set()
        for name in self.config.routes:
            log.info("ready: POST %s/%s/prediction", self.url, name)
        log.info("health %s/health/ready, pipelines %s/pipelines", self.url, self.url)
        self._install_signals()
        self._stopping.wait()
        self._drain()
        return 0

    def _install_signals(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT):
            self._install_signal(sig, lambda signum, frame: self.stop())

    @staticmethod
    def _install_signal(sig: signal.Signals, handler: Callable[[int, FrameType | None], Any]) -> None:
        if threading.current_thread() is threading.main_thread():  # Python's rule (LiveApp runs us in a thread)
            signal.signal(sig, handler)

    def reload_in_background(self) -> threading.Thread:
        """Re-read the configs (SIGHUP): never in the signal handler itself, it would block serving."""
        thread = threading.Thread(target=self._reload_logged, name="reload", daemon=True)
        thread.start()
        return thread

    def _reload_logged(self) -> None:
        self._started.wait()
        try:
            report = self.repository.reload()
        except ServingError as exc:
            log.error("SIGHUP reload: %s", exc.message)
            return
        log.info("SIGHUP reload done: %s", report.as_dict())

    def stop(self) -> None:
        self._stopping.set()

    def _drain(self) -> None:
        log.info("draining: refusing new requests, finishing accepted ones")
        drained = self.repository.shutdown()
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
        config = load_repository(args.config)
    except ConfigError as exc:
        log.error("%s", exc)
        return 2
    try:
        server = Server(config, host=args.host, port=args.port, warmup=not args.no_warmup, insecure=args.insecure)
    except OpenBindRefused as exc:
        log.error("%s", exc)
        return 2
    return server.run()
