"""Field labels on what OCR really reads: field pages through a served pipeline.

:func:`read_pages` sends each page to an OCR pipeline (``ocr`` or
``ocr_ernie``) and pairs every OCR line with the ground-truth line its box
overlaps most (``ocr_accuracy.assign_lines``): the line inherits that line's
field type. A line split by detection gives several OCR lines, each scored;
an OCR line on no ground-truth line (a false detection) is counted apart.

:func:`score` reports label accuracy per field on three sets of lines:

  clean    the rendered text of every ground-truth line, classified by a text
           pipeline (``ernie``): what the model does on the text it was built for
  ocr      every paired OCR line, labelled by ``ocr_ernie``
  misread  the OCR lines whose text is not exactly the rendered line (a space
           dropped or added, a character confused, a split line's piece)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from recipes.ernie_fields.data import LABELS
from tests.support.field_pages import FieldPage
from tests.support.ocr_accuracy import assign_lines
from tests.support.synth import encode_image

__all__ = [
    "SETS",
    "FieldScore",
    "PageReading",
    "ReadLine",
    "classify_texts",
    "evaluate",
    "read_pages",
    "score",
    "table",
]

SETS = ("clean", "ocr", "misread")


@dataclass(frozen=True)
class ReadLine:
    truth: str  # the rendered text of the ground-truth line
    label: str  # its field type
    text: str  # one OCR line on it
    predicted: str | None  # the pipeline's label for the OCR line (None: the pipeline labels nothing)

    @property
    def misread(self) -> bool:
        return self.text != self.truth


@dataclass
class PageReading:
    page: FieldPage
    lines: list[ReadLine] = field(default_factory=list)
    missed: int = 0  # ground-truth lines no OCR line landed on
    extra: int = 0  # OCR lines on no ground-truth line


def _read(client: Any, pipeline: str, page: FieldPage) -> PageReading:
    (result,) = client.predict(pipeline, image=encode_image(page.image))
    owners = assign_lines(page.lines, result)
    reading = PageReading(page, extra=owners.count(None))
    for ocr, owner in zip(result, owners):
        if owner is not None:
            truth = page.lines[owner]
            reading.lines.append(ReadLine(truth.text, truth.label, ocr["text"], ocr.get("label")))
    reading.missed = len(page.lines) - len({o for o in owners if o is not None})
    return reading


def read_pages(client: Any, pipeline: str, pages: Iterable[FieldPage], workers: int = 4) -> list[PageReading]:
    """Every page read by ``pipeline`` (a few requests in flight, so the server batches), in page order."""
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(lambda page: _read(client, pipeline, page), pages))


def classify_texts(client: Any, pipeline: str, texts: Sequence[str], per_request: int = 32) -> list[str]:
    """The label a text pipeline (``ernie``) gives each text."""
    labels: list[str] = []
    for i in range(0, len(texts), per_request):
        labels += [r["label"] for r in client.predict(pipeline, texts=list(texts[i : i + per_request]))]
    return labels


@dataclass
class FieldScore:
    """Correct and total lines per set and field."""

    correct: dict[str, Counter] = field(default_factory=lambda: {s: Counter() for s in SETS})
    total: dict[str, Counter] = field(default_factory=lambda: {s: Counter() for s in SETS})
    missed: int = 0
    extra: int = 0

    def add(self, which: str, label: str, ok: bool) -> None:
        self.total[which][label] += 1
        self.correct[which][label] += ok

    def accuracy(self, which: str, label: str | None = None) -> float:
        """Share of correct lines in a set (one field, or all); NaN for no lines."""
        total = self.total[which][label] if label else sum(self.total[which].values())
        correct = self.correct[which][label] if label else sum(self.correct[which].values())
        return correct / total if total else float("nan")

    def lines(self, which: str) -> int:
        return sum(self.total[which].values())

    def to_dict(self) -> dict[str, Any]:
        return {
            which: {
                "accuracy": self.accuracy(which),
                "lines": self.lines(which),
                "per_field": {lab: self.accuracy(which, lab) for lab in LABELS if self.total[which][lab]},
            }
            for which in SETS
        } | {"missed_lines": self.missed, "false_detections": self.extra}


def score(readings: Sequence[PageReading], clean_labels: Sequence[str] | None = None) -> FieldScore:
    """Accuracy per field of the OCR'd lines (and their misread subset); of the clean text
    when ``clean_labels`` gives the text pipeline's label of every ground-truth line, in page order."""
    out = FieldScore()
    for reading in readings:
        out.missed += reading.missed
        out.extra += reading.extra
        for line in reading.lines:
            out.add("ocr", line.label, line.predicted == line.label)
            if line.misread:
                out.add("misread", line.label, line.predicted == line.label)
    if clean_labels is not None:
        truths = [line for reading in readings for line in reading.page.lines]
        if len(truths) != len(clean_labels):
            raise ValueError(f"{len(clean_labels)} clean labels for {len(truths)} ground-truth lines")
        for line, got in zip(truths, clean_labels):
            out.add("clean", line.label, got == line.label)
    return out


def evaluate(client: Any, pages: Sequence[FieldPage]) -> FieldScore:
    """The pages through a server of ``configs/repository``: OCR'd lines by ``ocr_ernie``,
    the rendered text by ``ernie``."""
    readings = read_pages(client, "ocr_ernie", pages)
    return score(readings, classify_texts(client, "ernie", [line.text for page in pages for line in page.lines]))


def table(scores: FieldScore) -> list[list[str]]:
    """Rows of a per-field table: field, then accuracy (lines) on each set; the last row is all fields."""

    def cell(which: str, label: str | None) -> str:
        n = scores.total[which][label] if label else scores.lines(which)
        return f"{scores.accuracy(which, label):.1%} ({n})" if n else "-"

    rows = [[label, *(cell(which, label) for which in SETS)] for label in LABELS]
    return rows + [["all", *(cell(which, None) for which in SETS)]]
