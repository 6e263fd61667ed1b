"""serving.service.image_header: the bytes cv2.imdecode(IMREAD_UNCHANGED) allocates,
read from the header alone, held to what OpenCV really returns for each format:
equal where the header says it all, never less where it leaves it open."""

from __future__ import annotations

import io

import numpy as np
import pytest

from serving.errors import BadRequest, PayloadTooLarge
from serving.service.image_header import read_header

LIMIT = 40_000_000
H, W = 20, 30


def _pil(image, fmt: str, **options) -> bytes:
    out = io.BytesIO()
    image.save(out, fmt, **options)
    return out.getvalue()


def _cv2(ext: str, array: np.ndarray) -> bytes:
    import cv2

    ok, buf = cv2.imencode(ext, array)
    assert ok
    return buf.tobytes()


def _decoded(data: bytes) -> np.ndarray:
    import cv2

    img = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
    assert img is not None
    return img


def _rgb():
    from PIL import Image

    return Image.fromarray(np.random.default_rng(0).integers(0, 256, (H, W, 3), dtype=np.uint8))


def _u16(*shape: int) -> np.ndarray:
    return np.random.default_rng(1).integers(0, 65536, (H, W, *shape), dtype=np.uint16).squeeze()


# (name, file bytes, the decoded array's (channels, bytes per channel))
EXACT = [
    ("png rgb", lambda: _pil(_rgb(), "PNG"), (3, 1)),
    ("png rgba", lambda: _pil(_rgb().convert("RGBA"), "PNG"), (4, 1)),
    ("png gray", lambda: _pil(_rgb().convert("L"), "PNG"), (1, 1)),
    ("png gray+alpha -> BGRA", lambda: _pil(_rgb().convert("LA"), "PNG"), (4, 1)),
    ("png 1 bit", lambda: _pil(_rgb().convert("1"), "PNG"), (1, 1)),
    ("png palette", lambda: _pil(_rgb().convert("P"), "PNG"), (3, 1)),
    ("png palette+tRNS -> BGRA", lambda: _pil(_rgb().convert("P"), "PNG", transparency=3), (4, 1)),
    ("png rgb+tRNS -> BGRA", lambda: _pil(_rgb(), "PNG", transparency=(1, 2, 3)), (4, 1)),
    ("png 16-bit gray", lambda: _cv2(".png", _u16()), (1, 2)),
    ("png 16-bit rgb", lambda: _cv2(".png", _u16(3)), (3, 2)),
    ("png 16-bit rgba", lambda: _cv2(".png", _u16(4)), (4, 2)),
    ("jpeg rgb", lambda: _pil(_rgb(), "JPEG"), (3, 1)),
    ("jpeg gray", lambda: _pil(_rgb().convert("L"), "JPEG"), (1, 1)),
    ("jpeg cmyk -> BGR", lambda: _pil(_rgb().convert("CMYK"), "JPEG"), (3, 1)),
    ("tiff rgb", lambda: _pil(_rgb(), "TIFF"), (3, 1)),
    ("tiff rgba", lambda: _pil(_rgb().convert("RGBA"), "TIFF"), (4, 1)),
    ("tiff gray", lambda: _pil(_rgb().convert("L"), "TIFF"), (1, 1)),
    ("tiff cmyk", lambda: _pil(_rgb().convert("CMYK"), "TIFF"), (4, 1)),
    ("tiff 16-bit gray", lambda: _cv2(".tiff", _u16()), (1, 2)),
    ("tiff 16-bit rgb", lambda: _cv2(".tiff", _u16(3)), (3, 2)),
    ("tiff 16-bit rgba", lambda: _cv2(".tiff", _u16(4)), (4, 2)),
    ("tiff float", lambda: _pil(_float_image(), "TIFF"), (1, 4)),
    ("bmp rgb", lambda: _pil(_rgb(), "BMP"), (3, 1)),
    ("bmp 32-bit bgra", lambda: _cv2(".bmp", np.zeros((H, W, 4), np.uint8)), (4, 1)),
    ("pgm 16-bit", lambda: _cv2(".pgm", _u16()), (1, 2)),
    ("ppm 16-bit", lambda: _cv2(".ppm", _u16(3)), (3, 2)),
]
# formats whose header leaves something open: the count may be larger, never smaller
BOUNDED = [
    ("png gray+tRNS", lambda: _pil(_rgb().convert("L"), "PNG", transparency=3)),
    ("tiff palette", lambda: _pil(_rgb().convert("P"), "TIFF")),
    ("tiff gray+alpha", lambda: _pil(_rgb().convert("LA"), "TIFF")),
    ("bmp palette", lambda: _pil(_rgb().convert("P"), "BMP")),
    ("webp", lambda: _pil(_rgb(), "WEBP")),
    ("webp rgba", lambda: _cv2(".webp", np.random.default_rng(2).integers(0, 256, (H, W, 4), dtype=np.uint8))),
    ("gif", lambda: _pil(_rgb().convert("P"), "GIF")),
    ("ppm 8-bit", lambda: _pil(_rgb(), "PPM")),
    ("pfm", lambda: _cv2(".pfm", np.random.default_rng(3).random((H, W)).astype(np.float32))),
]


