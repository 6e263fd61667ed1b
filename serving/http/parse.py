"""Parse the two request formats into one shape: a list of (kind, value, raw)
inputs plus per-request options. Every malformed request becomes a 4xx."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from werkzeug.exceptions import RequestEntityTooLarge

from serving.errors import BadRequest, PayloadTooLarge
from serving.http import jsonio
from serving.http.decode import KEYS_BY_KIND, key_kind
from serving.http.json_budget import check_json_shape, value_budget

# ASCII digits only, as many as a JSON body may carry (Python's int parsing limit):
# a query string and a JSON body accept the same integers
_INTEGER = re.compile(r"-?[0-9]{1,4300}")
# a Paddle Serving logid is a uint64 (proto3 JSON may send it as a string); signed too, as some clients do
LOGID_RANGE = (-(2**63), 2**64 - 1)
MAX_LOGID_CHARS = 64
# multipart parts beyond the inputs (fields a client adds and the server ignores)
FORM_PARTS_SLACK = 16


@dataclass
class ParsedRequest:
    inputs: list[tuple[str, Any, bool]] = field(default_factory=list)  # (kind, value, value_is_raw_bytes)
    logid: Any = None
    priority: int = 0
    timeout_ms: int | None = None
    timing: bool = False


def json_body(data: bytes, max_inputs: int) -> Any:
    """A JSON request body, its shape checked before it is parsed (400 naming what is wrong)."""
    if not data:
        raise BadRequest("empty request body; expected JSON")
    check_json_shape(data, max_values=value_budget(max_inputs))
    try:
        return jsonio.loads(data)
    except UnicodeDecodeError:
        raise BadRequest("request body is not valid UTF-8") from None
    except json.JSONDecodeError as exc:
        raise BadRequest(f"request body is not valid JSON: {exc.msg} at position {exc.pos}") from None
    except RecursionError:
        raise BadRequest("request body is not valid JSON: nested too deeply") from None
    except ValueError as exc:  # e.g. an integer literal over Python's 4300-digit limit
        raise BadRequest(f"request body is not valid JSON: {exc}") from None


def _int_option(obj: dict, name: str, low: int, high: int | None) -> int | None:
    value = obj.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        text = value.strip() if isinstance(value, str) else ""
        if not _INTEGER.fullmatch(text):
            shown = f"{text[:20]!r}" if isinstance(value, str) else type(value).__name__
            raise BadRequest(f"'{name}' must be an integer, got {shown}")
        value = int(text)
    if value < low or (high is not None and value > high):
        bound = f">= {low}" if high is None else f"between {low} and {high}"
        raise BadRequest(f"'{name}' must be {bound}, got {value}")
    return value


def _logid(body: dict) -> int | str | None:
    """The request's logid: an integer in a 64-bit range or a short string
    (it is echoed back, logged and hashed for routing, so it stays small)."""
    logid = body.get("logid")
    if logid is None or (isinstance(logid, str) and len(logid) <= MAX_LOGID_CHARS):
        return logid
    if isinstance(logid, int) and not isinstance(logid, bool) and LOGID_RANGE[0] <= logid <= LOGID_RANGE[1]:
        return logid
    got = f"{len(logid)} characters" if isinstance(logid, str) else type(logid).__name__
    if isinstance(logid, int) and not isinstance(logid, bool):
        got = "an integer out of range"
    raise BadRequest(
        f"'logid' must be an integer from {LOGID_RANGE[0]} to {LOGID_RANGE[1]} or a string of at most "
        f"{MAX_LOGID_CHARS} characters, got {got}"
    )


def read_options(obj: dict, parsed: ParsedRequest, priority_levels: int) -> None:
    """``priority``, ``timeout_ms`` and ``timing`` from a JSON body, a query string or gRPC metadata."""
    parsed.priority = _int_option(obj, "priority", 0, priority_levels - 1) or 0
    parsed.timeout_ms = _int_option(obj, "timeout_ms", 1, None)
    timing = obj.get("timing", False)
    parsed.timing = timing in (True, 1, "1", "true", "yes")


def check_count(n: int, max_inputs: int) -> None:
    """400 for no inputs, 413 for more than ``max_inputs``."""
    if n == 0:
        raise BadRequest("request has no inputs")
    if n > max_inputs:
        raise PayloadTooLarge(f"request has {n} inputs (limit {max_inputs} per request)")


def parse_paddle(data: bytes, *, kind: str, max_inputs: int, priority_levels: int) -> ParsedRequest:
    """Paddle Serving's ``{"key": [...], "value": [...], "logid": 0}``."""
    body = json_body(data, max_inputs)
    if not isinstance(body, dict):
        raise BadRequest(f"request body must be a JSON object, got {type(body).__name__}")
    keys, values = body.get("key"), body.get("value")
    if not isinstance(keys, list) or not isinstance(values, list):
        raise BadRequest("request needs 'key' and 'value' lists")
    if len(keys) != len(values):
        raise BadRequest(f"'key' has {len(keys)} entries but 'value' has {len(values)}")
    check_count(len(keys), max_inputs)
    parsed = ParsedRequest(logid=_logid(body))
    read_options(body, parsed, priority_levels)
    for i, (key, value) in enumerate(zip(keys, values)):
        if not isinstance(key, str):
            raise BadRequest(f"key[{i}] must be a string, got {type(key).__name__}")
        if key_kind(key) != kind:
            raise BadRequest(f"key[{i}] is {key[:64]!r}; this pipeline takes {KEYS_BY_KIND[kind][0]!r}")
        parsed.inputs.append((kind, value, False))
    return parsed


