"""``--protocol v2-grpc``: the Open Inference Protocol's
``GRPCInferenceService/ModelInfer`` on the server's ``rpc_port``, with the
messages of serving/protos. The input tensor's elements go in
``raw_input_contents`` (length-prefixed BYTES, client/v2_tensors.py) and the
``"result"`` output comes back in ``raw_output_contents``; ``priority`` and
``timeout`` are request parameters, a version is ``model_version``. A failure is
a gRPC status, read back as :class:`~client.answers.PipelineError`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from serving.protos import inference_messages

from . import v2_tensors
from .answers import PipelineError
from .grpc_calls import GrpcCalls, route_metadata

METHOD = "/inference.GRPCInferenceService/ModelInfer"


@dataclass(frozen=True)
class InferRequest:
    """A ``ModelInferRequest`` serialized once, without its model (added per call), and its rows."""

    data: bytes
    rows: int


def encode(
    inputs: Sequence[tuple], *, priority: int | None = None, timeout_ms: int | None = None, logid: int = 0
) -> InferRequest:
    """``inputs`` (``[("image", bytes) | ("text", str), ...]``, one kind) as one ``ModelInferRequest``."""
    m = inference_messages()
    kind, elements = v2_tensors.input_tensor(inputs)
    tensor = m.ModelInferRequest.InferInputTensor(name=kind, datatype=v2_tensors.DATATYPE, shape=[len(elements)])
    message = m.ModelInferRequest(
        id=str(logid),
        inputs=[tensor],
        outputs=[m.ModelInferRequest.InferRequestedOutputTensor(name=v2_tensors.RESULT)],
        raw_input_contents=[v2_tensors.pack_bytes(elements)],
    )
    for key, value in v2_tensors.parameters(priority, timeout_ms).items():
        message.parameters[key].int64_param = value
    return InferRequest(message.SerializeToString(), len(elements))


def result_elements(answer: Any) -> list[bytes]:
    """The ``"result"`` output's elements; ValueError when the answer has none."""
    for i, output in enumerate(answer.outputs):
        if output.name == v2_tensors.RESULT:
            if i < len(answer.raw_output_contents):
                return v2_tensors.unpack_bytes(answer.raw_output_contents[i])
            return list(output.contents.bytes_contents)
    raise ValueError(f"the answer has no {v2_tensors.RESULT!r} output")


class V2Grpc:
    """Calls to ``ModelInfer`` at ``rpc_url`` (``HOST:PORT``)."""

    def __init__(self, rpc_url: str, *, timeout: float, token: str | None):
        self._calls = GrpcCalls(rpc_url, timeout=timeout, token=token)
        self._messages = inference_messages()
        self._infer = self._calls.unary(METHOD, self._messages.ModelInferResponse.FromString)

    def results(
        self, name: str, request: InferRequest, *, version: int | None, route_key: str | None, route_header: str
    ) -> list[Any]:
        """One parsed result per input, as ``/{name}/predict`` answers them; PipelineError on failure."""
        model = self._messages.ModelInferRequest(model_name=name, model_version="" if version is None else str(version))
        # serialized messages concatenate as a merge: the prepared request plus its model
        answer, _ = self._infer(request.data + model.SerializeToString(), route_metadata(route_key, route_header))
        try:
            return v2_tensors.results(result_elements(answer), request.rows)
        except ValueError as e:
            raise PipelineError(200, f"unreadable v2 answer: {e}") from e

    def close(self) -> None:
        self._calls.close()