def _float_image():
    from PIL import Image

    return Image.fromarray(np.random.default_rng(4).random((H, W)).astype(np.float32))


@pytest.mark.parametrize("name, make, shape", EXACT, ids=[c[0] for c in EXACT])
def test_the_header_count_is_the_decoded_array(name, make, shape):
    data = make()
    header = read_header(data, LIMIT)
    img = _decoded(data)
    assert (header.width, header.height) == (W, H)
    assert (header.channels, header.bytes_per_channel) == shape
    assert header.decoded_bytes == img.nbytes, (img.shape, img.dtype)


@pytest.mark.parametrize("name, make, shape", EXACT, ids=[c[0] for c in EXACT])
def test_the_working_copy_is_what_an_image_op_makes_of_the_array(name, make, shape):
    """``working_bytes`` holds what ``ops/image.py``'s ``to_bgr`` allocates: the
    decode budget reserves it for as long as the request runs."""
    from ops.image import to_bgr

    data = make()
    img = _decoded(data)
    bgr = to_bgr(img)
    made = 0 if np.shares_memory(bgr, img) else bgr.nbytes
    assert read_header(data, LIMIT).working_bytes == made


@pytest.mark.parametrize("name, make", BOUNDED, ids=[c[0] for c in BOUNDED])
def test_where_the_header_is_unclear_the_count_is_an_upper_bound(name, make):
    data = make()
    header = read_header(data, LIMIT)
    assert header.decoded_bytes >= _decoded(data).nbytes


def test_decoding_briefly_holds_a_second_copy_and_tiff_a_strip_buffer():
    png = read_header(_cv2(".png", _u16(4)), LIMIT)
    assert png.peak_bytes == 2 * png.decoded_bytes == 2 * H * W * 8
    gray_tiff = read_header(_pil(_rgb().convert("L"), "TIFF"), LIMIT)
    assert gray_tiff.peak_bytes == H * W + H * W * 4  # an 8-bit TIFF is read through RGBA strips


def test_a_16_bit_rgba_png_counts_its_real_bytes_not_its_pixels():
    header = read_header(_cv2(".png", _u16(4)), LIMIT)
    assert header.pixels == H * W and header.decoded_bytes == H * W * 4 * 2


def test_an_image_bomb_is_refused_from_its_header():
    import zlib

    # a 9000 x 9000 PNG whose header PIL reads without decoding a pixel
    width = height = 9000
    ihdr = width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes([8, 6, 0, 0, 0])

    def chunk(kind: bytes, body: bytes) -> bytes:
        return len(body).to_bytes(4, "big") + kind + body + zlib.crc32(kind + body).to_bytes(4, "big")

    data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")
    with pytest.raises(PayloadTooLarge, match="9000x9000"):
        read_header(data, LIMIT)
    assert read_header(data, width * height).decoded_bytes == width * height * 4


@pytest.mark.parametrize("data", [b"", b"junk", b"\x89PNG\r\n\x1a\n"])
def test_unreadable_headers_are_bad_requests(data):
    with pytest.raises(BadRequest, match="cannot read the image header"):
        read_header(data, LIMIT)
