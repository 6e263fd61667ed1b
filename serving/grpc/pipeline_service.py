"""Paddle Serving's ``PipelineService.inference``: what ``/{name}/prediction`` answers over
HTTP, as a ``Response``. A failure is answered in the message (``err_no``, the HTTP status,
and ``err_msg``), as Paddle Serving's clients read it, with the status and Retry-After in
the trailers; only a missing or wrong token ends the call with a status."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import grpc

from serving.errors import ServingError, Unauthorized, as_serving_error
from serving.grpc.call import Call, bytes_handler, trailers
from serving.grpc.pipeline_request import OPTION_KEYS, parse_pipeline_request, route_of
from serving.grpc.wire_count import RequestMessage
from serving.paddle_serving.door import PaddleServingDoor
from serving.paddle_serving.stage import PADDLE_REQUEST
from serving.protos import PIPELINE_PACKAGE, pipeline_messages
from serving.service.core import paddle_document
from serving.service.decode import plain_kind
from serving.service.parse import ParsedRequest, read_options

if TYPE_CHECKING:
    from serving.grpc.grpc_server import GrpcServices

log = logging.getLogger(__name__)

SERVICE = f"{PIPELINE_PACKAGE}.PipelineService"
PROTOCOL = "grpc"  # its name in metrics and in the client's --protocol


class PipelineService:
    def __init__(self, services: GrpcServices):
        self.services = services
        self.messages = pipeline_messages()
        self.door = PaddleServingDoor(services.core)
        # numeric tensors are counted as any repeated element: a user's web_service.py reads them (as over
        # HTTP); batchline's own pipelines refuse them once the message names its pipeline (pipeline_request)
        self.request = RequestMessage(self.messages.Request)

    def inference(self, messages: Iterator[bytes], context: grpc.ServicerContext) -> Any:
        call = Call.of(context)
        with self.services.core.handlers:
            try:
                call.check_token(self.services.auth_token)  # before a byte of the message is read
                return self._answer(messages, call)
            except Unauthorized as err:
                call.abort(err)
            except ServingError as err:
                # the message has no field for Retry-After: the trailers carry it (and the status)
                context.set_trailing_metadata(trailers(err))
                return self.messages.Response(err_no=err.err_no, err_msg=err.message)
            except Exception as exc:  # a fault here must not become grpc's bare UNKNOWN
                log.exception("unhandled error in PipelineService.inference")
                fault = as_serving_error(exc)
                return self.messages.Response(err_no=fault.err_no, err_msg=fault.message)

    def _answer(self, messages: Iterator[bytes], call: Call) -> Any:
        core = self.services.core
        with self.services.room.holding(call) as claim:  # given back once the inputs are decoded
            request = self.services.read(messages, call, self.request, claim)
            name, version = route_of(request, next(iter(core.repository.config.routes)))
            target = core.target(name, version, request.ByteSize())
            pipeline, limits = target
            if pipeline.input_kind() == PADDLE_REQUEST:
                return self._answer_service(name, version, request, target, call)
            parsed = parse_pipeline_request(
                request,
                {key: call.headers.get(key) for key in OPTION_KEYS},
                kind=plain_kind(pipeline.input_kind(), name),
                max_inputs=limits.max_inputs,
                priority_levels=pipeline.config.dag.priority_levels,
            )
            del request  # the message's bytes: the parsed inputs hold what is still needed
            parsed.timeout_ms = call.timeout_ms(parsed.timeout_ms)
            key = core.route_key(name, version, call.headers.get)
            started = core.start(name, version, parsed, target, key, protocol=PROTOCOL)
            parsed.inputs.clear()  # decoded into the handles: the encoded values go with the room
        document = paddle_document(started.wait(call.gone()), parsed.logid)
        return self.messages.Response(err_no=0, key=document["key"], value=document["value"])

    def _answer_service(self, name: str, version: int | None, request: Any, target: Any, call: Call) -> Any:
        """A user's ``web_service.py``: its RequestOp and ResponseOp answer (serving.paddle_serving.door)."""
        pipeline, _ = target
        options = ParsedRequest()
        read_options(
            {key: v for key in OPTION_KEYS if (v := call.headers.get(key)) is not None},
            options,
            pipeline.config.dag.priority_levels,
        )
        options.timeout_ms = call.timeout_ms(options.timeout_ms)
        key = self.services.core.route_key(name, version, call.headers.get)
        resp, _ = self.door.answer(name, version, request, options, target, key, PROTOCOL, call.gone())
        return resp


def handler(services: GrpcServices) -> grpc.GenericRpcHandler:
    service = PipelineService(services)
    return bytes_handler(SERVICE, {"inference": (service.inference, service.messages.Response)})
