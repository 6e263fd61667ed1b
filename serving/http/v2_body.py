"""The HTTP form of an inference request and its answer: JSON, optionally followed by
binary tensor data. ``Inference-Header-Content-Length`` says where the JSON ends; an input
with ``parameters.binary_data_size`` takes that many bytes of the rest, in order. An output
is binary when its requested output says ``binary_data: true``, else when the request's
``binary_data_output`` is true (tritonclient.http's way when it names no outputs)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from serving.errors import BadRequest
from serving.service import jsonio
from serving.service.open_inference.infer import InferAnswer
from serving.service.open_inference.request import InferRequest, InputTensor, RequestedOutput, checked_id
from serving.service.parse import json_body

HEADER_LENGTH = "Inference-Header-Content-Length"


@dataclass(frozen=True)
class BinaryChoice:
    """Which outputs the answer carries in binary form."""

    default: bool = False
    by_name: Mapping[str, bool] = field(default_factory=dict)

    def binary(self, name: str) -> bool:
        return self.by_name.get(name, self.default)


def _header_length(value: str | None, body_size: int) -> int:
    if value is None:
        return body_size
    text = value.strip()
    if not text.isdigit() or not text.isascii() or int(text) > body_size:
        raise BadRequest(f"{HEADER_LENGTH} must be an integer from 0 to the body's {body_size} bytes")
    return int(text)


def _object(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BadRequest(f"{where} must be a JSON object")
    return value


def _string(doc: dict[str, Any], key: str, where: str, *, required: bool = True) -> str:
    value = doc.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise BadRequest(f"{where} needs a string {key!r}")
    return value


def _flag(parameters: Mapping[str, Any], key: str, where: str) -> bool | None:
    value = parameters.get(key)
    if value is not None and not isinstance(value, bool):
        raise BadRequest(f"{where}: parameter {key!r} must be true or false")
    return value


def _inputs(doc: dict[str, Any], binary: memoryview) -> list[InputTensor]:
    entries = doc.get("inputs")
    if not isinstance(entries, list):
        raise BadRequest("the request needs an 'inputs' list")
    tensors, pos = [], 0
    for i, entry in enumerate(entries):
        where = f"inputs[{i}]"
        entry = _object(entry, where)
        name, datatype = _string(entry, "name", where), _string(entry, "datatype", where)
        shape = entry.get("shape")
        if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) for d in shape):
            raise BadRequest(f"{where} needs a 'shape' list of integers")
        parameters = _object(entry.get("parameters"), f"{where}.parameters")
        if "shared_memory_region" in parameters:
            raise BadRequest(f"{where}: the shared memory extensions are not supported")
        size = parameters.get("binary_data_size")
        data = entry.get("data")
        if size is None:
            if data is not None and not isinstance(data, list):
                raise BadRequest(f"{where}: 'data' must be a list")
            tensors.append(InputTensor(name, datatype, shape, elements=data))
            continue
        if isinstance(size, bool) or not isinstance(size, int) or not 0 <= size <= len(binary) - pos:
            raise BadRequest(f"{where}: binary_data_size must be an integer within the {len(binary) - pos} bytes left")
        if data is not None:
            raise BadRequest(f"{where}: data given twice ('data' and binary_data_size)")
        tensors.append(InputTensor(name, datatype, shape, serialized=binary[pos : pos + size]))
        pos += size
    if pos != len(binary):
        raise BadRequest(f"{len(binary) - pos} bytes after the inputs' binary data (binary_data_size)")
    return tensors


def _outputs(doc: dict[str, Any]) -> list[RequestedOutput]:
    entries = doc.get("outputs") or []
    if not isinstance(entries, list):
        raise BadRequest("'outputs' must be a list")
    outputs = []
    for i, entry in enumerate(entries):
        entry = _object(entry, f"outputs[{i}]")
        parameters = _object(entry.get("parameters"), f"outputs[{i}].parameters")
        _flag(parameters, "binary_data", f"outputs[{i}]")
        outputs.append(RequestedOutput(_string(entry, "name", f"outputs[{i}]"), parameters))
    return outputs


def read_request(body: bytes, header_length: str | None, max_inputs: int) -> tuple[InferRequest, BinaryChoice]:
    """The request in ``body``, and how its answer is to be written; 400 for anything malformed.
    The JSON is bounded by ``max_inputs`` before it is parsed (as every JSON body of the HTTP API)."""
    split = _header_length(header_length, len(body))
    doc = _object(json_body(body[:split], max_inputs), "the request")
    parameters = _object(doc.get("parameters"), "parameters")
    request_id = checked_id(_string(doc, "id", "the request", required=False))
    request = InferRequest(
        inputs=_inputs(doc, memoryview(body)[split:]),
        outputs=_outputs(doc),
        id=request_id,
        parameters=parameters,
    )
    choice = BinaryChoice(
        default=bool(_flag(parameters, "binary_data_output", "the request")),
        by_name={out.name: flag for out in request.outputs if (flag := out.parameters.get("binary_data")) is not None},
    )
    return request, choice


def write_answer(answer: InferAnswer, choice: BinaryChoice) -> tuple[bytes, int | None]:
    """The answer's body, and the length of its JSON when binary data follows it (else None)."""
    outputs, chunks = [], []
    for out in answer.outputs:
        doc: dict[str, Any] = {"name": out.name, "datatype": out.datatype, "shape": out.shape}
        if choice.binary(out.name):
            chunks.append(out.serialized())
            doc["parameters"] = {"binary_data_size": len(chunks[-1])}
        else:
            doc["data"] = out.values
        outputs.append(doc)
    head: dict[str, Any] = {"model_name": answer.model_name, "model_version": answer.model_version}
    if answer.id:
        head["id"] = answer.id
    head["outputs"] = outputs
    header = jsonio.dumps(head)
    if not chunks:
        return header, None
    return b"".join([header, *chunks]), len(header)
