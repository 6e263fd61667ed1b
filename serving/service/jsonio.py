"""JSON in and out of every door: orjson on the hot path, the standard library for what
orjson refuses or reads differently, so the server accepts, refuses and answers exactly
what it did with ``json`` alone (tests/unit/test_http_jsonio.py). :func:`loads` hands
``json`` every body orjson refuses, and any document with a float that may have been a
huge integer or nesting deeper than ``MAX_PLAIN_DEPTH``; :func:`dumps` writes what orjson
cannot (integers beyond 64 bits) with ``json``. One deliberate difference: NaN and
infinities are written as ``null``."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import orjson

_OPTIONS = orjson.OPT_NON_STR_KEYS
# deeper documents are parsed again by json, which decides (its limit is Python's recursion limit)
MAX_PLAIN_DEPTH = 64
_BIG = float(2**63)


def _plain(obj: Any) -> Any:
    """numpy values as the Python values ``json``'s default hook made of them."""
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")


def loads(data: bytes | str) -> Any:
    """A JSON document; raises what ``json.loads`` of the UTF-8 text raises
    (UnicodeDecodeError, json.JSONDecodeError, RecursionError, ValueError).
    What it builds is the caller's to bound (``serving.service.json_budget``)."""
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    else:
        if _plain_document(doc):
            return doc
        del doc  # not held while json builds its own copy
    return json.loads(data.decode("utf-8") if isinstance(data, (bytes, bytearray, memoryview)) else data)


def _plain_document(doc: Any) -> bool:
    """True when ``json`` would have parsed ``doc``'s text to the same value (no float that
    may have been a huge integer, no deep nesting); the walk allocates nothing per value."""
    stack = [iter((doc,))]
    while stack:
        for node in stack[-1]:
            if isinstance(node, float):
                if abs(node) >= _BIG and node == int(node):
                    return False
            elif isinstance(node, (list, dict)):
                if len(stack) > MAX_PLAIN_DEPTH:  # node's depth is len(stack) - 1
                    return False
                stack.append(iter(node.values() if isinstance(node, dict) else node))
                break
        else:
            stack.pop()
    return True


def dumps(obj: Any, *, sort_keys: bool = False) -> bytes:
    """Compact UTF-8 JSON of ``obj`` (non-ASCII text kept as is)."""
    try:
        return orjson.dumps(obj, default=_plain, option=_OPTIONS | (orjson.OPT_SORT_KEYS if sort_keys else 0))
    except orjson.JSONEncodeError as exc:
        if isinstance(exc.__cause__, TypeError):  # not JSON at all: json would refuse it too
            raise exc.__cause__ from None
    text = json.dumps(obj, ensure_ascii=False, default=_plain, sort_keys=sort_keys, separators=(",", ":"))
    return text.encode("utf-8")


def to_json(obj: Any) -> str:
    """:func:`dumps` as a str: a Paddle Serving answer's ``value`` entries are JSON strings
    (never a Python repr to ``eval``)."""
    return dumps(obj).decode("utf-8")


def plain(obj: Any) -> Any:
    """A pipeline output as plain JSON types (numpy values converted), to embed in an answer."""
    return loads(dumps(obj))
