"""ops.image: alpha compositing and 16-bit reduction, block by block, give
PaddleOCR 2.10's bytes exactly (its formula, whole-image, is the reference
here) while holding no float64 copy of the whole image."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from ops.image import alpha_to_color, row_blocks, to_bgr, to_uint8


def paddleocr_alpha_to_color(img: np.ndarray, alpha_color=(255, 255, 255)) -> np.ndarray:
    """PaddleOCR 2.10's ``tools/infer/utility.py:alpha_to_color``, as it is."""
    import cv2

    if len(img.shape) == 3 and img.shape[2] == 4:
        B, G, R, A = cv2.split(img)
        alpha = A / 255
        R = (alpha_color[0] * (1 - alpha) + R * alpha).astype(np.uint8)
        G = (alpha_color[1] * (1 - alpha) + G * alpha).astype(np.uint8)
        B = (alpha_color[2] * (1 - alpha) + B * alpha).astype(np.uint8)
        img = cv2.merge((B, G, R))
    return img


def whole_image_to_bgr(img: np.ndarray) -> np.ndarray:
    """to_bgr as it was: the whole-image 16-bit reduction, then PaddleOCR's compositing."""
    if img.dtype == np.uint16:
        img = (img >> 8).astype(np.uint8)
    return paddleocr_alpha_to_color(img) if img.ndim == 3 and img.shape[2] == 4 else img


def every_alpha_image(height: int, width: int, seed: int) -> np.ndarray:
    """Random BGRA whose first pixels pair every alpha 0..255 with each edge colour value."""
    rng = np.random.default_rng(seed)
    img = rng.integers(0, 256, (height, width, 4), dtype=np.uint8)
    edges = np.array([0, 1, 127, 128, 254, 255], np.uint8)
    n = min(img.shape[0] * img.shape[1], 256 * len(edges))
    pixels = img.reshape(-1, 4)
    pixels[:n, 3] = np.tile(np.arange(256, dtype=np.uint8), len(edges))[:n]
    pixels[:n, :3] = np.repeat(edges, 256)[:n, None]
    return img


@pytest.mark.parametrize("shape", [(61, 53), (1, 2000), (700, 1), (1300, 997)])
@pytest.mark.parametrize("colour", [(255, 255, 255), (0, 0, 0), (12, 200, 255)])
def test_blockwise_alpha_is_paddleocrs_byte_for_byte(shape, colour):
    img = every_alpha_image(*shape, seed=shape[0])
    assert len(row_blocks(*shape)) > 1 or shape[0] * shape[1] < 1 << 18  # the large ones span blocks
    expected = paddleocr_alpha_to_color(img, colour)
    got = alpha_to_color(img, colour)
    assert got.dtype == np.uint8 and got.shape == expected.shape and got.flags.c_contiguous
    assert np.array_equal(got, expected)


@pytest.mark.parametrize("channels", [1, 3, 4])
def test_blockwise_16_bit_reduction_is_the_whole_image_one(channels):
    rng = np.random.default_rng(channels)
    img = rng.integers(0, 65536, (1100, 600, channels), dtype=np.uint16).squeeze()
    img.flat[:6] = [0, 255, 256, 32767, 65280, 65535]
    if channels == 4:
        img[:, :, 3].flat[:256] = np.arange(256, dtype=np.uint16) << 8
    assert np.array_equal(to_uint8(img), (img >> 8).astype(np.uint8))
    assert np.array_equal(to_bgr(img), to_bgr(whole_image_to_bgr(img)))


def _to_bgr_peak(img: np.ndarray) -> tuple[np.ndarray, int]:
    """``to_bgr(img)`` and the peak of what it allocated (tracemalloc)."""
    tracemalloc.start()
    try:
        out = to_bgr(img)
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_compositing_holds_no_float64_image():
    out, peak = _to_bgr_peak(every_alpha_image(1500, 1500, seed=5))
    # the output (1500 x 1500 x 3 bytes) and a few blocks of float64; the whole-image
    # formula peaked at about 8 float64 copies of one channel (~140 MB here)
    assert peak < out.nbytes + 24 * 2**20, peak


def test_16_bit_rgba_holds_no_whole_image_temporary():
    out, peak = _to_bgr_peak(np.random.default_rng(6).integers(0, 65536, (1500, 1500, 4), dtype=np.uint16))
    assert peak < out.nbytes + 24 * 2**20, peak
