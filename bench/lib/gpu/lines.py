"""The served lines of the committed sample pages (tests/data/ocr/) against PaddleOCR
2.10's committed answers for them: the exact profile's bound, MIN_MATCH of the lines
identical (text equal, box within 3 px), as the e2e tests hold configs/ocr.yml to."""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tests.support import ocr_data
from tests.support.ocr_reference import MIN_MATCH, match_rate_over_pages

SET = "sample"
#: mismatches kept in the report (the rest are counted)
SHOWN_MISSES = 10


def page_pngs(pages: Sequence[int]) -> list[bytes]:
    """Those committed sample pages, as their PNG files' bytes."""
    out = []
    for i in pages:
        with open(os.path.join(ocr_data.DATA_DIR, ocr_data.answers()[SET][i]["image"]), "rb") as f:
            out.append(f.read())
    return out


def page_images(pages: Sequence[int]) -> list[Any]:
    """Those committed sample pages, decoded (BGR)."""
    return [ocr_data.read_image(ocr_data.answers()[SET][i]["image"]) for i in pages]


def served_answers(url: str, name: str, pngs: Sequence[bytes], at_once: bool) -> list[list[dict]]:
    """The pipeline's lines for each page: one request after another, or all in flight at
    once (so crops of different pages can share rec's batches)."""
    from client import PipelineClient

    def one(png: bytes) -> list[dict]:
        with PipelineClient(url, timeout=300) as client:
            return client.predict(name, image=png)[0]

    if not at_once:
        return [one(png) for png in pngs]
    with ThreadPoolExecutor(len(pngs)) as pool:
        return list(pool.map(one, pngs))


def line_check(pages: Sequence[int], answers: Sequence[Sequence[dict]]) -> dict[str, Any]:
    """How many of PaddleOCR's lines of those pages their answers hold; ``ok``: at least MIN_MATCH."""
    every = ocr_data.reference(SET)
    references = [every[i] for i in pages]
    rate, misses = match_rate_over_pages(references, answers)
    total = sum(len(ref) for ref in references)
    return {
        "pages": len(answers),
        "lines": total,
        "matched": round(rate * total),
        "rate": round(rate, 4),
        "min_match": MIN_MATCH,
        "ok": rate >= MIN_MATCH,
        "misses": misses[:SHOWN_MISSES],
    }
