"""Draw OCR results: boxes on the image, recognised text beside it.

:func:`draw_ocr` returns a new RGB image twice as wide as the input: on the
left the original with each box outlined and lightly filled, on the right a
white panel with the same boxes and the text written inside them (the layout
PaddleOCR's ``draw_ocr_box_txt`` made familiar). The font is
``client.fonts.find_font("any")`` — a CJK-capable one when installed, so
Chinese text is legible — else DejaVu (matplotlib's copy if the system has
none), else PIL's built-in bitmap font. Neither of those has Chinese glyphs: the
text is then drawn as boxes, which :func:`missing_glyphs` tells a caller
(``batchline predict --draw`` says so once, with the fix).
"""

from __future__ import annotations

import io
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from PIL import Image, ImageDraw, ImageFont

from client.fonts import find_font

Point = tuple[float, float]

# Han ideographs (and their extensions, compatibility forms), CJK punctuation, kana,
# Hangul, fullwidth forms: what a Latin font has no glyph for in an OCR result
CJK_RANGES = (
    (0x2E80, 0x2FDF),  # radicals
    (0x3000, 0x30FF),  # CJK symbols and punctuation, hiragana, katakana
    (0x3100, 0x31FF),  # bopomofo, Hangul compatibility jamo, kanbun, strokes
    (0x3400, 0x4DBF),  # extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xAC00, 0xD7AF),  # Hangul syllables
    (0xF900, 0xFAFF),  # compatibility ideographs
    (0xFE30, 0xFE4F),  # compatibility forms
    (0xFF00, 0xFFEF),  # halfwidth and fullwidth forms
    (0x20000, 0x3134F),  # extensions B-H
)
# a noncharacter: no font maps it, so it renders as the font's "missing glyph"
_NO_GLYPH = "\U0010ffff"
_PROBE_SIZE = 24


def load_font(size: int, path: str | None = None):
    """TrueType font of ``size`` px from ``path`` (or ``find_font("any")``); else PIL's default."""
    path = path or find_font("any")
    if path:
        try:
            return ImageFont.truetype(path, max(1, int(size)))
        except OSError:
            pass
    return ImageFont.load_default()


def is_cjk(ch: str) -> bool:
    """Whether the character ``ch`` is Chinese, Japanese or Korean script (or their punctuation)."""
    code = ord(ch)
    return any(low <= code <= high for low, high in CJK_RANGES)


def missing_glyphs(texts: Iterable[str], font_path: str | None = None, limit: int = 8) -> str:
    """The CJK characters of ``texts`` (distinct, in order, at most ``limit``) that the
    font :func:`draw_ocr` would use (``font_path``, else the one found) has no glyph
    for: they are drawn as boxes. "" when every one is drawn, or there are none.

    A character counts as missing when the font renders it exactly as it renders a
    character no font has (its "missing glyph" box)."""
    chars = list(dict.fromkeys(ch for text in texts for ch in text if is_cjk(ch) and not ch.isspace()))
    if not chars:
        return ""
    font = load_font(_PROBE_SIZE, font_path)
    box = _rendering(font, _NO_GLYPH)
    missing = []
    for ch in chars:
        drawn = _rendering(font, ch)
        if drawn is None or drawn == box:
            missing.append(ch)
            if len(missing) == limit:
                break
    return "".join(missing)


def _rendering(font: Any, text: str) -> tuple[tuple[int, int], bytes] | None:
    """The size and pixels of ``text`` in ``font``; None when the font cannot render it at all."""
    try:
        mask = font.getmask(text)
    except (UnicodeError, ValueError, OSError):
        return None
    width, height = mask.size
    return (width, height), bytes(mask)


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
