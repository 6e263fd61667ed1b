"""The Open Inference Protocol (KServe v2) over gRPC: ``inference.GRPCInferenceService`` as
tritonclient and KServe's client call it, with the HTTP routes' models, checks and answers
(:mod:`serving.service.open_inference`). ServerLive and ServerReady need no token (probes);
outputs go out as ``raw_output_contents``, as Triton answers. Methods of Triton's service
missing here are answered UNIMPLEMENTED by grpc itself."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import grpc

from serving.errors import BadRequest, ServingError, as_serving_error
from serving.grpc.call import Call, bytes_handler, without_frames
from serving.grpc.wire_count import RequestMessage
from serving.paddle_serving.door import PaddleServingDoor
from serving.paddle_serving.open_inference import answer_script
from serving.paddle_serving.stage import PADDLE_REQUEST
from serving.protos import INFERENCE_PACKAGE, inference_messages
from serving.service.limits import RequestLimits
from serving.service.open_inference.infer import CallFacts, model, prepare
from serving.service.open_inference.model import PLATFORM, ModelViews, parse_version, server_metadata
from serving.service.open_inference.request import InferRequest, InputTensor, RequestedOutput, checked_id

if TYPE_CHECKING:
    from serving.grpc.grpc_server import GrpcServices

log = logging.getLogger(__name__)

SERVICE = f"{INFERENCE_PACKAGE}.GRPCInferenceService"
PROTOCOL = "v2-grpc"  # requests by front end (metrics)


def parameters(entries: Mapping[str, Any]) -> dict[str, Any]:
    """A message's ``map<string, InferParameter>`` as plain values."""
    plain = {}
    for key, param in entries.items():
        which = param.WhichOneof("parameter_choice")
        if which is not None:
            plain[key] = getattr(param, which)
    return plain


#: the contents field of each datatype (BYTES: bytes_contents); a script reads numeric tensors
CONTENTS = {
    "BOOL": "bool_contents",
    "INT8": "int_contents",
    "INT16": "int_contents",
    "INT32": "int_contents",
    "INT64": "int64_contents",
    "UINT8": "uint_contents",
    "UINT16": "uint_contents",
    "UINT32": "uint_contents",
    "UINT64": "uint64_contents",
    "FP16": "fp32_contents",
    "FP32": "fp32_contents",
    "FP64": "fp64_contents",
    "BYTES": "bytes_contents",
}


def infer_request(message: Any) -> InferRequest:
    """A ``ModelInferRequest`` as the protocol-neutral request (its elements counted on the wire already)."""
    request_id = checked_id(message.id)
    raw = message.raw_input_contents
    if raw and len(raw) != len(message.inputs):
        raise BadRequest(f"raw_input_contents has {len(raw)} entries for {len(message.inputs)} inputs")
    inputs = []
    for i, tensor in enumerate(message.inputs):
        field = CONTENTS.get(tensor.datatype, "bytes_contents")
        elements = getattr(tensor.contents, field) if tensor.HasField("contents") else None
        inputs.append(
            InputTensor(
                tensor.name,
                tensor.datatype,
                list(tensor.shape),
                elements=elements if elements else None,
                serialized=raw[i] if raw else None,
            )
        )
    return InferRequest(
        inputs=inputs,
        outputs=[RequestedOutput(out.name, parameters(out.parameters)) for out in message.outputs],
        id=request_id,
        parameters=parameters(message.parameters),
    )


