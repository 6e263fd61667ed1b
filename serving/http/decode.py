"""Request values -> what a pipeline's source op takes, per input kind.

``image``: base64 (or raw bytes) -> the decoded pixel array exactly as the
file holds it (``cv2.IMREAD_UNCHANGED``: gray, BGR or BGRA, 8 or 16 bit);
the op decides what colour format it wants. The pixel count is read from the
header first, so a decompression bomb is refused before it is decoded.
``text``: a string (UTF-8 when raw bytes), length-limited.

Every failure is a 4xx ServingError naming the input, so malformed input
never reaches an op as a surprise.
"""

from __future__ import annotations

import base64
import binascii
import io
from dataclasses import dataclass
from typing import Any

import numpy as np

from serving.errors import BadRequest, PayloadTooLarge

#: request keys accepted for each input kind (Paddle Serving clients use these)
KEYS_BY_KIND = {"image": ("image", "img"), "text": ("text", "words", "sentence")}


@dataclass(frozen=True)
class InputLimits:
    max_image_pixels: int = 40_000_000  # one image
    max_request_pixels: int = 80_000_000  # all images of one request, decoded
    max_text_chars: int = 100_000


def key_kind(key: str) -> str | None:
    """The input kind a request key names (``"img"`` -> ``"image"``), or None."""
    for kind, keys in KEYS_BY_KIND.items():
        if key in keys:
            return kind
    return None


def decoded_pixels(value: Any) -> int:
    """Pixels held by a decoded input (0 for text)."""
    return int(value.shape[0] * value.shape[1]) if isinstance(value, np.ndarray) and value.ndim >= 2 else 0


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


def image_size_from_header(data: bytes, max_pixels: int) -> tuple[int, int]:
    """(width, height) read from the file header, without decoding pixels.

    Only formats whose size can be read this way are accepted: an image whose
    size is unknown could be a decompression bomb, so it is refused (400)
    rather than handed to a full decoder. Over ``max_pixels`` -> 413.
    """
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as im:
            width, height = int(im.size[0]), int(im.size[1])
    except Image.DecompressionBombError as exc:  # PIL's own limit is far above ours
        raise PayloadTooLarge(f"image is too large ({exc}); limit is {max_pixels} pixels") from None
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as exc:
        raise BadRequest(f"cannot read the image header: unsupported or corrupt image ({type(exc).__name__})") from None
    if width * height > max_pixels:
        raise PayloadTooLarge(f"image is {width}x{height} = {width * height} pixels; limit is {max_pixels}")
    return width, height


def decode_image(data: bytes | bytearray | memoryview, *, max_pixels: int) -> np.ndarray:
    """Image file bytes -> the decoded array (``cv2.IMREAD_UNCHANGED``).

    Raises BadRequest for empty or undecodable data and PayloadTooLarge when
    the image has more than ``max_pixels`` pixels (checked from the header
    first, then again on the decoded array).
    """
    import cv2

    if len(data) == 0:
        raise BadRequest("empty image data")
    image_size_from_header(bytes(data), max_pixels)
    buf = np.frombuffer(data, dtype=np.uint8)
    try:
        img = cv2.imdecode(buf, cv2.IMREAD_UNCHANGED)
    except cv2.error as exc:
        raise BadRequest(f"cannot decode image: {exc}") from None
    if img is None:
        raise BadRequest("cannot decode image (unsupported or corrupt data)")
    if img.shape[0] * img.shape[1] > max_pixels:
        raise PayloadTooLarge(f"image is {img.shape[1]}x{img.shape[0]} pixels; limit is {max_pixels}")
    return img


def decode_text(value: Any, where: str, limits: InputLimits, *, raw: bool = False) -> str:
    if raw:
        try:
            value = value.decode("utf-8")
        except UnicodeDecodeError:
            raise BadRequest(f"{where}: text is not valid UTF-8") from None
    if not isinstance(value, str):
        raise BadRequest(f"{where}: expected a string, got {type(value).__name__}")
    if len(value) > limits.max_text_chars:
        raise PayloadTooLarge(f"{where}: text has {len(value)} characters (limit {limits.max_text_chars})")
    return value


def decode_input(kind: str, value: Any, where: str, limits: InputLimits, *, raw: bool = False) -> Any:
    """Turn one request value into what the pipeline's source op takes.

    ``raw=True`` means ``value`` is already bytes (multipart or raw body)."""
    if kind == "image":
        data = value if raw else decode_base64(value, where)
        try:
            return decode_image(data, max_pixels=limits.max_image_pixels)
        except BadRequest as exc:
            raise exc.with_prefix(f"{where}: ") from None
    if kind == "text":
        return decode_text(value, where, limits, raw=raw)
    raise BadRequest(f"{where}: this pipeline takes no {kind!r} input")
