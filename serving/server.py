"""``batchline serve``: load the configs, warm every predictor, serve HTTP (and gRPC), reload on
SIGHUP, and drain on SIGTERM/SIGINT: stop admitting (503), answer what was accepted, stop.
"""

from __future__ import annotations

import argparse
import functools
import gc
import logging
import signal
import socket
import threading
from collections.abc import Callable, Sequence
from types import FrameType
from typing import Any

from serving.batching.live_pipelines import PipelineRepository
from serving.batching.metrics import Metrics
from serving.batching.pipeline import Pipeline
from serving.config import ConfigError, ServingConfig
from serving.config.file_set import RepositoryConfig, load_repository, repository_of
from serving.config.report import format_op_table
from serving.errors import ServingError
from serving.grpc.grpc_server import GrpcServer, GrpcServices
from serving.grpc.message_room import MessageRoom
from serving.http import shared_port
from serving.http.app import create_app
from serving.http.early_refusals import FrontGate
from serving.http.front_processes.workers import FrontsFailed, FrontWorkers
from serving.http.http_server import HttpServer
from serving.paddle_serving.launch import is_service_script, load_service_repository
from serving.runners.gpus import Nvml, open_gpus
from serving.runners.heap_trim import HeapTrim
from serving.service.auth import admin_token, auth_token
from serving.service.body_budget import BodyBudget, front_buffered_bytes
from serving.service.exposure import INSECURE_ENV, OpenBindRefused, check_bind
from serving.service.limits import http_threads, largest_body_size

log = logging.getLogger(__name__)

DEFAULT_CONFIG = "pkg://configs/ocr.yml"
GRPC_GRACE_S = 10.0  # drain: how long grpc may take to write the answers of finished calls


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
        "--rpc-port",
        type=int,
        default=None,
        help="gRPC port: Paddle Serving's pipeline service and the Open Inference Protocol (default: config "
        "'rpc_port'; none: no gRPC; 0: a free port)",
    )
    parser.add_argument(
        "--insecure",
        action="store_true",
        help=f"serve a non-loopback --host without a token (behind your own gateway; also: config "
        f"'security: {{insecure: true}}', {INSECURE_ENV}=1)",
    )
    parser.add_argument("--no-warmup", action="store_true", help="skip warming predictor shapes at start-up")
    parser.add_argument(
        "--front-workers",
        type=int,
        default=None,
        metavar="N",
        help="HTTP front processes (default: config 'http.front_workers'; 0: HTTP in the engine's process)",
    )


