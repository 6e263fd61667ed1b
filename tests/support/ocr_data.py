"""The committed OCR test data in tests/data/ocr/: rendered pages, their ground
truth, and PaddleOCR 2.10's answers for them.

Rendering Chinese needs a font a fresh machine does not have, and running
PaddleOCR for every test session is slow, so both happen once, in
``python -m tests.support.make_ocr_data``, which writes this directory. Loading
it needs neither a font nor PaddleOCR. ``answers.json`` holds, per set:

  "sample"     ``synth.sample_documents(seed)``: 12 varied pages, each with its
               ground-truth ``lines``, PaddleOCR's ``paddleocr`` lines and, for
               every third page, its ``paddleocr_cls`` lines (angle cls on)
  "short"      ``synth.short_line_documents(seed)``: 16 pages whose rec crops
               all pad to 320 px, with ``lines`` and ``paddleocr``
  "invoice"    the three-line page the predict-command test reads
  "rec_crops"  single-line crops with PaddleOCR's ``ocr(det=False)`` answer

``manifest.json`` holds every other file's sha256, the generator's inputs and
the fonts it rendered with (:func:`manifest_problems` checks the hashes).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from tests.support.ocr_reference import Line
from tests.support.synth import SynthDoc, SynthLine

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA_DIR = os.path.join(ROOT, "tests", "data", "ocr")
MANIFEST = "manifest.json"
ANSWERS = "answers.json"


@dataclass
class RecCrop:
    """A rendered text line (BGR) and PaddleOCR's reading of it alone."""

    name: str
    image: np.ndarray
    text: str  # what was rendered
    ref_text: str
    ref_score: float


@cache
def answers(data_dir: str = DATA_DIR) -> dict[str, Any]:
    with open(os.path.join(data_dir, ANSWERS), encoding="utf-8") as f:
        return json.load(f)


def read_image(rel_path: str, data_dir: str = DATA_DIR) -> np.ndarray:
    """A committed PNG as a BGR uint8 array, as ``synth`` rendered it."""
    import cv2

    with open(os.path.join(data_dir, rel_path), "rb") as f:
        data = np.frombuffer(f.read(), np.uint8)
    img = cv2.imdecode(data, cv2.IMREAD_COLOR)
    if img is None:
        raise ValueError(f"cannot decode {rel_path}")
    return img


def _lines(entries: list[dict]) -> list[Line]:
    return [
        Line(text=e["text"], score=float(e["score"]), box=[[float(x), float(y)] for x, y in e["box"]]) for e in entries
    ]


def pages(set_name: str = "sample", data_dir: str = DATA_DIR) -> list[SynthDoc]:
    """The set's pages with their ground-truth lines, in generation order."""
    return [
        SynthDoc(p["name"], read_image(p["image"], data_dir), [SynthLine(g["text"], g["box"]) for g in p["lines"]])
        for p in answers(data_dir)[set_name]
    ]


def reference(set_name: str = "sample", data_dir: str = DATA_DIR) -> list[list[Line]]:
    """PaddleOCR's lines for each page of the set (det -> rec, no angle cls)."""
    return [_lines(p["paddleocr"]) for p in answers(data_dir)[set_name]]


def cls_reference(set_name: str = "sample", data_dir: str = DATA_DIR) -> tuple[list[int], list[list[Line]]]:
    """(page indices, PaddleOCR's lines with angle cls on) for the pages that have them."""
    entries = [(i, p) for i, p in enumerate(answers(data_dir)[set_name]) if "paddleocr_cls" in p]
    return [i for i, _ in entries], [_lines(p["paddleocr_cls"]) for _, p in entries]


def rec_crops(data_dir: str = DATA_DIR) -> list[RecCrop]:
    return [
        RecCrop(c["name"], read_image(c["image"], data_dir), c["text"], c["paddleocr"]["text"], c["paddleocr"]["score"])
        for c in answers(data_dir)["rec_crops"]
    ]


def sha256_file(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def manifest_problems(data_dir: str = DATA_DIR) -> list[str]:
    """Files whose sha256 differs from the manifest, or that are missing or unlisted; [] when all agree."""
    with open(os.path.join(data_dir, MANIFEST), encoding="utf-8") as f:
        listed: dict[str, str] = json.load(f)["files"]
    present = set()
    for dirpath, _dirs, files in os.walk(data_dir):
        for name in files:
            rel = os.path.relpath(os.path.join(dirpath, name), data_dir).replace(os.sep, "/")
            if rel != MANIFEST:
                present.add(rel)
    problems = [f"missing: {rel}" for rel in sorted(set(listed) - present)]
    problems += [f"not in the manifest: {rel}" for rel in sorted(present - set(listed))]
    for rel in sorted(set(listed) & present):
        if sha256_file(os.path.join(data_dir, rel)) != listed[rel]:
            problems.append(f"sha256 differs: {rel}")
    return problems
