"""``--protocol grpc``: Paddle Serving's ``PipelineService.inference`` on the
server's ``rpc_port``, with the messages of its ``.proto`` (serving/protos).

A request is what Paddle Serving's ``PipelineClient`` sends: ``key``/``value``
strings (``"image"`` with base64, or ``"text"``) and the ``logid``; the pipeline
goes in ``name``, a version in ``method`` (``v<N>/prediction``, as the HTTP path
names it). ``priority`` and ``timeout_ms`` go as call metadata, which the server
reads as the HTTP API reads them from a JSON body. A failure comes back in the
answer (``err_no`` != 0: the HTTP status the same request gets over HTTP), as
Paddle Serving answers it (a ``retry-after`` trailer, when the server sends one,
is a 503's Retry-After); only a refused token is a gRPC status."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from serving.protos import pipeline_messages

from .answers import PipelineError, parse_value
from .grpc_calls import GrpcCalls, Metadata, retry_after, route_metadata
from .request_body import b64

METHOD = "/baidu.paddle_serving.pipeline_serving.PipelineService/inference"


@dataclass(frozen=True)
class GrpcRequest:
    """A request message serialized once, without its pipeline (added per call), and its metadata."""

    data: bytes
    metadata: Metadata = ()


def options_metadata(priority: int | None, timeout_ms: int | None) -> Metadata:
    """``priority`` and ``timeout_ms`` as the call metadata the server reads them from."""
    pairs = (("priority", priority), ("timeout_ms", timeout_ms))
    return tuple((key, str(int(value))) for key, value in pairs if value is not None)


def encode(
    inputs: Sequence[tuple], *, priority: int | None = None, timeout_ms: int | None = None, logid: int = 0
) -> GrpcRequest:
    """``inputs`` (``[("image", bytes) | ("text", str), ...]``) as one ``Request``."""
    message = pipeline_messages().Request(
        key=[kind for kind, _ in inputs],
        value=[b64(value) if kind == "image" else str(value) for kind, value in inputs],
        logid=logid,
    )
    return GrpcRequest(message.SerializeToString(), options_metadata(priority, timeout_ms))


def method_of(version: int | None) -> str:
    """The ``method`` field: the HTTP path's rest after the pipeline name."""
    return "prediction" if version is None else f"v{version}/prediction"


class PaddleGrpc:
    """Calls to ``PipelineService.inference`` at ``rpc_url`` (``HOST:PORT``)."""

    def __init__(self, rpc_url: str, *, timeout: float, token: str | None):
        self._calls = GrpcCalls(rpc_url, timeout=timeout, token=token)
        self._messages = pipeline_messages()
        self._inference = self._calls.unary(METHOD, self._messages.Response.FromString)

    def results(
        self, name: str, request: GrpcRequest, *, version: int | None, route_key: str | None, route_header: str
    ) -> list[Any]:
        """One parsed result per input, as ``/{name}/prediction`` answers them; PipelineError on failure."""
        # serialized messages concatenate as a merge: the prepared request plus its name and method
        routing = self._messages.Request(name=name, method=method_of(version)).SerializeToString()
        metadata = request.metadata + route_metadata(route_key, route_header)
        answer, call = self._inference(request.data + routing, metadata)
        if answer.err_no != 0:
            message = answer.err_msg or f"err_no={answer.err_no}"
            raise PipelineError(answer.err_no, message, retry_after=retry_after(call), body=answer.err_msg)
        return [parse_value(value) for value in answer.value]

    def close(self) -> None:
        self._calls.close()
