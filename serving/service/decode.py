"""Request values -> what a pipeline's source op takes: an image as the array the file
holds (``cv2.IMREAD_UNCHANGED``; the op picks its colour format), a text as a str.

Two steps, so nothing is decoded before every limit is checked: :func:`plan_inputs`
reads each image's header and refuses what is too large (413); the caller reserves
the bytes (:mod:`serving.batching.decode_budget`), then calls :meth:`DecodePlan.decode`.
Every failure is a 4xx naming the input."""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from serving.batching.decode_budget import request_bytes_limit
from serving.errors import BadRequest, PayloadTooLarge
from serving.service.image_header import ImageHeader, read_header

log = logging.getLogger(__name__)

#: request keys accepted for each input kind (Paddle Serving clients use these)
KEYS_BY_KIND = {"image": ("image", "img"), "text": ("text", "words", "sentence")}

# what str.split() drops: ASCII whitespace (bytes.translate, O(n)) and, rarely, Unicode's
_ASCII_SPACE = bytes(c for c in range(128) if chr(c).isspace())
# (every Unicode whitespace is below U+3001: the last is U+3000, the ideographic space)
_UNICODE_SPACE = MappingProxyType({c: None for c in range(0x3001) if chr(c).isspace()})


@dataclass(frozen=True)
class InputLimits:
    max_image_pixels: int = 40_000_000  # one image
    max_request_pixels: int = 80_000_000  # all images of one request
    max_request_bytes: int = request_bytes_limit(40_000_000)  # all images of one request, decoded
    max_text_chars: int = 100_000


def plain_kind(kind: str | None, name: str) -> str:
    """The input kind a door decodes for pipeline ``name`` (default: images); 400 for a pipeline
    of a Paddle Serving script, whose own ``RequestOp`` reads its requests."""
    kind = kind or "image"
    if kind not in KEYS_BY_KIND:
        raise BadRequest(
            f"pipeline {name!r} runs a Paddle Serving web_service.py: send it Paddle Serving's Request "
            f"(POST /{name}/prediction, or PipelineService over gRPC) or the Open Inference Protocol's "
            f"(POST /v2/models/{name}/infer)"
        )
    return kind


def key_kind(key: str) -> str | None:
    """The input kind a request key names (``"img"`` -> ``"image"``), or None."""
    for kind, keys in KEYS_BY_KIND.items():
        if key in keys:
            return kind
    return None


def decode_base64(value: Any, where: str) -> bytes:
    """Base64 text (a data: URL, line breaks and other whitespace allowed) -> bytes.

    Costs a few times the value's size at most: whitespace is dropped by one
    ``bytes.translate``, not by splitting into a list of pieces."""
    if not isinstance(value, str):
        raise BadRequest(f"{where}: expected a base64 string, got {type(value).__name__}")
    try:
        data = value.encode("ascii")
    except UnicodeEncodeError:  # only Unicode whitespace is allowed beyond ASCII
        try:
            data = value.translate(_UNICODE_SPACE).encode("ascii")
        except UnicodeEncodeError:
            raise BadRequest(f"{where}: invalid base64 (a character outside the base64 alphabet)") from None
    data = data.strip(_ASCII_SPACE)
    if data.startswith(b"data:"):  # data URL
        comma = data.find(b",")
        if comma != -1:
            data = data[comma + 1 :]
    data = data.translate(None, _ASCII_SPACE)  # line breaks, as base64.encodebytes writes them
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise BadRequest(f"{where}: invalid base64 ({exc})") from None


def _imdecode(data: bytes | bytearray | memoryview, header: ImageHeader, max_pixels: int) -> np.ndarray:
    import cv2

    buf = np.frombuffer(data, dtype=np.uint8)
    try:
        img = cv2.imdecode(buf, cv2.IMREAD_UNCHANGED)
    except cv2.error as exc:
        raise BadRequest(f"cannot decode image: {exc}") from None
    if img is None:
        raise BadRequest("cannot decode image (unsupported or corrupt data)")
    if img.shape[0] * img.shape[1] > max_pixels:
        raise PayloadTooLarge(f"image is {img.shape[1]}x{img.shape[0]} pixels; limit is {max_pixels}")
    if img.nbytes > header.decoded_bytes:  # the budget held too little: the header count needs a fix
        log.warning(
            "a %s image decoded to %d bytes (%s %s), more than its header's count %d",
            header.format,
            img.nbytes,
            img.dtype,
            tuple(img.shape),
            header.decoded_bytes,
        )
    return img