class InferenceService:
    def __init__(self, services: GrpcServices):
        self.services = services
        self.messages = inference_messages()
        self.views = ModelViews()
        self.door = PaddleServingDoor(services.core)
        m = self.messages
        self.requests = {
            name: RequestMessage(getattr(m, name))
            for name in ("ModelReadyRequest", "ServerMetadataRequest", "ModelMetadataRequest", "ModelInferRequest")
        }

    def _answer(self, context: grpc.ServicerContext, answer: Callable[[Call], Any], *, token: bool = True) -> Any:
        call = Call.of(context)
        with self.services.core.handlers:
            try:
                if token:
                    call.check_token(self.services.auth_token)  # before a byte of the message is read
                return answer(call)
            except ServingError as err:
                failure = err
            except Exception as exc:  # a fault here must not become grpc's bare UNKNOWN
                log.exception("unhandled error in %s", SERVICE)
                failure = as_serving_error(exc)
        call.abort(without_frames(failure))

    def _request(self, messages: Iterator[bytes], call: Call, name: str) -> Any:
        """A small method's message: read, counted and parsed under room given back at once."""
        with self.services.room.holding(call) as claim:
            return self.services.read(messages, call, self.requests[name], claim)

    # the probes need no token and carry an empty message: it is never read, so whatever a
    # client sends costs the server a flow-control window at most
    def server_live(self, messages: Iterator[bytes], context: grpc.ServicerContext) -> Any:
        live = lambda call: self.messages.ServerLiveResponse(live=self.services.core.repository.live)
        return self._answer(context, live, token=False)

    def server_ready(self, messages: Iterator[bytes], context: grpc.ServicerContext) -> Any:
        ready = lambda call: self.messages.ServerReadyResponse(ready=self.services.core.repository.ready)
        return self._answer(context, ready, token=False)

    def model_ready(self, messages: Iterator[bytes], context: grpc.ServicerContext) -> Any:
        def ready(call: Call) -> Any:
            request = self._request(messages, call, "ModelReadyRequest")
            core = self.services.core
            model(core, self.views, request.name, request.version)  # NOT_FOUND for a model not served
            return self.messages.ModelReadyResponse(ready=core.repository.ready)

        return self._answer(context, ready)

    def server_metadata(self, messages: Iterator[bytes], context: grpc.ServicerContext) -> Any:
        def metadata(call: Call) -> Any:
            self._request(messages, call, "ServerMetadataRequest")
            return self.messages.ServerMetadataResponse(**server_metadata())

        return self._answer(context, metadata)

    def model_metadata(self, messages: Iterator[bytes], context: grpc.ServicerContext) -> Any:
        def metadata(call: Call) -> Any:
            request = self._request(messages, call, "ModelMetadataRequest")
            view = model(self.services.core, self.views, request.name, request.version)
            tensor = self.messages.ModelMetadataResponse.TensorMetadata
            inputs = [] if view.input is None else [view.input]
            return self.messages.ModelMetadataResponse(
                name=view.name,
                versions=[str(v) for v in view.versions],
                platform=PLATFORM,
                inputs=[tensor(name=t.name, datatype=t.datatype, shape=t.shape) for t in inputs],
                outputs=[tensor(name=t.name, datatype=t.datatype, shape=t.shape) for t in view.outputs],
            )

        return self._answer(context, metadata)

    def model_infer(self, messages: Iterator[bytes], context: grpc.ServicerContext) -> Any:
        def run(call: Call) -> Any:
            # read under room in the body budget, given back once the inputs are decoded (message_room)
            claim = self.services.room.take(call)
            try:
                message = self.services.read(messages, call, self.requests["ModelInferRequest"], claim)
                name, version = message.model_name, message.model_version
                facts = CallFacts(
                    protocol=PROTOCOL,
                    size=message.ByteSize(),
                    header=call.headers.get,
                    gone=call.gone(),
                    cap_timeout_ms=call.timeout_ms,
                    submitted=claim.release,
                )
                number = parse_version(version)
                target = self.services.core.target(name, number, facts.size)
                if target[0].input_kind() == PADDLE_REQUEST:  # a Paddle Serving script's pipeline
                    answer = answer_script(self.door, name, number, target, infer_request(message), facts)
                else:
                    held = [message]  # handed over once, so nothing here keeps it while the answer is awaited
                    del message
                    read: Callable[[RequestLimits], InferRequest] = lambda limits: infer_request(held.pop())
                    answer = prepare(self.services.core, self.views, name, number, target, read, facts).run()
            finally:
                claim.release()
            tensor = self.messages.ModelInferResponse.InferOutputTensor
            return self.messages.ModelInferResponse(
                model_name=answer.model_name,
                model_version=answer.model_version,
                id=answer.id,
                outputs=[tensor(name=o.name, datatype=o.datatype, shape=o.shape) for o in answer.outputs],
                raw_output_contents=[o.serialized() for o in answer.outputs],
            )

        return self._answer(context, run)


def handler(services: GrpcServices) -> grpc.GenericRpcHandler:
    service = InferenceService(services)
    m = service.messages
    methods = {
        "ServerLive": (service.server_live, m.ServerLiveResponse),
        "ServerReady": (service.server_ready, m.ServerReadyResponse),
        "ModelReady": (service.model_ready, m.ModelReadyResponse),
        "ServerMetadata": (service.server_metadata, m.ServerMetadataResponse),
        "ModelMetadata": (service.model_metadata, m.ModelMetadataResponse),
        "ModelInfer": (service.model_infer, m.ModelInferResponse),
    }
    return bytes_handler(SERVICE, methods)
