"""Fuzz cases: bad image bytes (random, truncated, tiny, mutated, bombs), each
sent one or all of the four ways. Allowed statuses are in the case table
(tests/support/fuzz/cases.py)."""

from __future__ import annotations

from tests.support.fuzz.case import Request
from tests.support.fuzz.draw import Draw, b64
from tests.support.fuzz.malformed import hdr_bomb, png_with_header


def random_bytes_paddle(draw: Draw) -> Request:
    return draw.paddle_image(draw.bytes(0, 8192))


def random_bytes_native_json(draw: Draw) -> Request:
    return draw.native_json({"inputs": [{"image": b64(draw.bytes(1, 8192))}]})


def random_bytes_multipart(draw: Draw) -> Request:
    return draw.multipart([("image", "r.jpg", draw.bytes(0, 8192))])


def random_bytes_raw(draw: Draw) -> Request:
    return draw.raw(draw.bytes(0, 8192), draw.rng.choice(["image/png", "image/jpeg", "image/x-anything"]))


def truncated_image(draw: Draw) -> Request:
    ext, data = draw.rng.choice(draw.images.valid)
    cut = draw.rng.randint(0, len(data) - 1)
    return draw.any_transport(data[:cut])


def tiny_image(draw: Draw) -> Request:
    return draw.any_transport(draw.rng.choice(draw.images.tiny))


def mutated_image(draw: Draw) -> Request:
    # a few random bytes changed: may still decode (the table marks it lenient)
    ext, data = draw.rng.choice(draw.images.valid)
    buf = bytearray(data)
    for _ in range(draw.rng.randint(1, 20)):
        buf[draw.rng.randrange(len(buf))] = draw.rng.randrange(256)
    return draw.any_transport(bytes(buf))


def pixel_bomb_header(draw: Draw) -> Request:
    limit = draw.limits.max_image_pixels
    w = draw.rng.randint(int(limit**0.5) + 1, 12000)
    h = limit // w + draw.rng.randint(1, 5000)
    return draw.any_transport(png_with_header(w, h, rows=1))


def pixel_bomb_pil_bypass(draw: Draw) -> Request:
    # > 2 * PIL.Image.MAX_IMAGE_PIXELS: PIL raises DecompressionBombError from the header -> 413
    return draw.any_transport(png_with_header(15000, 15000, bitdepth=1, color=0, rows=None))


def pixel_bomb_hdr(draw: Draw) -> Request:
    # a format PIL cannot size (Radiance HDR, 49 M float pixels if decoded): refused before decoding
    # (400 "cannot read the image header"; 413 would also do if the size were read)
    return draw.raw(hdr_bomb(7000, 7000), "image/vnd.radiance")


def alpha_depth_bomb(draw: Draw) -> Request:
    # issue 25: all-zero RGBA PNGs (8 or 16 bit) just inside the pixel limit, one or two a request:
    # a few hundred KB that decode to 4-8 bytes a pixel; bounded by the decode budget (200, 413 or 503)
    side = int(draw.limits.max_image_pixels**0.5)
    png = b64(png_with_header(side, side, bitdepth=draw.rng.choice([8, 16]), color=6, rows=None))
    n = draw.rng.randint(1, 2)
    return draw.paddle({"key": ["image"] * n, "value": [png] * n, "logid": draw.rng.randint(0, 99)})
