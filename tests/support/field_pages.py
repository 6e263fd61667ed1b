"""Rendered pages of document fields: every line's text, box and field type known.

A page is a receipt- or form-like stack of 3-8 lines, each drawn from the
field-line generator of ``recipes/ernie_fields/data.py`` under a random
label (date, money, phone, id, address, other). Fonts, sizes, alignment,
colours and the mild print-and-scan noise come from the evaluation page set's
vocabulary (``page_set``): DejaVu faces for Latin-only lines, WenQuanYi Zen
Hei for lines with Chinese (and, on some pages, for every line, as a Chinese
receipt prints Latin text in its own font).

Deterministic from a seed and a page index, the fonts and
:data:`FIELD_PAGES_VERSION`. :func:`handwritten_pages` renders the same way the lines of
``tests/data/fields/*.tsv``: phrasing of real documents written by hand, not by the
generator, and never trained on (see :data:`HANDWRITTEN`, :data:`BLIND`, :data:`BLIND2`).
Two seeds are in use and never mix: :data:`TRAIN_SEED` pages are read by our OCR to make the classifier's
``ocr_lines.tsv`` training lines; :data:`EVAL_SEED` pages measure it.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from recipes.ernie_fields.data import GENERATORS, LABELS, read_labelled
from tests.support.page_noise import Noise, apply_noise
from tests.support.page_set import CJK_FACES, LATIN_FACES, FontFace, _colours, _font_file, _noise
from tests.support.synth import render_document, text_width

__all__ = [
    "BLIND",
    "BLIND2",
    "HANDWRITTEN",
    "EVAL_SEED",
    "FIELD_PAGES_VERSION",
    "TRAIN_SEED",
    "FieldLine",
    "FieldPage",
    "field_page",
    "field_pages",
    "fixture_pages",
    "handwritten_pages",
    "has_cjk",
    "read_lines",
]

#: bump when a change alters the rendered pages
FIELD_PAGES_VERSION = 2
TRAIN_SEED = 5003
EVAL_SEED = 6007
SIZES = (20, 22, 24, 26, 28, 30, 32, 36, 40)
MAX_WIDTH = 1100  # px of text: PP-OCR det's 960-px limit shrinks no page by much more than a quarter
ALIGNS = ("left", "left", "left", "center", "right")
_DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "fields")
#: document lines written by hand while the generator was widened (they guided it); never trained on
HANDWRITTEN = os.path.join(_DATA, "handwritten.tsv")
#: document lines written blind, by an author who saw neither the generator nor HANDWRITTEN; never trained on.
#: Measured once blind (91.7% of OCR'd lines right); its errors then guided a second widening of the generator.
BLIND = os.path.join(_DATA, "blind.tsv")
#: a second blind set, by another author, scored only on the final model: the held-out figure
BLIND2 = os.path.join(_DATA, "blind2.tsv")


@dataclass(frozen=True)
class FieldLine:
    text: str
    label: str
    box: list[list[int]]  # [[x, y] x4] clockwise from top-left, page coordinates


@dataclass
class FieldPage:
    name: str
    image: np.ndarray  # BGR uint8, degraded
    lines: list[FieldLine] = field(default_factory=list)
    noise: Noise = field(default_factory=Noise)


def has_cjk(text: str) -> bool:
    return any("\u3400" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff" for ch in text)


@dataclass(frozen=True)
class _Style:
    cjk: FontFace
    latin: FontFace
    size: int

    def face(self, text: str) -> FontFace:
        return self.cjk if has_cjk(text) else self.latin

    def width(self, text: str) -> int:
        face = self.face(text)
        return text_width(text, font_size=self.size, font_path=_font_file(face), font_index=face.index)


def _style(rng: random.Random) -> _Style:
    cjk = CJK_FACES[rng.randrange(len(CJK_FACES))]
    latin = LATIN_FACES[rng.randrange(len(LATIN_FACES))] if rng.random() < 0.75 else cjk
    return _Style(cjk, latin, max(rng.choice(SIZES), latin.min_size))


def _generated(rng: random.Random, label: str, style: _Style) -> str:
    """A generated line of ``label`` that fits the page (long paragraphs are drawn again)."""
    for _ in range(50):
        text = GENERATORS[label](rng)
        if style.width(text) <= MAX_WIDTH:
            return text
    raise RuntimeError(f"no {label} line fits {MAX_WIDTH} px at {style.size} px")


def _render(rng: random.Random, style: _Style, lines: Sequence[tuple[str, str]], name: str) -> FieldPage:
    """A page of (label, text) lines in ``style``, with noise, colours and alignment drawn from ``rng``."""
    level = rng.choices((0, 1, 2), weights=(3, 4, 3))[0]
    noise = _noise(rng, level, style.size)
    fg, bg = _colours(rng)
    align = rng.choice(ALIGNS)
    indent = [rng.choice((0, 0, 0, style.size)) for _ in lines] if align == "left" else None
    doc = render_document(
        [text for _, text in lines],
        font_size=style.size,
        margin=rng.randint(16, 50),
        line_gap=round(rng.uniform(0.5, 1.2), 2),
        indent=indent,
        fg=fg,
        bg=bg,
        fonts=[(_font_file(style.face(text)), style.face(text).index) for _, text in lines],
        align=align,
    )
    out = [FieldLine(ln.text, label, ln.box) for ln, (label, _) in zip(doc.lines, lines)]
    return FieldPage(
        f"{name}-{style.size}px-n{level}", apply_noise(doc.image, noise, rng.randrange(1 << 30)), out, noise
    )


def field_page(seed: int, index: int) -> FieldPage:
    """Page ``index`` of the generated set ``seed`` (raises FileNotFoundError for a missing font)."""
    rng = random.Random(seed * 100_003 + index)
    style = _style(rng)
    labels = [rng.choice(LABELS) for _ in range(rng.randint(3, 8))]
    return _render(rng, style, [(label, _generated(rng, label, style)) for label in labels], f"{seed}-{index:04d}")


def read_lines(path: str = HANDWRITTEN) -> list[tuple[str, str]]:
    """(label, text) of each line of a ``label<TAB>text`` file; ``#`` lines are comments."""
    return [(label, text) for label, text in read_labelled(path)]


