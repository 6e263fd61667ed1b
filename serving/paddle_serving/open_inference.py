"""A Paddle Serving script's pipeline on the Open Inference Protocol (KServe v2), over HTTP and gRPC.

Each input tensor is one entry of the script's request, as Paddle Serving's clients send them: a BYTES
tensor of one element is a key/value string (``input_dict[name]`` is that text); a numeric tensor is
one of the ``Request``'s ``tensors`` (``preprocess`` gets a numpy array of its datatype and shape, as
from ``PipelineClient.predict(..., pack_tensor_format=True)``). Each key of the answer is one BYTES
output of one element, its value. A failed answer (``err_no`` != 0) is the protocol's error, with the
status the Paddle Serving door gives it and Paddle Serving's ``err_no`` and ``err_msg`` in the message.

The request's elements are counted against the pipeline's values (``max_inputs_per_request``, as a
JSON body's) before any is read, so a large tensor is refused (413) before it is made into numbers."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from serving.errors import BadRequest, PayloadTooLarge, error_for_status
from serving.paddle_serving.door import PaddleServingDoor
from serving.protos import pipeline_messages
from serving.service.json_budget import value_budget
from serving.service.limits import RequestLimits
from serving.service.open_inference.infer import CallFacts, InferAnswer, OutputTensor
from serving.service.open_inference.model import BYTES
from serving.service.open_inference.request import (
    MAX_NAME_CHARS,
    InferRequest,
    RequestedOutput,
    priority_level,
    tensor_elements,
    timeout_ms,
)
from serving.service.parse import ParsedRequest
from serving.service.served_pipelines import ServedPipeline

#: datatype -> (Paddle Serving's Tensor.elem_type, the field that carries it, the binary form's dtype)
NUMERIC = {
    "INT64": (0, "int64_data", "<i8"),
    "FP32": (1, "float_data", "<f4"),
    "INT32": (2, "int_data", "<i4"),
    "FP64": (3, "float64_data", "<f8"),
    "INT16": (4, "int_data", "<i2"),
    "FP16": (5, "float_data", "<f2"),
    "UINT8": (7, "uint32_data", "u1"),
    "INT8": (8, "int_data", "i1"),
    "BOOL": (9, "bool_data", "?"),
}


def script_request(request: InferRequest, max_values: int) -> Any:
    """Paddle Serving's ``Request`` for ``request``'s inputs; 400 for what no script could be sent,
    413 past ``max_values`` elements in all."""
    message = pipeline_messages().Request()
    seen: set[str] = set()
    left = max_values
    for tensor in request.inputs:
        where = f"input {tensor.name[:MAX_NAME_CHARS]!r}"
        if tensor.name in seen:
            raise BadRequest(f"{where} given twice")
        seen.add(tensor.name)
        if len(tensor.shape) > 8 or any(d < 0 for d in tensor.shape):
            raise BadRequest(f"{where}: shape {list(tensor.shape)[:9]} (at most 8 dimensions, none negative)")
        n = math.prod(tensor.shape)
        if n > left:
            raise PayloadTooLarge(
                f"the request holds over {max_values} values; the limit follows max_inputs_per_request, "
                "as a JSON body's does"
            )
        left -= n
        if tensor.datatype == BYTES:
            if n != 1:
                raise BadRequest(f"{where}: a script's input is one value (shape [1]), this one holds {n}")
            (value,) = tensor_elements(tensor, 1, where)
            if isinstance(value, bytes):
                try:
                    value = value.decode("utf-8")
                except UnicodeDecodeError:
                    raise BadRequest(f"{where}: not UTF-8 text (send a file as base64)") from None
            if not isinstance(value, str):
                raise BadRequest(f"{where}: a BYTES element must be a string, got {type(value).__name__}")
            message.key.append(tensor.name)
            message.value.append(value)
            continue
        if tensor.datatype not in NUMERIC:
            known = ", ".join([BYTES, *NUMERIC])
            raise BadRequest(f"{where}: datatype {tensor.datatype[:16]!r} (a script takes {known})")
        elem_type, field, dtype = NUMERIC[tensor.datatype]
        values = tensor_elements(tensor, n, where, numbers=dtype)
        added = message.tensors.add(name=tensor.name, elem_type=elem_type, shape=list(tensor.shape))
        try:
            getattr(added, field).extend(values)
        except (TypeError, ValueError) as exc:
            raise BadRequest(f"{where}: its elements are not {tensor.datatype} ({exc})") from None
    return message


def script_answer(
    resp: Any, status: int, answer: tuple[str, str, str], wanted: Sequence[RequestedOutput]
) -> InferAnswer:
    """The protocol's answer to the script's ``Response`` (``answer``: model name, version, request id)."""
    if resp.err_no != 0:
        raise error_for_status(status if status >= 400 else 500, f"err_no {resp.err_no}: {resp.err_msg}")
    outputs = {key: OutputTensor(key, BYTES, [value]) for key, value in zip(resp.key, resp.value)}
    chosen = list(outputs.values())
    if wanted:
        missing = [out.name[:MAX_NAME_CHARS] for out in wanted if out.name not in outputs]
        if missing:
            raise BadRequest(f"no output {missing[0]!r}; this answer holds {', '.join(outputs) or 'none'}")
        chosen = [outputs[out.name] for out in wanted]
    name, version, request_id = answer
    return InferAnswer(name, version, request_id, chosen)


def answer_script(
    door: PaddleServingDoor,
    name: str,
    version: int | None,
    target: tuple[ServedPipeline, RequestLimits],
    request: InferRequest,
    call: CallFacts,
) -> InferAnswer:
    """``request`` answered by the script's pipeline ``target``, through its RequestOp and ResponseOp."""
    pipeline, limits = target
    options = ParsedRequest(
        priority=priority_level(request.parameters, pipeline.config.dag.priority_levels),
        timeout_ms=call.cap_timeout_ms(timeout_ms(request.parameters)),
    )
    message = script_request(request, value_budget(limits.max_inputs))
    key = door.core.route_key(name, version, call.header)
    resp, status = door.answer(name, version, message, options, target, key, call.protocol, call.gone)
    return script_answer(resp, status, (name, str(pipeline.version), request.id), request.outputs)
