"""Text lines with PaddleOCR 2.10's reading of each, as the rec op is given them: each
committed rec crop alone (as PaddleOCR read it, ``ocr(det=False)``), and each committed
sample page with PaddleOCR's boxes (the op crops them and pads them in PaddleOCR's groups,
as after det: no det run needed). The served step sends the pages' crops as PNGs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tests.support import ocr_data

from .lines import SET, page_images


@dataclass(frozen=True)
class RecRequest:
    """What the rec op is given (``{"input": crop}``, or a page and boxes as det's output),
    and PaddleOCR's text of each of its lines."""

    inputs: Mapping[str, Any]
    expected: tuple[str, ...]


def rec_requests(pages: Sequence[int]) -> list[RecRequest]:
    """The committed crops, then those pages."""
    requests = [RecRequest({"input": c.image}, (c.ref_text,)) for c in ocr_data.rec_crops()]
    reference = ocr_data.reference(SET)
    for page, image in zip(pages, page_images(pages)):
        det_output = {"image": image, "boxes": [line.box for line in reference[page]], "box_type": "quad"}
        requests.append(RecRequest({"det": det_output}, tuple(line.text for line in reference[page])))
    return requests


def texts_of(answer: Any) -> list[str]:
    """The rec op's text of each line of one request (one crop: a dict; a page: a list)."""
    return [str(answer["text"])] if isinstance(answer, Mapping) else [str(line["text"]) for line in answer]


def page_crops(pages: Sequence[int]) -> list[np.ndarray]:
    """The lines of those pages, cropped at PaddleOCR's boxes."""
    from ops.image import crop_boxes

    reference = ocr_data.reference(SET)
    return [
        crop
        for page, image in zip(pages, page_images(pages))
        for crop in crop_boxes(image, [line.box for line in reference[page]])
    ]
