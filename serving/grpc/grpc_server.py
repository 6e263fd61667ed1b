"""The gRPC server on ``rpc_port``: every service of :data:`SERVICES`, in the engine's
process. Calls beyond its thread pool are refused at once (RESOURCE_EXHAUSTED), not queued.
BDP probing is off: it grows every stream's window toward the whole message before the
handler takes room for it (40 waiting 8 MB calls held 310 MB with it, 5 MB without)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import grpc

from serving.config.file_set import RepositoryConfig
from serving.grpc import inference_service, pipeline_service
from serving.grpc.call import Call
from serving.grpc.message_room import MessageRoom
from serving.grpc.wire_count import RequestMessage
from serving.service.body_budget import Claim
from serving.service.core import RequestCore
from serving.service.limits import http_threads

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GrpcServices:
    """What every gRPC service is built from: the request core every door shares (its
    handler count: the calls running now), the token, and the room messages are read in."""

    core: RequestCore
    auth_token: str | None
    room: MessageRoom

    def read(self, messages: Iterator[bytes], call: Call, request: RequestMessage, claim: Claim) -> Any:
        """The call's one message, read under ``claim`` (shrunk to its size), counted, parsed."""
        return request.parse(self.room.read_one(messages, call, claim), self.core.max_values())


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
