"""A model-free OCR-shaped op for the page's browser tests.

``FixedLinesOp`` takes a real image (decoded as OCR decodes it) and answers
the lines its params name, as OCR answers (``[{"text", "score", "box"}]``,
boxes stacked down the image), with a field label on each line when
``labels`` are given (as ``ocr_ernie`` answers). So a test chooses exactly
what text the page must show, e.g. markup that must stay text.
``FieldLabelOp`` is a text pipeline answering as ERNIE does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tests.support.engine_fakes import EchoTextOp
from tests.support.image_fakes import ImageStatsOp, ImageStatsParams


class FixedLinesParams(ImageStatsParams):
    lines: list[str] = ["hello"]
    labels: list[str] | None = None  # one per line: answered as "label" with "label_score"


def stacked_boxes(width: int, height: int, n: int) -> list[list[list[float]]]:
    """``n`` boxes one under the other, filling the image's inner part."""
    step = height / max(n, 1)
    x0, x1 = 0.1 * width, 0.9 * width
    boxes = []
    for i in range(n):
        top, bottom = (i + 0.2) * step, (i + 0.8) * step
        boxes.append([[x0, top], [x1, top], [x1, bottom], [x0, bottom]])
    return boxes


class FixedLinesOp(ImageStatsOp):
    Params = FixedLinesParams

    def postprocess(self, item: Any, output: np.ndarray) -> list[dict[str, Any]]:
        width, height = item[0], item[1]
        texts = self.params.lines
        out: list[dict[str, Any]] = []
        for i, (text, box) in enumerate(zip(texts, stacked_boxes(width, height, len(texts)))):
            line: dict[str, Any] = {"text": text, "score": 0.99 - 0.01 * i, "box": box}
            if self.params.labels is not None:
                line.update(label=self.params.labels[i], label_score=0.9)
            out.append(line)
        return out


class FieldLabelOp(EchoTextOp):
    """Text in -> a label as ERNIE answers one (``{"label", "score", "probs"}``):
    "date" for a text with a digit, else "other"."""

    def postprocess(self, item: Any, output: np.ndarray) -> dict[str, Any]:
        date = any(c.isdigit() for c in item[0])
        probs = {"date": 0.8 if date else 0.1, "other": 0.2 if date else 0.9}
        label = max(probs, key=lambda k: probs[k])
        return {"label": label, "score": probs[label], "probs": probs}


FIXED_LINES_OP = f"{__name__}:FixedLinesOp"
FIELD_LABEL_OP = f"{__name__}:FieldLabelOp"
