"""What a request's values mean, per input kind, and how answers are shaped.

The HTTP layer hands raw values here; every failure is a 4xx ServingError
naming the input, so malformed input never reaches an op as a surprise.
"""
from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from serving.errors import BadRequest

#: request keys accepted for each input kind (Paddle Serving clients use these)
KEYS_BY_KIND = {"image": ("image", "img"), "text": ("text", "words", "sentence")}


@dataclass(frozen=True)
class InputLimits:
    max_image_pixels: int = 40_000_000     # one image
    max_request_pixels: int = 80_000_000   # all images of one request, decoded
    max_text_chars: int = 100_000


def decoded_pixels(value: Any) -> int:
    """Pixels held by a decoded input (0 for text)."""
    return int(value.shape[0] * value.shape[1]) if isinstance(value, np.ndarray) and value.ndim >= 2 else 0


def key_kind(key: str) -> str | None:
    for kind, keys in KEYS_BY_KIND.items():
        if key in keys:
            return kind
    return None


def decode_base64(value: Any, where: str) -> bytes:
    if not isinstance(value, str):
        raise BadRequest(f"{where}: expected a base64 string, got {type(value).__name__}")
    text = value.strip()
    if text.startswith("data:") and "," in text:  # data URL
        text = text.split(",", 1)[1]
    text = "".join(text.split())  # line breaks, as base64.encodebytes writes them
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise BadRequest(f"{where}: invalid base64 ({exc})") from None


def decode_input(kind: str, value: Any, where: str, limits: InputLimits, *, raw: bool = False) -> Any:
    """Turn one request value into what the pipeline's source op takes.

    ``raw=True`` means ``value`` is already bytes (multipart or raw body)."""
    if kind == "image":
        data = value if raw else decode_base64(value, where)
        from ops.image import decode_image

        try:
            return decode_image(data, max_pixels=limits.max_image_pixels)
        except BadRequest as exc:
            raise type(exc)(f"{where}: {exc.message}") from None
    if kind == "text":
        if raw:
            try:
                value = value.decode("utf-8")
            except UnicodeDecodeError:
                raise BadRequest(f"{where}: text is not valid UTF-8") from None
        if not isinstance(value, str):
            raise BadRequest(f"{where}: expected a string, got {type(value).__name__}")
        if len(value) > limits.max_text_chars:
            from serving.errors import PayloadTooLarge

            raise PayloadTooLarge(f"{where}: text has {len(value)} characters (limit {limits.max_text_chars})")
        return value
    raise BadRequest(f"{where}: this pipeline takes no {kind!r} input")


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")


def to_json(obj: Any) -> str:
    """JSON text of a pipeline output (numpy values converted; UTF-8 kept)."""
    return json.dumps(obj, ensure_ascii=False, default=_jsonable)


def plain(obj: Any) -> Any:
    """The output as plain JSON types (for embedding in a JSON answer)."""
    return json.loads(to_json(obj))