def decode_image(data: bytes | bytearray | memoryview, *, max_pixels: int) -> np.ndarray:
    """Image file bytes -> the decoded array (``cv2.IMREAD_UNCHANGED``); 400 for bad data,
    413 over ``max_pixels`` (from the header, then again on the array)."""
    if len(data) == 0:
        raise BadRequest("empty image data")
    return _imdecode(data, read_header(bytes(data), max_pixels), max_pixels)


@dataclass
class PendingInput:
    """One request value, checked and ready to decode: a text is final; an
    image is its file bytes and header."""

    where: str
    value: Any  # the text, or the image file's bytes
    header: ImageHeader | None = None
    max_pixels: int = 0

    def decode(self) -> Any:
        if self.header is None:
            return self.value
        try:
            return _imdecode(self.value, self.header, self.max_pixels)
        except BadRequest as exc:
            raise exc.with_prefix(f"{self.where}: ") from None


@dataclass
class DecodePlan:
    """A request's inputs, every limit checked, nothing decoded yet."""

    inputs: list[PendingInput]

    @property
    def held_bytes(self) -> int:
        """Bytes the images hold while the request runs: the arrays and the ops' working copies."""
        return sum(p.header.held_bytes for p in self.inputs if p.header is not None)

    @property
    def peak_bytes(self) -> int:
        """Bytes held at the peak: what the images hold, and the largest image's
        transient extra while decoding (the images are decoded one after the other)."""
        extra = max((p.header.decode_extra_bytes for p in self.inputs if p.header is not None), default=0)
        return self.held_bytes + extra

    def decode(self) -> list[Any]:
        return [p.decode() for p in self.inputs]


def prepare_input(kind: str, value: Any, where: str, limits: InputLimits, *, raw: bool = False) -> PendingInput:
    """Check one request value without decoding pixels: base64 and the image
    header (400), the image's pixels (413); a text is decoded now (it is cheap)."""
    if kind == "image":
        data = value if raw else decode_base64(value, where)
        if len(data) == 0:
            raise BadRequest(f"{where}: empty image data")
        try:
            header = read_header(bytes(data), limits.max_image_pixels)
        except BadRequest as exc:
            raise exc.with_prefix(f"{where}: ") from None
        return PendingInput(where, data, header, limits.max_image_pixels)
    if kind == "text":
        return PendingInput(where, decode_text(value, where, limits, raw=raw))
    raise BadRequest(f"{where}: this pipeline takes no {kind!r} input")


class RequestImages:
    """The images of one request so far, held to the per-request limits as each is added."""

    def __init__(self, limits: InputLimits):
        self.limits = limits
        self.pixels = 0
        self.nbytes = 0

    def add(self, header: ImageHeader, where: str) -> None:
        """413 once the request's images hold too many pixels, or decode to too many bytes."""
        limits = self.limits
        self.pixels += header.pixels
        self.nbytes += header.decoded_bytes
        if self.pixels > limits.max_request_pixels:
            raise PayloadTooLarge(
                f"the request's images hold over {limits.max_request_pixels} pixels in all (limit per request)"
            )
        if self.nbytes > limits.max_request_bytes:
            raise PayloadTooLarge(
                f"the request's images decode to over {limits.max_request_bytes} bytes in all "
                f"(limit per request: 2 images of max_image_pixels as 8-bit BGRA); {where} is "
                f"{header.width}x{header.height}, {header.channels} channels of {8 * header.bytes_per_channel} bits"
            )


def plan_inputs(inputs: Sequence[tuple[str, Any, bool]], limits: InputLimits) -> DecodePlan:
    """Every ``(kind, value, raw)`` of a request checked from its header, and
    the request as a whole: its images' pixels and decoded bytes (413)."""
    pending: list[PendingInput] = []
    images = RequestImages(limits)
    for i, (kind, value, raw) in enumerate(inputs):
        pending.append(prepare_input(kind, value, f"input {i}", limits, raw=raw))
        header = pending[-1].header
        if header is not None:
            images.add(header, f"input {i}")
    return DecodePlan(pending)


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
    return prepare_input(kind, value, where, limits, raw=raw).decode()
