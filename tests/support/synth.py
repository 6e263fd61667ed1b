"""Synthetic OCR images rendered with PIL, for tests and benchmarks.

Everything is deterministic from a seed and the font files: the same seed
gives the same text, layout and pixels. Fonts come from ``client.fonts.find_font``:
English uses DejaVu Sans (the system's, else matplotlib's bundled copy, so it
renders on a machine with no font installed); Chinese needs WenQuanYi Zen Hei
(``apt-get install fonts-wqy-zenhei``), and random pages fall back to English
without it: check :func:`has_chinese_font`. The tests' Chinese pages are not
rendered at run time: they are committed under tests/data/ocr/ (see
tests/support/ocr_data.py and tests/support/make_ocr_data.py).

Main entry points:
  :func:`render_line`      one text line -> BGR crop (a rec-only request)
  :func:`render_document`  several lines -> BGR page + the lines' ground truth
  :func:`sample_documents` a fixed, varied set of pages for reference tests
  :func:`short_line_documents` small pages whose rec crops all pad alike
  :func:`encode_image`     ndarray -> PNG/JPEG bytes (what a client sends)

The evaluation page set (many fonts, layouts and mild noise, for accuracy
benches) builds on :func:`render_document`: see tests/support/page_set.py.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

import numpy as np

from client.fonts import find_font, has_chinese_font

__all__ = [
    "SynthDoc",
    "SynthLine",
    "encode_image",
    "find_font",
    "has_chinese_font",
    "random_document",
    "random_text",
    "render_document",
    "render_line",
    "sample_documents",
    "short_line_documents",
    "text_width",
]

EN_WORDS = [
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "lazy",
    "dog",
    "invoice",
    "total",
    "amount",
    "paid",
    "date",
    "order",
    "number",
    "customer",
    "service",
    "batch",
    "server",
    "model",
    "pipeline",
    "request",
    "image",
    "text",
    "line",
    "hello",
    "world",
    "open",
    "source",
    "python",
    "paddle",
    "serving",
    "latency",
    "throughput",
    "price",
    "quantity",
    "street",
    "city",
    "north",
    "station",
    "meeting",
    "report",
    "summary",
    "account",
    "balance",
    "delivery",
    "address",
    "phone",
    "email",
    "office",
    "market",
    "river",
    "garden",
    "window",
    "coffee",
    "table",
    "yellow",
    "purple",
    "orange",
    "simple",
    "quiet",
]
EN_TOKENS = ("2024", "No.17", "$12.50", "3.14", "ID:4821", "v2.10", "42%", "08:30", "A-113", "(ok)")
ZH_WORDS = [
    "今天",
    "天气",
    "很好",
    "我们",
    "一起",
    "公园",
    "散步",
    "中华",
    "人民",
    "共和国",
    "欢迎",
    "光临",
    "北京",
    "上海",
    "深圳",
    "价格",
    "数量",
    "合计",
    "发票",
    "日期",
    "服务",
    "模型",
    "图片",
    "文字",
    "识别",
    "检测",
    "系统",
    "客户",
    "地址",
    "电话",
    "学校",
    "医院",
    "银行",
    "超市",
    "火车站",
    "办公室",
    "会议",
    "报告",
    "时间",
    "金额",
    "编号",
    "名称",
    "说明",
    "产品",
]


@lru_cache(maxsize=256)
def _load_font(path: str | None, size: int, index: int = 0):
    from PIL import ImageFont

    if path is None:
        return ImageFont.load_default()
    return ImageFont.truetype(path, size, index=index)


def _is_cjk(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


def _font_for(text: str, font_path: str | None) -> str | None:
    if font_path is not None:
        return font_path
    if _is_cjk(text):
        path = find_font("zh")
        if path is None:
            raise RuntimeError("no Chinese font installed (apt-get install fonts-wqy-zenhei)")
        return path
    return find_font("en")


def render_line(
    text: str,
    *,
    font_size: int = 32,
    font_path: str | None = None,
    margin: tuple[int, int] = (12, 8),
    fg: tuple[int, int, int] = (20, 20, 20),
    bg: tuple[int, int, int] = (255, 255, 255),
) -> np.ndarray:
    """One text line on a plain background, tightly cropped plus ``margin`` (x, y). BGR uint8."""
    from PIL import Image, ImageDraw

    font = _load_font(_font_for(text, font_path), font_size)
    left, top, right, bottom = font.getbbox(text)
    w = right - left + 2 * margin[0]
    h = bottom - top + 2 * margin[1]
    img = Image.new("RGB", (max(1, w), max(1, h)), bg)
    ImageDraw.Draw(img).text((margin[0] - left, margin[1] - top), text, font=font, fill=fg)
    return np.ascontiguousarray(np.asarray(img)[:, :, ::-1])


@dataclass
class SynthLine:
    text: str
    box: list[list[int]]  # [[x, y] x4] clockwise from top-left, page coordinates


@dataclass
class SynthDoc:
    name: str
    image: np.ndarray  # BGR uint8
    lines: list[SynthLine] = field(default_factory=list)


def _draw_text(draw, xy, text, font, fill, word_gap: float | None) -> tuple[int, int, int, int]:
    """Draw ``text`` with its ink top-left at ``xy``; returns the ink box (l, t, r, b).

    ``word_gap`` (in em) replaces the font's own space width between words.
    """
    x0, y0 = xy
    if word_gap is None or " " not in text:
        left, top, right, bottom = font.getbbox(text)
        draw.text((x0 - left, y0 - top), text, font=font, fill=fill)
        return x0, y0, x0 + right - left, y0 + bottom - top
    words = text.split(" ")
    t_all = min(font.getbbox(w)[1] for w in words if w)
    b_all = max(font.getbbox(w)[3] for w in words if w)
    gap = int(round(word_gap * font.size))
    x = x0
    right = x0
    for w in words:
        if not w:
            x += gap
            continue
        w_left, _t, w_right, _b = font.getbbox(w)
        draw.text((x - w_left, y0 - t_all), w, font=font, fill=fill)
        right = x + w_right - w_left
        x = right + gap
    return x0, y0, right, y0 + b_all - t_all


def _text_size(font, text: str, word_gap: float | None) -> tuple[int, int]:
    if word_gap is None or " " not in text:
        left, top, right, bottom = font.getbbox(text)
        return right - left, bottom - top
    words = [w for w in text.split(" ")]
    widths = [font.getbbox(w)[2] - font.getbbox(w)[0] if w else 0 for w in words]
    gap = int(round(word_gap * font.size))
    t_all = min(font.getbbox(w)[1] for w in words if w)
    b_all = max(font.getbbox(w)[3] for w in words if w)
    return sum(widths) + gap * (len(words) - 1), b_all - t_all


def text_width(text: str, *, font_size: int, font_path: str | None = None, font_index: int = 0) -> int:
    """Ink width in px of ``text`` as :func:`render_document` draws it (the font's own spaces)."""
    return _text_size(_load_font(_font_for(text, font_path), font_size, font_index), text, None)[0]


def render_document(
    lines: Sequence[str],
    *,
    font_size: int = 28,
    width: int | None = None,
    margin: int = 30,
    line_gap: float = 0.9,
    indent: Sequence[int] | None = None,
    font_path: str | None = None,
    fg: tuple[int, int, int] = (25, 25, 25),
    bg: tuple[int, int, int] = (250, 250, 247),
    word_gap: float | None = None,
    name: str = "doc",
    fonts: Sequence[tuple[str, int]] | None = None,
    align: Literal["left", "center", "right"] = "left",
) -> SynthDoc:
    """Render ``lines`` top to bottom; returns the page and each line's ink box.

    ``word_gap`` (em) sets the space between words (None: the font's own space).
    ``fonts`` gives each line its own font file and face index (a .ttc holds
    several faces); it overrides ``font_path``. ``align`` places each line
    (after its indent) within the widest line's width.
    """
    from PIL import Image, ImageDraw

    if fonts is not None and len(fonts) != len(lines):
        raise ValueError(f"{len(fonts)} fonts for {len(lines)} lines")
    faces = list(fonts) if fonts is not None else [(_font_for(t, font_path), 0) for t in lines]
    loaded = [_load_font(path, font_size, index) for path, index in faces]
    sizes = [_text_size(f, t, word_gap) for f, t in zip(loaded, lines)]
    indent = list(indent) if indent is not None else [0] * len(lines)
    content_w = max((w + ind for (w, _h), ind in zip(sizes, indent)), default=0)
    page_w = max(width or 0, content_w + 2 * margin)
    step = int(round(font_size * (1.0 + line_gap)))
    page_h = 2 * margin + step * max(1, len(lines))
    img = Image.new("RGB", (page_w, page_h), bg)
    draw = ImageDraw.Draw(img)
    out: list[SynthLine] = []
    y = margin
    for text, font, ind, (w, _h) in zip(lines, loaded, indent, sizes):
        slack = content_w - w - ind
        x = margin + ind + {"left": 0, "center": slack // 2, "right": slack}[align]
        left, top, right, bottom = _draw_text(draw, (x, y), text, font, fg, word_gap)
        out.append(SynthLine(text, [[left, top], [right, top], [right, bottom], [left, bottom]]))
        y += step
    page = np.ascontiguousarray(np.asarray(img)[:, :, ::-1])
    return SynthDoc(name, page, out)


def random_text(rng: random.Random, script: str = "en", n_words: int = 4) -> str:
    """A line of ``n_words`` words; English words are space-separated."""
    if script == "zh":
        return "".join(rng.choice(ZH_WORDS) for _ in range(n_words))
    words = []
    for _ in range(n_words):
        words.append(rng.choice(EN_TOKENS) if rng.random() < 0.15 else rng.choice(EN_WORDS))
    if rng.random() < 0.3:
        words[0] = words[0].capitalize()
    return " ".join(words)


def random_document(
    seed: int,
    *,
    script: str = "en",
    n_lines: int = 4,
    font_size: int = 28,
    words: tuple[int, int] = (2, 6),
    width: int | None = None,
    word_gap: float | None = None,
    name: str | None = None,
) -> SynthDoc:
    """A page of ``n_lines`` random lines; ``script`` is "en", "zh" or "mixed"."""
    rng = random.Random(seed)
    if script != "en" and not has_chinese_font():
        script = "en"
    texts = []
    for i in range(n_lines):
        s = script if script != "mixed" else ("zh" if i % 2 else "en")
        texts.append(random_text(rng, s, rng.randint(*words)))
    indent = [rng.choice((0, 0, font_size, 2 * font_size)) for _ in texts]
    fg = tuple(rng.randint(0, 60) for _ in range(3))
    bg = tuple(rng.randint(225, 255) for _ in range(3))
    return render_document(
        texts,
        font_size=font_size,
        width=width,
        indent=indent,
        fg=fg,
        bg=bg,
        word_gap=word_gap,
        name=name or f"{script}-{seed}",
    )


def sample_documents(seed: int = 0, *, word_gap: float | None = None) -> list[SynthDoc]:
    """A fixed, varied set of 12 pages: English and Chinese, text 22-48 px high,
    1-8 lines, short and long lines, multi-word lines with spaces.

    Text smaller than ~22 px is left out on purpose: at 18-20 px DejaVu the
    PP-OCRv4 rec model reads word spaces on a knife's edge (PaddleOCR itself
    gives different text for ~10% of such lines depending only on how its
    batch of 6 crops is padded), which would measure noise, not correctness.
    """
    specs = [
        # (script, n_lines, font_size, words, width)
        ("en", 1, 32, (1, 1), None),  # a single word
        ("en", 1, 40, (6, 9), None),  # one long line
        ("en", 3, 24, (3, 6), None),
        ("en", 6, 22, (4, 8), 900),
        ("en", 8, 24, (2, 7), 800),
        ("en", 2, 48, (2, 4), None),
        ("zh", 1, 36, (3, 5), None),
        ("zh", 4, 28, (2, 6), None),
        ("zh", 6, 22, (4, 8), 800),
        ("mixed", 5, 26, (2, 5), None),
        ("mixed", 3, 34, (3, 6), 1200),
        ("en", 4, 30, (5, 10), 1400),  # wide page, long lines (wide rec buckets)
    ]
    docs = []
    for i, (script, n, size, words, width) in enumerate(specs):
        docs.append(
            random_document(
                seed * 1000 + i,
                script=script,
                n_lines=n,
                font_size=size,
                words=words,
                width=width,
                word_gap=word_gap,
                name=f"{i:02d}-{script}-{n}x{size}",
            )
        )
    return docs


def short_line_documents(seed: int = 0, count: int = 16) -> list[SynthDoc]:
    """``count`` small pages of 3-6 short lines (one English word, or one or two
    Chinese words), English, Chinese and mixed.

    Every line is narrower than 320/48 of its height, so under PaddleOCR's rec
    padding (ops/ocr_rec.py ``pad_policy: paddleocr``) every crop of every page
    pads to the same 320 px: crops of different requests can share one rec
    predictor call, which the sample pages' mostly unique widths rarely allow.
    """
    scripts = ("en", "zh", "mixed")
    docs = []
    for i in range(count):
        script = scripts[i % 3]
        n, size = 3 + i % 4, (26, 28, 30, 24)[i % 4]
        docs.append(
            random_document(
                seed * 1000 + 500 + i,
                script=script,
                n_lines=n,
                font_size=size,
                words=(1, 2) if script == "zh" else (1, 1),
                name=f"s{i:02d}-{script}-{n}x{size}",
            )
        )
    return docs


def encode_image(img: np.ndarray, fmt: str = ".png") -> bytes:
    """Encode a BGR ndarray as image file bytes (".png" or ".jpg")."""
    import cv2

    ok, buf = cv2.imencode(fmt, img)
    if not ok:
        raise ValueError(f"cannot encode image as {fmt}")
    return buf.tobytes()
