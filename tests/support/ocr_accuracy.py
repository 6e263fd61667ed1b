"""OCR accuracy measures: against ground truth, and against a reference engine.

**Char accuracy** (against the text a page was rendered with):
``1 - edit distance / ground-truth characters``, summed over a page set.
Texts are compared after NFKC normalisation with all whitespace removed:
PP-OCR drops or adds many word spaces depending on padding, which is a
separate question from reading characters (line parity below keeps spaces).
OCR lines are matched to ground-truth lines **by position**: each OCR line
goes to the ground-truth line whose box its own box overlaps most, if that
overlap covers at least :data:`MIN_OVERLAP` of the OCR box; the pieces a
ground-truth line receives are read left to right and joined. A ground-truth
line that receives nothing counts all its characters as errors; an OCR line
that lies on no ground-truth line (a false detection) counts all its
characters as errors too. So accuracy can, in theory, drop below zero.

**Line parity** (against a reference engine's output, e.g. PaddleOCR): each
reference line is paired with the unpaired line of ours whose box has the
highest IoU with it (at least :data:`MIN_IOU`); parity is the share of
reference lines whose paired text is identical, spaces included (and,
separately, identical once whitespace is removed). **Box shift** of a pair
is the largest distance between corresponding corners; reported as the
mean, a quantile and the maximum over pairs (a line the other engine split
in two still pairs with its larger piece when their IoU allows, so the
maximum also catches splits, not only drift).

Lines are ``{"text", "box"}`` mappings (our ops' output) or objects with
``text`` and ``box`` attributes (``ocr_reference.Line``, ``synth.SynthLine``);
a box is four ``[x, y]`` corners.
"""

from __future__ import annotations

import math
import random
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "MIN_IOU",
    "MIN_OVERLAP",
    "PageScore",
    "ParityScore",
    "accuracy_delta_interval",
    "assign_lines",
    "char_accuracy",
    "edit_distance",
    "normalize",
    "parity",
    "score_page",
]

MIN_OVERLAP = 0.3
MIN_IOU = 0.5

Rect = tuple[float, float, float, float]  # x0, y0, x1, y1


def normalize(text: str) -> str:
    """NFKC (full-width ASCII and punctuation -> their half-width forms) without any whitespace."""
    return "".join(unicodedata.normalize("NFKC", text).split())


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance (insertions, deletions, substitutions each cost 1)."""
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def _text_box(line: Any) -> tuple[str, list[list[float]]]:
    if isinstance(line, Mapping):
        return str(line["text"]), [[float(x), float(y)] for x, y in line["box"]]
    return str(line.text), [[float(x), float(y)] for x, y in line.box]


def _rect(box: Sequence[Sequence[float]]) -> Rect:
    xs = [p[0] for p in box]
    ys = [p[1] for p in box]
    return min(xs), min(ys), max(xs), max(ys)


def _area(r: Rect) -> float:
    return max(0.0, r[2] - r[0]) * max(0.0, r[3] - r[1])


def _intersection(a: Rect, b: Rect) -> float:
    return _area((max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])))


@dataclass
class PageScore:
    chars: int  # ground-truth characters (normalised)
    errors: int  # edit operations, false detections included
    truth_lines: int
    missed_lines: int  # ground-truth lines no OCR line landed on
    extra_lines: int  # OCR lines on no ground-truth line


def assign_lines(truth: Sequence[Any], ocr: Sequence[Any], *, min_overlap: float = MIN_OVERLAP) -> list[int | None]:
    """For each OCR line, the index of the ground-truth line its box overlaps most,
    or None when that overlap covers less than ``min_overlap`` of the OCR box."""
    truth_rects = [_rect(_text_box(t)[1]) for t in truth]
    out: list[int | None] = []
    for line in ocr:
        rect = _rect(_text_box(line)[1])
        overlaps = [_intersection(rect, t) for t in truth_rects]
        best = max(range(len(overlaps)), key=overlaps.__getitem__, default=None)
        out.append(None if best is None or overlaps[best] < min_overlap * max(_area(rect), 1e-9) else best)
    return out


def score_page(truth: Sequence[Any], ocr: Sequence[Any], *, min_overlap: float = MIN_OVERLAP) -> PageScore:
    """One page's errors against its ground truth (matching rules in the module docstring)."""
    truths = [_text_box(t) for t in truth]
    pieces: list[list[tuple[float, str]]] = [[] for _ in truths]
    errors = extra = 0
    for line, best in zip(ocr, assign_lines(truth, ocr, min_overlap=min_overlap)):
        text, box = _text_box(line)
        if best is None:
            errors += len(normalize(text))
            extra += 1
            continue
        pieces[best].append((_rect(box)[0], text))
    chars = missed = 0
    for (gt, _), got in zip(truths, pieces):
        expected = normalize(gt)
        chars += len(expected)
        missed += not got
        errors += edit_distance(expected, normalize("".join(t for _, t in sorted(got))))
    return PageScore(chars, errors, len(truths), missed, extra)


