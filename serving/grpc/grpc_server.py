"""The gRPC server on ``rpc_port``: every service of :data:`SERVICES` on one port,
in the engine's process. Its thread pool is as large as the HTTP front's, and calls
beyond it are refused at once (RESOURCE_EXHAUSTED) rather than queued without
bound; a message over the largest pipeline's ``max_body_size`` is refused by grpc
before it is parsed. What the calls hold of their messages is room in the body
budget (:mod:`serving.grpc.message_room`); a call not reading its message yet
holds a stream window of it, since BDP probing, which grows every stream's
window toward the bandwidth-delay product (the whole message, on a fast link),
is off: 40 calls of 8 MB waiting for room held 310 MB with it, 5 MB without."""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import grpc

from serving.config.file_set import RepositoryConfig
from serving.grpc import inference_service, pipeline_service
from serving.grpc.context import GrpcServices
from serving.service.limits import http_threads

log = logging.getLogger(__name__)

SERVICES: tuple[Callable[[GrpcServices], grpc.GenericRpcHandler], ...] = (
    pipeline_service.handler,
    inference_service.handler,
)


def address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class GrpcServer:
    """Started by :meth:`start`; :meth:`drain` lets calls in flight finish."""

    def __init__(self, services: GrpcServices, config: RepositoryConfig, *, host: str, port: int):
        threads = http_threads(config)
        self.room = services.room  # what the calls hold of their messages
        self._server = grpc.server(
            ThreadPoolExecutor(max_workers=threads, thread_name_prefix="grpc"),
            handlers=[make(services) for make in SERVICES],
            maximum_concurrent_rpcs=threads,
            options=[
                # the largest body any pipeline takes over HTTP (a reload that raises it needs a restart here)
                ("grpc.max_receive_message_length", services.room.message_limit),
                ("grpc.max_send_message_length", -1),
                # a stream's window grows to its message once the handler reads it (message_room), not before
                ("grpc.http2.bdp_probe", 0),
                # one server per port: without this a second server binds the same port silently
                ("grpc.so_reuseport", 0),
            ],
        )
        self.port = self._server.add_insecure_port(address(host, port))
        if not self.port:
            raise OSError(f"cannot listen for gRPC on {address(host, port)} (rpc_port)")

    def start(self) -> None:
        self._server.start()

    def drain(self, grace_s: float) -> None:
        """Refuse new calls; wait up to ``grace_s`` for the running ones, then cancel them."""
        self._server.stop(grace_s).wait()
