"""Paddle Serving's request and response ops as one more door on the request core. A request
(HTTP JSON or gRPC, both Paddle Serving's ``Request``) is admitted, unpacked by the
service's ``RequestOp``, submitted as one value, and its last op's :class:`ChannelData` is
packed by the ``ResponseOp``. Every limit of the other doors holds before the user's code
runs: the body size and JSON shape, admission (503), the token, the deadline; the images a
request names (keys ``image``/``img``) are checked against ``max_image_pixels`` from their
headers, as everywhere, before a user's ``preprocess`` decodes them."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from google.protobuf import json_format

from serving.errors import BadRequest
from serving.paddle_serving.channel import ChannelData, ChannelDataErrcode
from serving.paddle_serving.stage import PaddleServingFirstStage, Unpacked
from serving.protos import pipeline_messages
from serving.service.core import RequestCore, never_gone
from serving.service.decode import KEYS_BY_KIND, RequestImages, decode_base64
from serving.service.image_header import read_header
from serving.service.limits import RequestLimits
from serving.service.parse import ParsedRequest, json_body, read_options
from serving.service.served_pipelines import ServedPipeline

log = logging.getLogger(__name__)

#: the Request fields a JSON body may hold (proto3 JSON names), beside the request options
_FIELDS = ("key", "value", "tensors", "name", "method", "logid", "clientip")
_OPTIONS = ("priority", "timeout_ms", "timing")
_HEADER_BYTES = 1 << 16  # enough of an image to read its size


def http_status(channeldata: ChannelData, resp: Any) -> int:
    """The HTTP status of an answer, from what went wrong (the body stays Paddle Serving's):
    200 when all went well; 400 when the service refused the request (a product error code, a
    package its RequestOp could not unpack); 504 a timeout; else 500 (an op's or the packing's fault)."""
    code = channeldata.error_code
    if code in (None, ChannelDataErrcode.OK.value):
        return 200 if resp.err_no == 0 else 500
    if code in (
        ChannelDataErrcode.PRODUCT_ERROR.value,
        ChannelDataErrcode.RPC_PACKAGE_ERROR.value,
        ChannelDataErrcode.INPUT_PARAMS_ERROR.value,
    ):
        return 400
    if code == ChannelDataErrcode.TIMEOUT.value:
        return 504
    if code == ChannelDataErrcode.CLOSED_ERROR.value:
        return 503
    return 500


def response_document(resp: Any) -> dict[str, Any]:
    """A ``Response`` as Paddle Serving's HTTP gateway writes it (every field, proto names)."""
    return {
        "err_no": resp.err_no,
        "err_msg": resp.err_msg,
        "key": list(resp.key),
        "value": list(resp.value),
        "tensors": [json_format.MessageToDict(t, preserving_proto_field_name=True) for t in resp.tensors],
    }


def request_from_json(data: bytes, max_inputs: int, priority_levels: int) -> tuple[Any, ParsedRequest]:
    """A JSON body -> Paddle Serving's ``Request`` and the options batchline reads beside it
    (an empty body is an empty ``Request``, as Paddle Serving's gateway reads it)."""
    if not data:
        return pipeline_messages().Request(), ParsedRequest()
    body = json_body(data, max_inputs)
    if not isinstance(body, dict):
        raise BadRequest(f"request body must be a JSON object, got {type(body).__name__}")
    options = ParsedRequest()
    read_options(body, options, priority_levels)
    fields = {k: v for k, v in body.items() if k in _FIELDS}
    try:
        request = json_format.ParseDict(fields, pipeline_messages().Request())
    except json_format.ParseError as exc:
        raise BadRequest(f"request body is not a Paddle Serving Request: {str(exc)[:300]}") from None
    return request, options


def check_images(request: Any, limits: RequestLimits) -> None:
    """413 for an image value whose header names more pixels than ``max_image_pixels``, or for
    images over the request's totals (the user's code decodes them; the headers tell first).
    A value that is no image PIL knows is left to the user's code."""
    images = RequestImages(limits.inputs)
    keys = KEYS_BY_KIND["image"]
    for i, (key, value) in enumerate(zip(request.key, request.value)):
        if key not in keys:
            continue
        try:
            head = decode_base64(value[: _HEADER_BYTES * 4 // 3 // 4 * 4], f"value[{i}]")
            header = read_header(head, limits.inputs.max_image_pixels)  # 413 over the limit
        except BadRequest:
            continue  # not base64, or no image PIL knows: the user's code decides what it is
        images.add(header, f"value[{i}]")


def _first_stage(pipeline: ServedPipeline) -> PaddleServingFirstStage:
    stages = getattr(pipeline, "stages", {})
    for stage in stages.values():
        if isinstance(stage.op, PaddleServingFirstStage):
            return stage.op
    raise BadRequest(f"pipeline {pipeline.name!r} is not a Paddle Serving service served in this process")


class PaddleServingDoor:
    """Answers Paddle Serving ``Request`` messages on ``core``'s pipelines."""

    def __init__(self, core: RequestCore):
        self.core = core

    def answer(
        self,
        name: str,
        version: int | None,
        request: Any,
        options: ParsedRequest,
        target: tuple[ServedPipeline, RequestLimits],
        key: str | None,
        protocol: str,
        gone: Callable[[], bool] = never_gone,
    ) -> tuple[Any, int]:
        """The ``Response`` to ``request`` and its HTTP status; raises a ServingError for what
        every door refuses."""
        pipeline, limits = target
        repo = self.core.repository
        repo.precheck(name, 1, version=version, key=key, timeout_ms=options.timeout_ms, logid=request.logid)
        check_images(request, limits)
        stage = _first_stage(pipeline)
        assert stage.service is not None
        service = stage.service
        data_id = stage.next_data_id()
        unpacked = self._unpack(service.request_op, request, data_id)
        if isinstance(unpacked, ChannelData):
            return self._pack(service.response_op, unpacked)
        reservation = self.core.decode_budget.reserve(request.ByteSize(), pipeline.time_limit_s(options.timeout_ms))
        options.logid = request.logid
        started = self.core.submit(name, version, [unpacked], options, target, key, reservation, protocol)
        (handle,) = started.wait(gone)
        return self._pack(service.response_op, handle.result(timeout=0))

    @staticmethod
    def _unpack(request_op: Any, request: Any, data_id: int) -> Unpacked | ChannelData:
        try:
            data, log_id, prod_code, prod_info = request_op.unpack_request_package(request)
        except Exception as exc:  # noqa: BLE001 - the user's unpacking failed: Paddle Serving's answer
            log.error("(data_id=%s) Failed to parse RPC request package: %s", data_id, exc, exc_info=True)
            return ChannelData(
                error_code=ChannelDataErrcode.RPC_PACKAGE_ERROR.value,
                error_info=f"rpc package error: {exc}",
                data_id=data_id,
            )
        if prod_code is not None:
            return ChannelData(
                error_code=ChannelDataErrcode.PRODUCT_ERROR.value,
                error_info="",
                prod_error_code=prod_code,
                prod_error_info=prod_info,
                data_id=data_id,
                log_id=log_id,
            )
        return Unpacked(data, data_id, log_id)

    @staticmethod
    def _pack(response_op: Any, channeldata: ChannelData) -> tuple[Any, int]:
        try:
            resp = response_op.pack_response_package(channeldata)
            return resp, http_status(channeldata, resp)
        except Exception as exc:  # noqa: BLE001 - the user's packing failed: Paddle Serving's answer
            log.error("(logid=%s) Failed to pack RPC response package: %s", channeldata.id, exc, exc_info=True)
            resp = pipeline_messages().Response()
            resp.err_no = ChannelDataErrcode.RPC_PACKAGE_ERROR.value
            resp.err_msg = f"rpc package error: {exc}"
            return resp, 500
