"""Mild print-and-scan degradations for rendered pages.

Readable on purpose: the evaluation page set measures what a precision
change does to OCR, not how robust the models are. Applied in the order a
page would meet them: paper texture and uneven light, contrast, focus blur,
sensor grain, JPEG compression. Deterministic from a seed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Noise", "apply_noise"]


@dataclass(frozen=True)
class Noise:
    """How much of each degradation a page gets (all zero/None: untouched)."""

    texture: float = 0.0  # amplitude of the smooth background texture, grey levels
    light: float = 0.0  # amplitude of a linear brightness gradient across the page, grey levels
    contrast: float = 1.0  # scale around the page's mean (< 1 flattens)
    blur: float = 0.0  # Gaussian blur sigma, px
    grain: float = 0.0  # Gaussian noise sigma, grey levels
    jpeg: int | None = None  # JPEG quality, None: no compression

    @property
    def clean(self) -> bool:
        return self == Noise()


def _smooth_field(rng: np.random.Generator, h: int, w: int, cell: int) -> np.ndarray:
    """Values in [-1, 1] varying smoothly over ``cell`` pixels."""
    import cv2

    small = rng.uniform(-1.0, 1.0, (max(2, h // cell + 2), max(2, w // cell + 2))).astype(np.float32)
    return cv2.resize(small, (w, h), interpolation=cv2.INTER_CUBIC).clip(-1.0, 1.0)


def apply_noise(image: np.ndarray, noise: Noise, seed: int) -> np.ndarray:
    """A degraded copy of a BGR uint8 ``image``."""
    import cv2

    if noise.clean:
        return image.copy()
    rng = np.random.default_rng(seed)
    h, w = image.shape[:2]
    out = image.astype(np.float32)
    if noise.texture:
        out += noise.texture * _smooth_field(rng, h, w, cell=24)[:, :, None]
    if noise.light:
        angle = rng.uniform(0, 2 * np.pi)
        yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
        ramp = (np.cos(angle) * xx / max(1, w) + np.sin(angle) * yy / max(1, h)) * 2 - 1
        out += noise.light * ramp.clip(-1, 1)[:, :, None]
    if noise.contrast != 1.0:
        mean = out.mean()
        out = mean + (out - mean) * noise.contrast
    if noise.blur > 0:
        out = cv2.GaussianBlur(out, (0, 0), noise.blur)
    if noise.grain > 0:
        out += rng.normal(0.0, noise.grain, out.shape).astype(np.float32)
    result = np.clip(np.rint(out), 0, 255).astype(np.uint8)
    if noise.jpeg is not None:
        ok, buf = cv2.imencode(".jpg", result, [cv2.IMWRITE_JPEG_QUALITY, int(noise.jpeg)])
        if not ok:
            raise ValueError("cannot encode the page as JPEG")
        result = cv2.imdecode(buf, cv2.IMREAD_COLOR)
    return np.ascontiguousarray(result)