def char_accuracy(scores: Sequence[PageScore]) -> float:
    """``1 - errors / characters`` over pages (1.0 for no characters and no errors)."""
    chars = sum(s.chars for s in scores)
    errors = sum(s.errors for s in scores)
    if chars == 0:
        return 1.0 if errors == 0 else -math.inf
    return 1.0 - errors / chars


def accuracy_delta_interval(
    base: Sequence[PageScore], other: Sequence[PageScore], *, rounds: int = 2000, seed: int = 0, level: float = 0.95
) -> tuple[float, float, float]:
    """``char_accuracy(other) - char_accuracy(base)`` on the same pages, with a
    paired bootstrap interval over pages: ``(delta, low, high)``."""
    if len(base) != len(other):
        raise ValueError(f"{len(base)} pages against {len(other)}: score the same pages")
    delta = char_accuracy(other) - char_accuracy(base)
    if not base:
        return delta, delta, delta
    rng = random.Random(seed)
    n = len(base)
    samples = []
    for _ in range(rounds):
        picks = [rng.randrange(n) for _ in range(n)]
        chars = sum(base[i].chars for i in picks) or 1
        samples.append((sum(base[i].errors for i in picks) - sum(other[i].errors for i in picks)) / chars)
    samples.sort()
    tail = (1.0 - level) / 2
    return delta, samples[int(tail * (rounds - 1))], samples[int((1 - tail) * (rounds - 1))]


@dataclass
class ParityScore:
    reference_lines: int = 0
    identical: int = 0  # same text, spaces included
    identical_without_spaces: int = 0
    extra_lines: int = 0  # our lines paired with no reference line
    shifts: list[float] = field(default_factory=list)  # per pair, the largest corner distance

    @property
    def paired(self) -> int:
        """Reference lines with a line of ours on the same spot."""
        return len(self.shifts)

    @property
    def rate(self) -> float:
        return self.identical / self.reference_lines if self.reference_lines else 1.0

    @property
    def rate_without_spaces(self) -> float:
        return self.identical_without_spaces / self.reference_lines if self.reference_lines else 1.0

    @property
    def shift_mean(self) -> float:
        return sum(self.shifts) / len(self.shifts) if self.shifts else 0.0

    @property
    def shift_max(self) -> float:
        return max(self.shifts, default=0.0)

    def shift_quantile(self, q: float) -> float:
        """The ``q`` quantile of the shifts (nearest rank)."""
        if not self.shifts:
            return 0.0
        ordered = sorted(self.shifts)
        return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]

    def add(self, other: ParityScore) -> None:
        self.reference_lines += other.reference_lines
        self.identical += other.identical
        self.identical_without_spaces += other.identical_without_spaces
        self.extra_lines += other.extra_lines
        self.shifts += other.shifts


def _iou(a: Rect, b: Rect) -> float:
    inter = _intersection(a, b)
    union = _area(a) + _area(b) - inter
    return inter / union if union > 0 else 0.0


def _corner_shift(a: Sequence[Sequence[float]], b: Sequence[Sequence[float]]) -> float:
    return max(math.dist(p, q) for p, q in zip(a, b))


def parity(reference: Sequence[Any], ours: Sequence[Any], *, min_iou: float = MIN_IOU) -> ParityScore:
    """One page's line parity and box shift against a reference output."""
    refs = [_text_box(r) for r in reference]
    mine = [_text_box(o) for o in ours]
    rects = [_rect(box) for _, box in mine]
    used: set[int] = set()
    score = ParityScore(reference_lines=len(refs))
    for text, box in refs:
        rect = _rect(box)
        ious = [(_iou(rect, r), j) for j, r in enumerate(rects) if j not in used]
        iou, j = max(ious, default=(0.0, -1))
        if iou < min_iou:
            continue
        used.add(j)
        score.shifts.append(_corner_shift(box, mine[j][1]))
        score.identical += mine[j][0] == text
        score.identical_without_spaces += normalize(mine[j][0]) == normalize(text)
    score.extra_lines = len(mine) - len(used)
    return score
