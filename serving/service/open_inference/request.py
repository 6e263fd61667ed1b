"""An inference request, as either transport delivers it, -> a
:class:`~serving.service.parse.ParsedRequest`: one BYTES tensor named after the input kind,
shape ``[N]`` or ``[N, 1]``, N checked before any element is read. Triton's ``priority``
(0: our lowest level, 1 the highest) and ``timeout`` (microseconds) are read; other
parameters are ignored, as Triton ignores them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from serving.errors import BadRequest
from serving.service.decode import KEYS_BY_KIND, key_kind
from serving.service.open_inference.model import BYTES, TensorSpec
from serving.service.open_inference.tensors import deserialize_bytes, deserialize_numbers
from serving.service.parse import ParsedRequest, check_count

MAX_NAME_CHARS = 64  # of a name quoted back in an error
MAX_ID_CHARS = 256  # the request id is echoed and logged: a short string


@dataclass(frozen=True)
class InputTensor:
    name: str
    datatype: str
    shape: Sequence[int]
    elements: Sequence[Any] | None = None  # JSON's data (maybe nested by the shape), gRPC's bytes_contents
    serialized: bytes | memoryview | None = None  # the binary form (serving.service.open_inference.tensors)


@dataclass(frozen=True)
class RequestedOutput:
    name: str
    parameters: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class InferRequest:
    inputs: Sequence[InputTensor]
    outputs: Sequence[RequestedOutput] = ()
    id: str = ""
    parameters: Mapping[str, Any] = field(default_factory=dict)


def checked_id(request_id: str) -> str:
    """The request's id; 400 when longer than :data:`MAX_ID_CHARS`."""
    if len(request_id) > MAX_ID_CHARS:
        raise BadRequest(f"'id' has {len(request_id)} characters (at most {MAX_ID_CHARS})")
    return request_id


def _shown(name: str) -> str:
    return repr(name[:MAX_NAME_CHARS])


def rows(shape: Sequence[int], where: str) -> int:
    """N of a shape ``[N]`` or ``[N, 1]``."""
    if len(shape) in (1, 2) and shape[0] >= 0 and list(shape[1:]) in ([], [1]):
        return int(shape[0])
    raise BadRequest(f"{where}: shape {list(shape)[:4]} is not [N] or [N, 1] (N rows, one input each)")


def _flat(elements: Sequence[Any], shape: Sequence[int]) -> Sequence[Any]:
    """JSON data as the shape nests it ([[a], [b]] for [2, 1]) or flat, as Triton takes both."""
    if len(shape) == 2 and elements and all(isinstance(e, list) and len(e) == 1 for e in elements):
        return [e[0] for e in elements]
    return elements


def _flat_all(elements: Sequence[Any]) -> list[Any]:
    """JSON data of any nesting (a numeric tensor's, nested by its shape), flat."""
    out: list[Any] = []
    stack = [iter(elements)]
    while stack:
        for item in stack[-1]:
            if isinstance(item, list):
                stack.append(iter(item))
                break
            out.append(item)
        else:
            stack.pop()
    return out


def tensor_elements(tensor: InputTensor, n: int, where: str, numbers: str | None = None) -> Sequence[Any]:
    """The ``n`` elements of ``tensor``, from its JSON data or its binary form (never both); 400 otherwise.
    ``numbers``: the numpy dtype of a numeric tensor's binary form (its JSON data may nest any deep);
    None: BYTES, ``n`` rows of ``[N]`` or ``[N, 1]``."""
    if tensor.serialized is not None and tensor.elements is not None:
        raise BadRequest(f"{where}: data given twice (as elements and in binary form)")
    if tensor.serialized is not None:
        if numbers is None:
            return deserialize_bytes(tensor.serialized, n, where)
        return deserialize_numbers(tensor.serialized, n, numbers, where)
    if tensor.elements is None:
        raise BadRequest(f"{where}: no data")
    elements = _flat(tensor.elements, tensor.shape) if numbers is None else _flat_all(tensor.elements)
    if len(elements) != n:
        rows = f" ({n} rows)" if numbers is None else ""
        raise BadRequest(f"{where}: {len(elements)} elements for shape {list(tensor.shape)[:8]}{rows}")
    return elements


def _input(kind: str, value: Any, where: str) -> tuple[str, Any, bool]:
    if isinstance(value, bytes):
        return kind, value, True
    if isinstance(value, str):  # a text, or an image's base64
        return kind, value, False
    raise BadRequest(f"{where}: a BYTES element must be a string, got {type(value).__name__}")


def _int_parameter(parameters: Mapping[str, Any], name: str) -> int | None:
    value = parameters.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BadRequest(f"parameter {name!r} must be an integer >= 0, got {str(value)[:20]!r}")
    return value


def priority_level(parameters: Mapping[str, Any], levels: int) -> int:
    """Triton's ``priority`` as one of our ``levels`` (higher runs first): 0 -> 0, p -> max(levels - p, 0)."""
    p = _int_parameter(parameters, "priority")
    return 0 if not p else max(levels - p, 0)


def timeout_ms(parameters: Mapping[str, Any]) -> int | None:
    """Triton's ``timeout`` (microseconds; 0: none) in whole milliseconds, rounded up."""
    us = _int_parameter(parameters, "timeout")
    return -(-us // 1000) if us else None


def parse_request(request: InferRequest, *, kind: str, max_inputs: int, priority_levels: int) -> ParsedRequest:
    """``request``'s one tensor as ``parsed.inputs`` (kind, value, value_is_raw_bytes); 400/413 as the HTTP API."""
    if len(request.inputs) != 1:
        raise BadRequest(f"the model takes one input tensor, {kind!r}; got {len(request.inputs)}")
    tensor = request.inputs[0]
    where = f"input {_shown(tensor.name)}"
    if key_kind(tensor.name) != kind:
        raise BadRequest(f"{where}: this model's input is {KEYS_BY_KIND[kind][0]!r}")
    if tensor.datatype != BYTES:
        raise BadRequest(f"{where}: datatype {tensor.datatype[:16]!r}; this model takes {BYTES}")
    n = rows(tensor.shape, where)
    check_count(n, max_inputs)  # before any element is read
    parsed = ParsedRequest(
        inputs=[_input(kind, v, f"{where} element {i}") for i, v in enumerate(tensor_elements(tensor, n, where))],
        priority=priority_level(request.parameters, priority_levels),
        timeout_ms=timeout_ms(request.parameters),
    )
    return parsed


def chosen_outputs(requested: Sequence[RequestedOutput], offered: Sequence[TensorSpec]) -> list[TensorSpec]:
    """The outputs to answer: those requested, in their order (none: every one offered); 400 for one not offered."""
    if not requested:
        return list(offered)
    by_name = {spec.name: spec for spec in offered}
    chosen: list[TensorSpec] = []
    for out in requested:
        if "classification" in out.parameters:
            raise BadRequest(f"output {_shown(out.name)}: the classification extension is not supported")
        spec = by_name.get(out.name)
        if spec is None:
            raise BadRequest(f"no output {_shown(out.name)}; this model offers {', '.join(by_name)}")
        if spec in chosen:
            raise BadRequest(f"output {_shown(out.name)} requested twice")
        chosen.append(spec)
    return chosen
