"""A Paddle Serving pipeline ``Request`` -> the parsed request the HTTP endpoint makes of
its JSON: inputs from ``key``/``value`` or ``tensors`` (``str_data``, or ``byte_data``: one
input's raw bytes), the options from the call's metadata."""

from __future__ import annotations

from typing import Any

from serving.errors import BadRequest, NotFound
from serving.protos import pipeline_messages
from serving.service.decode import KEYS_BY_KIND, key_kind
from serving.service.parse import ParsedRequest, check_count, read_options

#: what Paddle Serving's PipelineClient adds with ``profile=True``; it asks for a timeline, not an input
PROFILE_KEY = "pipeline.profile"
#: the call metadata read as request options (as the HTTP API reads them from the body)
OPTION_KEYS = ("priority", "timeout_ms")
#: what np.save writes first (PipelineClient's use_tensor_bytes)
NPY_MAGIC = b"\x93NUMPY"
#: the Tensor fields that carry numbers: a user's script reads them, batchline's own pipelines refuse them
#: (counted on the wire first, as every repeated element: serving/grpc/wire_count.py)
NUMERIC_FIELDS = tuple(
    f
    for f in pipeline_messages().Tensor.DESCRIPTOR.fields
    if f.name.endswith("_data") and f.name not in ("str_data", "byte_data")
)


def route_of(request: Any, first_route: str) -> tuple[str, int | None]:
    """The pipeline name and version a request asks for: ``name`` (empty: ``first_route``) and
    ``method`` as the HTTP path's rest (``""``/``"prediction"``, or ``"v<N>/prediction"``)."""
    name = request.name or first_route
    method = request.method.strip("/")
    if method in ("", "prediction"):
        return name, None
    version, _, rest = method.partition("/")
    if rest == "prediction" and version[:1] == "v" and version[1:].isdigit() and len(version) <= 10:
        return name, int(version[1:])
    raise NotFound(f"no method {method[:64]!r}: use 'prediction' or 'v<N>/prediction'")


def _check_key(key: str, kind: str, where: str) -> None:
    if key_kind(key) != kind:
        raise BadRequest(f"{where} is {key[:64]!r}; this pipeline takes {KEYS_BY_KIND[kind][0]!r}")


def numpy_refusal(where: str, what: str) -> BadRequest:
    """Only what a request file or string can be: PipelineClient's numpy tensors hold pixels
    or tokens already decoded, which would bypass every decoding limit."""
    return BadRequest(
        f"{where} holds a numpy array ({what}); send the image file (byte_data) or base64 / text "
        "(str_data): inputs are decoded and checked by the server"
    )


def _check_tensor(tensor: Any, where: str) -> None:
    numeric = [f.name for f in NUMERIC_FIELDS if len(getattr(tensor, f.name))]
    if numeric or tensor.byte_data.startswith(NPY_MAGIC):
        raise numpy_refusal(where, ", ".join(numeric) or "np.save bytes")


def parse_pipeline_request(
    request: Any, options: dict[str, str | None], *, kind: str, max_inputs: int, priority_levels: int
) -> ParsedRequest:
    if len(request.key) != len(request.value):
        raise BadRequest(f"'key' has {len(request.key)} entries but 'value' has {len(request.value)}")
    parsed = ParsedRequest(logid=request.logid or None)
    read_options({k: v for k, v in options.items() if v is not None}, parsed, priority_levels)
    for i, (key, value) in enumerate(zip(request.key, request.value)):
        if key == PROFILE_KEY:
            continue
        _check_key(key, kind, f"key[{i}]")
        parsed.inputs.append((kind, value, False))
    # (the entries were counted on the wire before the message was parsed: serving/grpc/wire_count.py)
    for i, tensor in enumerate(request.tensors):
        _check_key(tensor.name, kind, f"tensors[{i}].name")
        _check_tensor(tensor, f"tensors[{i}]")
        if tensor.byte_data:
            parsed.inputs.append((kind, tensor.byte_data, True))
        parsed.inputs.extend((kind, value, False) for value in tensor.str_data)
    check_count(len(parsed.inputs), max_inputs)
    return parsed
