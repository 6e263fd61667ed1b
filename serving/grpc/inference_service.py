"""The Open Inference Protocol (KServe v2) over gRPC: ``inference.GRPCInferenceService``
as tritonclient.grpc and KServe's gRPC client call it, on ``rpc_port``. The same
models, checks and answers as the HTTP routes (:mod:`serving.http.inference_protocol`).

ServerLive and ServerReady need no token (they are probes, as ``/v2/health/*``);
every other call needs ``authorization: Bearer <token>`` when a token is set.
Inputs come from ``contents.bytes_contents`` or ``raw_input_contents`` (a BYTES
tensor's binary form), outputs go out as ``raw_output_contents``, what Triton
answers and tritonclient's ``InferResult.as_numpy`` reads. A failure ends the
call with the status :mod:`serving.grpc.status` maps from its HTTP status.
Methods of Triton's service that this one lacks are answered UNIMPLEMENTED by
grpc itself."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import grpc

from serving.errors import BadRequest, ServingError, as_serving_error
from serving.grpc.call import Call, checked, lenient
from serving.grpc.context import GrpcServices
from serving.http.inference_protocol.infer import CallFacts, infer, model
from serving.http.inference_protocol.model import PLATFORM, ModelViews
from serving.http.inference_protocol.request import InferRequest, InputTensor, RequestedOutput
from serving.http.inference_protocol.server import server_metadata
from serving.http.limits import HttpLimits
from serving.protos import INFERENCE_PACKAGE, inference_messages

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


def infer_request(message: Any) -> InferRequest:
    """A ``ModelInferRequest`` as the protocol-neutral request (nothing read of its elements yet)."""
    raw = message.raw_input_contents
    if raw and len(raw) != len(message.inputs):
        raise BadRequest(f"raw_input_contents has {len(raw)} entries for {len(message.inputs)} inputs")
    inputs = []
    for i, tensor in enumerate(message.inputs):
        elements = tensor.contents.bytes_contents if tensor.HasField("contents") else None
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
        id=message.id,
        parameters=parameters(message.parameters),
    )


class InferenceService:
    def __init__(self, services: GrpcServices):
        self.services = services
        self.messages = inference_messages()
        self.views = ModelViews()

    def _answer(
        self,
        context: grpc.ServicerContext,
        answer: Callable[[Call], Any],
        *,
        token: bool = True,
        request: Any = None,
    ) -> Any:
        call = Call.of(context)
        with self.services.handlers:
            try:
                if token:
                    call.check_token(self.services.auth_token)
                checked(request)  # a message that did not parse: 400, after the token
                return answer(call)
            except ServingError as err:
                failure = err
            except Exception as exc:  # a fault here must not become grpc's bare UNKNOWN
                log.exception("unhandled error in %s", SERVICE)
                failure = as_serving_error(exc)
        call.abort(failure)

    def server_live(self, request: Any, context: grpc.ServicerContext) -> Any:
        live = lambda call: self.messages.ServerLiveResponse(live=self.services.routes().repository.live)
        return self._answer(context, live, token=False, request=request)

    def server_ready(self, request: Any, context: grpc.ServicerContext) -> Any:
        ready = lambda call: self.messages.ServerReadyResponse(ready=self.services.routes().repository.ready)
        return self._answer(context, ready, token=False, request=request)

    def model_ready(self, request: Any, context: grpc.ServicerContext) -> Any:
        def ready(call: Call) -> Any:
            routes = self.services.routes()
            model(routes, self.views, request.name, request.version)  # NOT_FOUND for a model not served
            return self.messages.ModelReadyResponse(ready=routes.repository.ready)

        return self._answer(context, ready, request=request)

    def server_metadata(self, request: Any, context: grpc.ServicerContext) -> Any:
        metadata = lambda call: self.messages.ServerMetadataResponse(**server_metadata())
        return self._answer(context, metadata, request=request)

    def model_metadata(self, request: Any, context: grpc.ServicerContext) -> Any:
        def metadata(call: Call) -> Any:
            view = model(self.services.routes(), self.views, request.name, request.version)
            tensor = self.messages.ModelMetadataResponse.TensorMetadata
            specs = [tensor(name=t.name, datatype=t.datatype, shape=t.shape) for t in (view.input, *view.outputs)]
            return self.messages.ModelMetadataResponse(
                name=view.name,
                versions=[str(v) for v in view.versions],
                platform=PLATFORM,
                inputs=specs[:1],
                outputs=specs[1:],
            )

        return self._answer(context, metadata, request=request)

    def model_infer(self, messages: Iterator[Any], context: grpc.ServicerContext) -> Any:
        def run(call: Call) -> Any:
            # read under a slot, given back once the inputs are decoded (serving/grpc/message_slots.py)
            slot = self.services.slots.take(call)
            try:
                message = checked(self.services.slots.read_one(messages, call))
                name, version = message.model_name, message.model_version
                facts = CallFacts(
                    protocol=PROTOCOL,
                    size=message.ByteSize(),
                    header=call.headers.get,
                    gone=call.gone(),
                    cap_timeout_ms=call.timeout_ms,
                    submitted=slot.release,
                )
                held = [message]  # handed over once, so nothing here keeps it while the answer is awaited
                del message
                read: Callable[[HttpLimits], InferRequest] = lambda limits: infer_request(held.pop())
                answer = infer(self.services.routes(), self.views, name, version, read, facts)
            finally:
                slot.release()
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
        "ServerLive": (service.server_live, m.ServerLiveRequest, m.ServerLiveResponse),
        "ServerReady": (service.server_ready, m.ServerReadyRequest, m.ServerReadyResponse),
        "ModelReady": (service.model_ready, m.ModelReadyRequest, m.ModelReadyResponse),
        "ServerMetadata": (service.server_metadata, m.ServerMetadataRequest, m.ServerMetadataResponse),
        "ModelMetadata": (service.model_metadata, m.ModelMetadataRequest, m.ModelMetadataResponse),
    }
    return grpc.method_handlers_generic_handler(
        SERVICE,
        {
            name: grpc.unary_unary_rpc_method_handler(
                method, request_deserializer=lenient(req), response_serializer=resp.SerializeToString
            )
            for name, (method, req, resp) in methods.items()
        }
        | {
            # stream-unary on our side (the same wire as unary): its message is read under a slot
            "ModelInfer": grpc.stream_unary_rpc_method_handler(
                service.model_infer,
                request_deserializer=lenient(m.ModelInferRequest),
                response_serializer=m.ModelInferResponse.SerializeToString,
            )
        },
    )
