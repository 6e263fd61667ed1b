"""The evaluation page set: rendered pages with known text, for accuracy benches.

A page set is a seed and a count. :func:`page_specs` draws every page's
recipe without rendering anything (cheap: the unit test checks the variety
of a full set); :func:`render_page` renders one recipe with
``synth.render_document`` and degrades it with ``page_noise``; nothing is
committed, everything is rendered at run time and is the same for the same
seed, count, fonts and :data:`PAGE_SET_VERSION`.

Variety: English, Chinese and mixed pages (2 : 2 : 1), every installed
DejaVu face (Sans, Bold, Oblique, Condensed, ExtraLight, Serif, Serif Italic,
Serif Condensed, Mono) and the three WenQuanYi Zen Hei faces, text 18-48 px,
1-12 lines of 1-9 words or 2-18 characters, left / indented, centred,
right-aligned and two-column layouts, dark ink (sometimes blue or brown) on
tinted paper, and four levels of mild noise (see :func:`_noise`).

Ground truth: each line's text and ink box. Lines are cut to fit the page
width (1100 px of text, 460 px per column), so pages are at most ~1,300 px
wide and PP-OCR det's 960-px limit shrinks none by more than about a quarter.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from client.fonts import find_font_file
from tests.support.page_noise import Noise, apply_noise
from tests.support.page_text import line_text
from tests.support.synth import SynthLine, render_document, text_width

__all__ = [
    "CALIBRATION_SEED",
    "EVAL_COUNT",
    "EVAL_SEED",
    "FACES",
    "PAGE_SET_VERSION",
    "EvalPage",
    "FontFace",
    "PageSpec",
    "missing_faces",
    "page_set",
    "page_specs",
    "render_page",
    "variety",
]

#: bump when a change alters the rendered pages: bench caches are keyed by it
PAGE_SET_VERSION = 1
EVAL_SEED = 2026
EVAL_COUNT = 200
#: int8 calibration pages come from another seed than the evaluation pages
CALIBRATION_SEED = 7919

SCRIPT_CYCLE = ("en", "zh", "en", "zh", "mixed")
SIZES = (18, 20, 22, 24, 26, 28, 30, 32, 36, 40, 48)
LAYOUTS = ("block", "center", "right", "columns")
LAYOUT_WEIGHTS = (5, 2, 1, 2)
PAGE_WIDTH = 1100
COLUMN_WIDTH = 460


@dataclass(frozen=True)
class FontFace:
    name: str
    file: str  # a file name, found with client.fonts.find_font_file
    index: int = 0  # face index inside a .ttc collection
    cjk: bool = False
    min_size: int = 0  # thin faces only at sizes that stay readable under noise


FACES = (
    FontFace("DejaVu Sans", "DejaVuSans.ttf"),
    FontFace("DejaVu Sans Bold", "DejaVuSans-Bold.ttf"),
    FontFace("DejaVu Sans Oblique", "DejaVuSans-Oblique.ttf"),
    FontFace("DejaVu Sans Condensed", "DejaVuSansCondensed.ttf"),
    FontFace("DejaVu Sans ExtraLight", "DejaVuSans-ExtraLight.ttf", min_size=26),
    FontFace("DejaVu Serif", "DejaVuSerif.ttf"),
    FontFace("DejaVu Serif Italic", "DejaVuSerif-Italic.ttf"),
    FontFace("DejaVu Serif Condensed", "DejaVuSerifCondensed.ttf"),
    FontFace("DejaVu Sans Mono", "DejaVuSansMono.ttf"),
    FontFace("WenQuanYi Zen Hei", "wqy-zenhei.ttc", 0, cjk=True),
    FontFace("WenQuanYi Zen Hei Mono", "wqy-zenhei.ttc", 1, cjk=True),
    FontFace("WenQuanYi Zen Hei Sharp", "wqy-zenhei.ttc", 2, cjk=True),
)
LATIN_FACES = tuple(f for f in FACES if not f.cjk)
CJK_FACES = tuple(f for f in FACES if f.cjk)


@dataclass(frozen=True)
class PageSpec:
    """Everything that decides one page, short of rendering it."""

    index: int
    seed: int  # the page's text and noise come from it
    script: str  # "en", "zh" or "mixed"
    face: FontFace  # the page's font (mixed pages: for lines with Chinese)
    latin_face: FontFace  # mixed pages: the font of their English-only lines
    font_size: int
    n_lines: int
    layout: str
    line_gap: float  # em
    margin: int
    fg: tuple[int, int, int]  # RGB, as render_document takes them
    bg: tuple[int, int, int]
    noise: Noise
    noise_level: int

    @property
    def name(self) -> str:
        short = self.face.name.replace("WenQuanYi Zen Hei", "WQY").replace("DejaVu ", "").replace(" ", "")
        return f"{self.index:03d}-{self.script}-{self.layout}-{short}-{self.font_size}px-n{self.noise_level}"


@dataclass
class EvalPage:
    spec: PageSpec
    image: np.ndarray  # BGR uint8, degraded
    lines: list[SynthLine] = field(default_factory=list)  # ground truth: text and ink box

    @property
    def name(self) -> str:
        return self.spec.name


def _noise(rng: random.Random, level: int, font_size: int) -> Noise:
    """Level 0 clean, 1 light, 2 moderate, 3 moderate + stronger JPEG; small text gets less blur."""
    if level == 0:
        return Noise()
    max_blur = 0.6 if font_size <= 22 else 1.0
    if level == 1:
        return Noise(
            texture=rng.uniform(0, 6),
            light=rng.uniform(0, 12),
            blur=rng.choice((0.0, rng.uniform(0.3, 0.6))),
            grain=rng.uniform(0, 4),
            jpeg=rng.choice((None, rng.randint(70, 95))),
        )
    return Noise(
        texture=rng.uniform(4, 10),
        light=rng.uniform(5, 20),
        contrast=rng.uniform(0.8, 1.0),
        blur=rng.uniform(0.4, max_blur),
        grain=rng.uniform(3, 7),
        jpeg=rng.randint(55, 80) if level == 2 else rng.randint(35, 55),
    )


def _colours(rng: random.Random) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """(ink, paper) in RGB: black-ish, blue or brown ink on white, cream or grey paper."""
    ink = rng.choice(((20, 20, 20), (10, 40, 110), (90, 50, 20)))
    fg = tuple(max(0, min(255, c + rng.randint(-20, 30))) for c in ink)
    paper = rng.choice(((250, 250, 250), (248, 240, 220), (235, 235, 235), (240, 248, 240)))
    bg = tuple(max(0, min(255, c + rng.randint(-15, 5))) for c in paper)
    return fg, bg


def page_specs(seed: int = EVAL_SEED, count: int = EVAL_COUNT) -> list[PageSpec]:
    """The recipes of a page set (no rendering). Fonts rotate per script, so
    every face appears in a set of a few dozen pages."""
    specs = []
    seen: Counter[str] = Counter()
    for i in range(count):
        rng = random.Random(seed * 100_003 + i)
        script = SCRIPT_CYCLE[i % len(SCRIPT_CYCLE)]
        k = seen[script] + seed
        seen[script] += 1
        face = (FACES if script == "en" else CJK_FACES)[k % (len(FACES) if script == "en" else len(CJK_FACES))]
        latin = LATIN_FACES[(k // len(CJK_FACES)) % len(LATIN_FACES)]
        size = max(rng.choice(SIZES), face.min_size)
        n_lines = rng.randint(1, 12)
        layout = rng.choices(LAYOUTS, weights=LAYOUT_WEIGHTS)[0]
        if layout == "columns" and n_lines < 4:
            layout = "block"
        level = rng.choices((0, 1, 2, 3), weights=(2, 4, 3, 1))[0]
        fg, bg = _colours(rng)
        specs.append(
            PageSpec(
                index=i,
                seed=rng.randrange(1 << 30),
                script=script,
                face=face,
                latin_face=latin,
                font_size=size,
                n_lines=n_lines,
                layout=layout,
                line_gap=round(rng.uniform(0.5, 1.3), 2),
                margin=rng.randint(16, 60),
                fg=fg,
                bg=bg,
                noise=_noise(rng, level, size),
                noise_level=level,
            )
        )
    return specs


def _font_file(face: FontFace) -> str:
    path = find_font_file(face.file)
    if path is None:
        hint = "fonts-wqy-zenhei" if face.cjk else "fonts-dejavu-core fonts-dejavu-extra"
        raise FileNotFoundError(f"font {face.name} ({face.file}) is not installed (apt-get install {hint})")
    return path


def missing_faces() -> list[FontFace]:
    """The faces of :data:`FACES` that are not installed here."""
    return [f for f in FACES if find_font_file(f.file) is None]


def _fit(text: str, script: str, max_width: int, size: int, path: str, index: int) -> str:
    """``text`` shortened (by words for English, else by characters) until it fits ``max_width``."""
    while text_width(text, font_size=size, font_path=path, font_index=index) > max_width:
        shorter = text.rsplit(" ", 1)[0] if script == "en" and " " in text else text[:-1].rstrip(" ")
        if not shorter or shorter == text:
            break
        text = shorter
    return text


def _lines(spec: PageSpec, rng: random.Random, max_width: int) -> tuple[list[str], list[tuple[str, int]]]:
    """The page's texts and each line's (font file, face index)."""
    texts, fonts = [], []
    for i in range(spec.n_lines):
        script = spec.script
        face = spec.face
        if script == "mixed":
            script = ("mixed", "en", "zh")[i % 3]
            face = spec.latin_face if script == "en" else spec.face
        length = {"en": rng.randint(1, 9), "zh": rng.randint(2, 18), "mixed": rng.randint(2, 5)}[script]
        path = _font_file(face)
        text = _fit(line_text(rng, script, length), script, max_width, spec.font_size, path, face.index)
        texts.append(text)
        fonts.append((path, face.index))
    return texts, fonts


def _render_block(spec: PageSpec, texts: Sequence[str], fonts: Sequence[tuple[str, int]], rng: random.Random):
    align = {"center": "center", "right": "right"}.get(spec.layout, "left")
    indent = None
    if spec.layout == "block":
        indent = [rng.choice((0, 0, 0, spec.font_size, 2 * spec.font_size)) for _ in texts]
    return render_document(
        texts,
        font_size=spec.font_size,
        margin=spec.margin,
        line_gap=spec.line_gap,
        indent=indent,
        fg=spec.fg,
        bg=spec.bg,
        fonts=fonts,
        align=align,
        name=spec.name,
    )


def _render_columns(spec: PageSpec, texts: Sequence[str], fonts: Sequence[tuple[str, int]]):
    """Two left-aligned columns side by side, a 3-em gutter between them."""
    half = (len(texts) + 1) // 2
    parts = [
        render_document(
            list(texts[a:b]),
            font_size=spec.font_size,
            margin=spec.margin,
            line_gap=spec.line_gap,
            fg=spec.fg,
            bg=spec.bg,
            fonts=list(fonts[a:b]),
        )
        for a, b in ((0, half), (half, len(texts)))
    ]
    left, right = parts
    offset = left.image.shape[1] + 3 * spec.font_size - 2 * spec.margin
    height = max(left.image.shape[0], right.image.shape[0])
    page = np.empty((height, offset + right.image.shape[1], 3), np.uint8)
    page[:] = spec.bg[::-1]  # the rendered columns are BGR
    page[: left.image.shape[0], : left.image.shape[1]] = left.image
    page[: right.image.shape[0], offset:] = right.image
    lines = list(left.lines) + [SynthLine(ln.text, [[x + offset, y] for x, y in ln.box]) for ln in right.lines]
    return page, lines


def render_page(spec: PageSpec) -> EvalPage:
    """Render one page of a set and apply its noise (raises FileNotFoundError for a missing font)."""
    rng = random.Random(spec.seed)
    max_width = COLUMN_WIDTH if spec.layout == "columns" else PAGE_WIDTH
    texts, fonts = _lines(spec, rng, max_width)
    if spec.layout == "columns":
        image, lines = _render_columns(spec, texts, fonts)
    else:
        doc = _render_block(spec, texts, fonts, rng)
        image, lines = doc.image, doc.lines
    return EvalPage(spec, apply_noise(image, spec.noise, spec.seed), lines)


def page_set(seed: int = EVAL_SEED, count: int = EVAL_COUNT) -> Iterator[EvalPage]:
    """The pages of a set, rendered one at a time."""
    for spec in page_specs(seed, count):
        yield render_page(spec)


def variety(specs: Sequence[PageSpec]) -> dict[str, Counter]:
    """How many pages per script, face, size, layout and noise level."""
    return {
        "script": Counter(s.script for s in specs),
        "face": Counter(s.face.name for s in specs) + Counter(s.latin_face.name for s in specs if s.script == "mixed"),
        "size": Counter(s.font_size for s in specs),
        "layout": Counter(s.layout for s in specs),
        "noise": Counter(s.noise_level for s in specs),
    }
