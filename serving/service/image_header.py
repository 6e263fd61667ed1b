"""What decoding an image file will cost, read from its header only (PIL opens a file
without loading it; a file PIL cannot identify is refused, its size being unknown).

``cv2.imdecode(IMREAD_UNCHANGED)`` keeps alpha, 16 bits and floats, so the count follows
what OpenCV returns, not PIL's mode, and is an upper bound where the header leaves
something open. Decoding briefly needs twice the array (OpenCV copies its decoder's
array into the one Python gets); tests/unit/test_image_header.py holds each format to it."""

from __future__ import annotations

import io
from dataclasses import dataclass

from serving.batching.decode_budget import BGR_BYTES
from serving.errors import BadRequest, PayloadTooLarge

# PNG IHDR colour type -> channels cv2 returns (gray+alpha comes out BGRA)
_PNG_CHANNELS = {0: 1, 2: 3, 3: 3, 4: 4, 6: 4}
# TIFF tags
_BITS_PER_SAMPLE, _SAMPLES_PER_PIXEL, _PHOTOMETRIC = 258, 277, 262
_PHOTOMETRIC_GRAY = (0, 1)  # min-is-white, min-is-black
_PHOTOMETRIC_RGB = 2
_GRAY_MODES = ("1", "L")


@dataclass(frozen=True)
class ImageHeader:
    """An image file's format and size, and the array ``cv2.imdecode`` makes of it."""

    format: str
    width: int
    height: int
    channels: int  # of the decoded array (an upper bound where the header leaves it open)
    bytes_per_channel: int
    # what decoding holds at its peak beyond the returned array (OpenCV's own copy, TIFF strips)
    decode_extra_bytes: int = 0

    @property
    def pixels(self) -> int:
        return self.width * self.height

    @property
    def decoded_bytes(self) -> int:
        """Bytes of the array ``cv2.imdecode(IMREAD_UNCHANGED)`` returns."""
        return self.pixels * self.channels * self.bytes_per_channel

    @property
    def working_bytes(self) -> int:
        """Bytes of the 8-bit BGR copy an image op works on (``ops/image.py``'s
        ``to_bgr``): none when the file decodes to 8-bit BGR already, else 3 a
        pixel (gray, alpha or 16 bits make a new array, held as long as the request)."""
        return 0 if (self.channels, self.bytes_per_channel) == (3, 1) else self.pixels * BGR_BYTES

    @property
    def held_bytes(self) -> int:
        """Bytes this image holds while its request runs: the decoded array and its working copy."""
        return self.decoded_bytes + self.working_bytes

    @property
    def peak_bytes(self) -> int:
        """Bytes held at the peak of decoding this image."""
        return self.decoded_bytes + self.decode_extra_bytes


def read_header(data: bytes, max_pixels: int) -> ImageHeader:
    """The header of an image file, nothing decoded: 400 for data PIL cannot identify, 413
    for an image of more than ``max_pixels`` pixels."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as im:
            fmt, mode = str(im.format), str(im.mode)
            width, height = int(im.size[0]), int(im.size[1])
            channels, depth = _array_shape(fmt, mode, data, im)
    except Image.DecompressionBombError as exc:  # PIL's own limit is far above ours
        raise PayloadTooLarge(f"image is too large ({exc}); limit is {max_pixels} pixels") from None
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError, TypeError) as exc:  # TypeError: odd TIFF tags
        raise BadRequest(f"cannot read the image header: unsupported or corrupt image ({type(exc).__name__})") from None
    if width * height > max_pixels:
        raise PayloadTooLarge(f"image is {width}x{height} = {width * height} pixels; limit is {max_pixels}")
    decoded = width * height * channels * depth
    extra = decoded
    if fmt == "TIFF" and depth == 1:
        extra = max(extra, width * height * 4)  # read as RGBA, one strip at a time
    return ImageHeader(fmt, width, height, channels, depth, extra)


def _array_shape(fmt: str, mode: str, data: bytes, im: object) -> tuple[int, int]:
    """(channels, bytes per channel) of the array cv2 decodes ``data`` to (upper bounds)."""
    if fmt == "PNG":
        return _png_shape(data)
    if fmt == "TIFF":
        return _tiff_shape(getattr(im, "tag_v2", {}))
    if fmt in ("JPEG", "MPO"):  # CMYK comes out BGR
        return (1 if mode in _GRAY_MODES else 3), (2 if int(getattr(im, "bits", 8)) > 8 else 1)
    if fmt == "BMP":
        return (1 if mode in _GRAY_MODES else 4 if _bmp_bits(data) == 32 else 3), 1
    if fmt == "PPM":  # PBM, PGM, PPM, PFM: PIL shows a 16-bit PPM as RGB
        return {"1": (1, 1), "L": (1, 1), "I": (1, 2), "I;16": (1, 2), "F": (1, 4)}.get(mode, (3, 2))
    if fmt in ("WEBP", "GIF"):  # 8 bit, BGR or BGRA
        return 4, 1
    # anything else OpenCV may read (JPEG 2000, AVIF, Sun raster ...): at most 4 channels of
    # 16 bits, or the depth PIL's mode shows if larger
    return 4, 4 if mode in ("I", "F") else 2


def _png_shape(data: bytes) -> tuple[int, int]:
    # IHDR follows the 8-byte signature: length, type, width, height, bit depth, colour type
    if len(data) < 26:
        return 4, 2
    depth, color_type = data[24], data[25]
    channels = _PNG_CHANNELS.get(color_type, 4)
    # tRNS (transparency) or an animation may turn the image BGRA; a stray match only overcounts
    if channels < 4 and (data.find(b"tRNS", 8) != -1 or data.find(b"acTL", 8) != -1):
        channels = 4
    return channels, 2 if depth == 16 else 1


def _tiff_shape(tags: object) -> tuple[int, int]:
    get = getattr(tags, "get", lambda key, default=None: default)
    bits_value = get(_BITS_PER_SAMPLE, (1,))
    bits = max(bits_value) if isinstance(bits_value, tuple) and bits_value else int(bits_value or 1)
    samples = int(get(_SAMPLES_PER_PIXEL, 1) or 1)
    photometric = get(_PHOTOMETRIC, 1)
    if samples == 1 and photometric in _PHOTOMETRIC_GRAY:
        channels = 1
    elif samples == 3 and photometric == _PHOTOMETRIC_RGB:
        channels = 3
    else:  # palette, gray+alpha, CMYK, YCbCr, extra samples: BGRA or as many as the file holds
        channels = max(samples, 4)
    depth = 1 if bits <= 8 else 2 if bits <= 16 else 4 if bits <= 32 else 8
    return channels, depth


def _bmp_bits(data: bytes) -> int:
    """Bits per pixel of a BMP (0 if the header is short): OS/2 and Windows headers."""
    if len(data) < 30:
        return 0
    header_size = int.from_bytes(data[14:18], "little")
    offset = 24 if header_size == 12 else 28
    return int.from_bytes(data[offset : offset + 2], "little")
