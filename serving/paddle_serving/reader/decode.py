"""Encoded image bytes (a file, base64, a URL, raw bytes) to an HWC BGR uint8 image, as Paddle Serving's readers
decode them: ``cv2.imdecode(..., IMREAD_COLOR)``, so undecodable bytes give ``None`` and empty ones raise
``cv2.error``, as there.

``URL2Image`` fetches only ``http://`` and ``https://`` URLs (the real one opens whatever ``urllib`` opens,
``file://`` included): a server process should not read local files because a request named them."""

import base64
import logging
import os
import urllib.parse
import urllib.request

import cv2
import numpy as np

from serving.paddle_serving.reader.types import Array, ImInfo

_LOGGER = logging.getLogger(__name__)

URL_SCHEMES = ("http", "https")


def decode_image(data: bytes) -> Array | None:
    """``data`` (an encoded image) as an HWC BGR uint8 array; ``None`` where OpenCV cannot decode it."""
    image: Array | None = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    return image


class _Decoder:
    def __repr__(self) -> str:
        return type(self).__name__ + "()"


class String2Image(_Decoder):
    """Encoded image bytes to an image."""

    def __call__(self, img_buffer: bytes) -> Array | None:
        return decode_image(img_buffer)


class File2Image(_Decoder):
    """An image file's path to the image it holds."""

    def __call__(self, img_path: str | os.PathLike[str]) -> Array | None:
        with open(img_path, "rb") as fin:
            return decode_image(fin.read())


class DetectionFile2Image(_Decoder):
    """An image file to an RGB image, in the Detection* form: sets ``im_info['im_shape']`` (float32 H, W) and
    ``im_info['scale_factor']`` ([1, 1] float32) where ``im_info`` is given."""

    def __call__(self, img_path: str | os.PathLike[str], im_info: ImInfo | None = None) -> tuple[Array, ImInfo | None]:
        with open(img_path, "rb") as fin:
            img = cv2.cvtColor(decode_image(fin.read()), cv2.COLOR_BGR2RGB)  # type: ignore[arg-type]
        if im_info is not None:
            im_info["im_shape"] = np.array(img.shape[:2], dtype=np.float32)
            im_info["scale_factor"] = np.array([1.0, 1.0], dtype=np.float32)
        return img, im_info


class Base64ToImage(_Decoder):
    """A base64 string (``str`` or ``bytes``) of an encoded image to the image."""

    def __call__(self, img_base64: str | bytes) -> Array | None:
        return decode_image(base64.b64decode(img_base64))


class URL2Image(_Decoder):
    """An ``http(s)://`` URL of an encoded image to the image; other schemes raise ``ValueError``.

    ``timeout`` (seconds) bounds the fetch; Paddle Serving's has none, which would let one slow host hold a
    worker forever."""

    def __init__(self, timeout: float = 30.0) -> None:
        self.timeout = timeout

    def __call__(self, img_url: str) -> Array | None:
        scheme = urllib.parse.urlsplit(img_url).scheme.lower()
        if scheme not in URL_SCHEMES:
            raise ValueError(f"URL2Image fetches only {' and '.join(URL_SCHEMES)} URLs, not {img_url!r}")
        _LOGGER.debug("URL2Image fetching %s", img_url)
        with urllib.request.urlopen(img_url, timeout=self.timeout) as resp:  # the scheme is checked above
            return decode_image(resp.read())
