"""Draw OCR results: boxes on the image, recognised text beside it.

:func:`draw_ocr` returns a new RGB image twice as wide as the input: on the
left the original with each box outlined and lightly filled, on the right a
white panel with the same boxes and the text written inside them (the layout
PaddleOCR's ``draw_ocr_box_txt`` made familiar). The font is
``client.fonts.find_font("any")`` — a CJK-capable one when installed, so
Chinese text is legible — else DejaVu (matplotlib's copy if the system has
none), else PIL's built-in bitmap font.
"""

from __future__ import annotations

import io
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from PIL import Image, ImageDraw, ImageFont

from client.fonts import find_font

Point = tuple[float, float]


def load_font(size: int, path: str | None = None):
    """TrueType font of ``size`` px from ``path`` (or ``find_font("any")``); else PIL's default."""
    path = path or find_font("any")
    if path:
        try:
            return ImageFont.truetype(path, max(1, int(size)))
        except OSError:
            pass
    return ImageFont.load_default()


def open_image(image: Any) -> Image.Image:
    """An RGB PIL image from a PIL image, encoded bytes or a path."""
    if isinstance(image, Image.Image):
        img = image
    elif isinstance(image, (bytes, bytearray)):
        img = Image.open(io.BytesIO(bytes(image)))
    else:
        img = Image.open(image)
    return img.convert("RGB")


def _color(index: int) -> tuple[int, int, int]:
    rng = random.Random(index)
    return rng.randint(0, 200), rng.randint(0, 200), rng.randint(0, 200)


def _polygon(box: Sequence[Sequence[float]]) -> list[Point]:
    return [(float(p[0]), float(p[1])) for p in box]


def _text_size(draw: ImageDraw.ImageDraw, text: str, font) -> tuple[int, int]:
    left, top, right, bottom = draw.textbbox((0, 0), text, font=font)
    return right - left, bottom - top


def _fit_font(draw: ImageDraw.ImageDraw, text: str, width: float, height: float, get_font: Callable[[int], Any]):
    """Largest font (down to 8 px) whose rendering of ``text`` fits ``width`` x ``height``."""
    size = int(max(8, min(64, height * 0.8)))
    font = get_font(size)
    while size > 8:
        w, h = _text_size(draw, text, font)
        if w <= max(width, 1) and h <= max(height, 1):
            break
        size = max(8, int(size * 0.85))
        font = get_font(size)
    return font


def draw_ocr(
    image: Any, results: Iterable[Mapping[str, Any]], font_path: str | None = None, fill_alpha: float = 0.3
) -> Image.Image:
    """Side-by-side picture of ``results`` (``[{"text", "score", "box"}, ...]``) on ``image``."""
    img = open_image(image)
    items = [r for r in results if isinstance(r, Mapping) and r.get("box") and len(r["box"]) >= 3]
    w, h = img.size
    fonts: dict[int, Any] = {}
    font_path = font_path or find_font("any")

    def get_font(size: int):
        if size not in fonts:
            fonts[size] = load_font(size, font_path)
        return fonts[size]

    overlay = img.copy()
    right = Image.new("RGB", (w, h), (255, 255, 255))
    draw_overlay = ImageDraw.Draw(overlay)
    draw_right = ImageDraw.Draw(right)
    for i, item in enumerate(items):
        poly = _polygon(item["box"])
        color = _color(i)
        draw_overlay.polygon(poly, fill=color)
        draw_right.polygon(poly, outline=color)
        text = str(item.get("text", ""))
        if not text:
            continue
        xs, ys = [p[0] for p in poly], [p[1] for p in poly]
        bw, bh = max(xs) - min(xs), max(ys) - min(ys)
        font = _fit_font(draw_right, text, bw, bh, get_font)
        draw_right.text((min(xs) + 1, min(ys)), text, fill=(0, 0, 0), font=font)
    left = Image.blend(img, overlay, fill_alpha)
    # outlines drawn after blending so they stay crisp
    draw_blend = ImageDraw.Draw(left)
    for i, item in enumerate(items):
        draw_blend.polygon(_polygon(item["box"]), outline=_color(i))
    canvas = Image.new("RGB", (w * 2, h), (255, 255, 255))
    canvas.paste(left, (0, 0))
    canvas.paste(right, (w, 0))
    return canvas