class Server:
    """The pipelines of a repository behind an HTTP front; :meth:`run` blocks until drained."""

    def __init__(
        self,
        config: ServingConfig | RepositoryConfig,
        *,
        host: str | None = None,
        port: int | None = None,
        warmup: bool = True,
        insecure: bool = False,
        front_workers: int | None = None,
        rpc_port: int | None = None,
        nvml: Nvml | None = None,
        loader: Callable[[Sequence[str]], RepositoryConfig] = load_repository,
    ):
        self.config = config if isinstance(config, RepositoryConfig) else repository_of(config)
        # the tokens, resolved once: the app checks them, and the HTTP front before any body
        self.gate = FrontGate(auth_token(self.config.auth_token), admin_token(self.config.admin_token))
        self.host = host or self.config.host
        # before anything loads: an open server on the network does not start (OpenBindRefused)
        check_bind(self.host, token=self.gate.auth_token, insecure=insecure or self.config.security.insecure)
        # ``nvml``: a stand-in for pynvml (tests)
        metrics = Metrics(gpus=open_gpus(nvml))
        self.repository = PipelineRepository(self.config, metrics=metrics, warmup=warmup, loader=loader)
        self.front_workers = self.config.http.front_workers if front_workers is None else front_workers
        self.app = create_app(self.repository, auth_token=self.gate.auth_token, admin_token=self.gate.admin_token)
        # one request core beneath every door of this process: the HTTP app's routes and gRPC's services
        self.core = self.app.core
        self.port = self.config.http_port if port is None else port
        self.rpc_port = self.config.rpc_port if rpc_port is None else rpc_port
        self.grpc: GrpcServer | None = None  # on rpc_port, in this process
        self._stopping = threading.Event()
        self._started = threading.Event()  # every pipeline of generation 1 loaded: a reload may run
        self.front: HttpServer | None = None  # in this process (front_workers: 0)
        self.fronts: FrontWorkers | None = None  # in their own processes
        self._port_holder: socket.socket | None = None  # keeps the fronts' port (serving.http.shared_port)

    @property
    def body_budget(self) -> BodyBudget:
        """The request bodies this process's HTTP front holds at once (front_workers: 0), gRPC messages too."""
        if self.front is None:
            raise RuntimeError("the HTTP front runs in front processes (http.front_workers), or not yet")
        return self.front.body_budget

    def start_listening(self) -> None:
        if self.front_workers:
            # gRPC first: a port in use fails before any front process starts
            self._listen_grpc(self._front_share_budget())
            self._port_holder = shared_port.reserve(self.host, self.port)
            self.port = self._port_holder.getsockname()[1]
            self.fronts = FrontWorkers(self.repository, self.host, self.port, self.front_workers, self.gate)
            self.fronts.start()
            return
        self.front = HttpServer(
            self.app, self.config.http, self.gate, threads=http_threads(self.config), host=self.host, port=self.port
        )
        self.repository.on_reload(self.front.apply_body_limits)
        self.port = self.front.port
        # HTTP bodies and gRPC messages take their bytes from one budget
        self._listen_grpc(self.front.body_budget)

    def _listen_grpc(self, budget: BodyBudget) -> None:
        if self.rpc_port is None:
            return
        room = MessageRoom(budget, largest_body_size(self.config), self.config.http.request_timeout_s)
        self.grpc = GrpcServer(
            GrpcServices(self.core, self.gate.auth_token, room), self.config, host=self.host, port=self.rpc_port
        )
        self.rpc_port = self.grpc.port

    def _front_share_budget(self) -> BodyBudget:
        """gRPC's messages (in this process, the bodies being the fronts'): a budget of one front
        process's share, resized on each reload as a front resizes its own."""
        budget = BodyBudget(0)
        share = 1.0 / self.front_workers

        def size() -> None:
            largest = largest_body_size(self.repository.config)
            budget.resize(front_buffered_bytes(self.config.http.max_buffered_mb, largest, share))

        size()
        self.repository.on_reload(size)
        return budget

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
        if self.grpc is not None:
            self.grpc.start()
            log.info(
                "gRPC on %s:%d: Paddle Serving's PipelineService and the Open Inference Protocol",
                self.host,
                self.rpc_port,
            )
        if self.front is not None:
            self.front.start()
        else:
            pids = self.fronts.pids if self.fronts is not None else []
            log.info("%d front processes serve HTTP: pids %s", self.front_workers, pids)
        # SIGHUP's default would end the process: taken over before the long loading (the reload waits for it)
        self._install_signal(signal.SIGHUP, lambda signum, frame: self.reload_in_background())
        log.info("loading and warming predictors ...")
        self.repository.start()
        # what loading built lives as long as the server: the collector need not walk it again
        gc.freeze()
        self._started.set()
        for name in self.config.routes:
            log.info("ready: POST %s/%s/prediction", self.url, name)
        log.info("health %s/health/ready, pipelines %s/pipelines", self.url, self.url)
        for sig in (signal.SIGTERM, signal.SIGINT):
            self._install_signal(sig, lambda signum, frame: self.stop())
        heap = HeapTrim().start()  # bodies, messages and decoded images freed: their pages back to the system
        self._stopping.wait()
        self._drain()
        heap.stop()
        return 0

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
        if self.front is not None:
            self.front.drain(self.core.handlers)
        if self.fronts is not None:
            self.fronts.drain()
        if self.grpc is not None:
            # every accepted call is answered already; this lets grpc write the last answers
            self.grpc.drain(GRPC_GRACE_S)
        if self._port_holder is not None:
            self._port_holder.close()
        log.info("stopped (%s)", "all accepted requests answered" if drained else "drain timed out")


def main(args: argparse.Namespace) -> int:
    loader: Callable[[Sequence[str]], RepositoryConfig] = load_repository
    if is_service_script(args.config):  # a Paddle Serving web_service.py
        if args.front_workers:
            log.error("--front-workers: a Paddle Serving script's request and response ops run in this process")
            return 2
        loader = functools.partial(load_service_repository, script_args=getattr(args, "script_args", []))
        args.front_workers = 0
    try:
        config = loader(args.config)
    except ConfigError as exc:
        log.error("%s", exc)
        return 2
    try:
        server = Server(
            config,
            host=args.host,
            port=args.port,
            warmup=not args.no_warmup,
            insecure=args.insecure,
            front_workers=args.front_workers,
            rpc_port=args.rpc_port,
            loader=loader,
        )
    except (OpenBindRefused, OSError) as exc:
        log.error("%s", exc)
        return 2
    try:
        return server.run()
    except FrontsFailed as exc:
        log.error("%s", exc)
        return 1
