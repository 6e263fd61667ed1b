"""Paddle Serving's request format, and the options every format shares, parsed into one
shape: (kind, value, raw) inputs plus options. Every malformed request is a 4xx."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from serving.errors import BadRequest, PayloadTooLarge
from serving.service import jsonio
from serving.service.decode import KEYS_BY_KIND, key_kind
from serving.service.json_budget import check_json_shape, value_budget

# ASCII digits only, as many as a JSON body may carry (Python's int parsing limit):
# a query string and a JSON body accept the same integers
_INTEGER = re.compile(r"-?[0-9]{1,4300}")
# a Paddle Serving logid is a uint64 (proto3 JSON may send it as a string); signed too, as some clients do
LOGID_RANGE = (-(2**63), 2**64 - 1)
MAX_LOGID_CHARS = 64


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