def handwritten_pages(path: str = HANDWRITTEN, per_page: int = 6, seed: int = EVAL_SEED) -> list[FieldPage]:
    """The hand-written lines of ``path`` rendered ``per_page`` to a page, in file order."""
    entries = read_lines(path)
    pages = []
    for k in range(0, len(entries), per_page):
        rng = random.Random(seed * 7919 + k)
        style = _style(rng)
        chunk = entries[k : k + per_page]
        widest = max(style.width(text) for _, text in chunk)
        if widest > MAX_WIDTH:  # a hand-written line is never cut: the page's text shrinks instead
            style = _Style(style.cjk, style.latin, max(14, style.size * MAX_WIDTH // widest))
        pages.append(_render(rng, style, chunk, f"hand-{k // per_page:03d}"))
    return pages


def field_pages(seed: int, count: int, start: int = 0) -> Iterator[FieldPage]:
    """Pages ``start .. start + count - 1`` of the set ``seed``, rendered one at a time."""
    for index in range(start, start + count):
        yield field_page(seed, index)


def fixture_pages(set_name: str, data_dir: str = _DATA) -> list[FieldPage]:
    """The committed pages of one set of the tests' fixed evaluation set (``generated``,
    ``handwritten``, ``blind`` or ``blind2``), as ``make_field_lines fixtures`` wrote them."""
    import json

    import cv2

    with open(os.path.join(data_dir, "truth.json"), encoding="utf-8") as f:
        entries = json.load(f)["sets"][set_name]
    pages = []
    for entry in entries:
        image = cv2.imread(os.path.join(data_dir, entry["image"]), cv2.IMREAD_COLOR)
        if image is None:
            raise FileNotFoundError(os.path.join(data_dir, entry["image"]))
        lines = [FieldLine(ln["text"], ln["label"], ln["box"]) for ln in entry["lines"]]
        pages.append(FieldPage(entry["name"], image, lines))
    return pages