def parse_native(request: Any, *, kind: str, max_inputs: int, priority_levels: int) -> ParsedRequest:
    """JSON ``{"inputs": [{"image": b64} | {"text": s}]}``, multipart uploads
    (fields ``image`` / ``text``), or a raw ``image/*`` / ``text/plain`` body.
    Options come from the JSON body or the query string."""
    mimetype = request.mimetype or ""
    parsed = ParsedRequest()
    if mimetype == "application/json":
        body = json_body(request.get_data(), max_inputs)
        if not isinstance(body, dict) or not isinstance(body.get("inputs"), list):
            raise BadRequest("JSON body must be an object with an 'inputs' list")
        read_options(body, parsed, priority_levels)
        check_count(len(body["inputs"]), max_inputs)
        for i, entry in enumerate(body["inputs"]):
            if not isinstance(entry, dict) or len(entry) != 1:
                raise BadRequest(f'inputs[{i}] must be an object with one key, e.g. {{"{kind}": ...}}')
            ((key, value),) = entry.items()
            if key_kind(key) != kind:
                raise BadRequest(f"inputs[{i}] has key {str(key)[:64]!r}; this pipeline takes {kind!r}")
            parsed.inputs.append((kind, value, False))
        return parsed
    read_options(request.args.to_dict(), parsed, priority_levels)
    if mimetype == "multipart/form-data":
        parsed.inputs = _form_inputs(request, kind, max_inputs)
        check_count(len(parsed.inputs), max_inputs)
        return parsed
    if (kind == "image" and mimetype.startswith("image/")) or (kind == "text" and mimetype == "text/plain"):
        parsed.inputs = [(kind, request.get_data(), True)]
        check_count(1 if parsed.inputs[0][1] else 0, max_inputs)
        return parsed
    raise BadRequest(
        f"unsupported Content-Type {mimetype or '(none)'!r}; send application/json, "
        f"multipart/form-data or {'image/*' if kind == 'image' else 'text/plain'}"
    )


def _form_inputs(request: Any, kind: str, max_inputs: int) -> list[tuple[str, Any, bool]]:
    """The inputs of a multipart body, parsed under werkzeug's limits: a part
    costs a few KB of objects, so their number follows the inputs allowed;
    a text field may be as large as the body (``max_content_length``, set
    from ``max_body_size``) instead of werkzeug's 500 KB."""
    max_parts = max_inputs + FORM_PARTS_SLACK
    request.max_form_parts = max_parts
    request.max_form_memory_size = request.max_content_length
    try:
        if kind == "image":
            return [(kind, f.read(), True) for f in request.files.getlist("image")]
        inputs: list[tuple[str, Any, bool]] = [(kind, t, False) for t in request.form.getlist("text")]
        return inputs + [(kind, f.read(), True) for f in request.files.getlist("text")]
    except RequestEntityTooLarge:
        raise PayloadTooLarge(
            f"multipart body over a limit: at most {max_parts} parts (max_inputs_per_request + "
            f"{FORM_PARTS_SLACK}) and max_body_size in all"
        ) from None
