"""PaddleOCR 2.10's own ``ppocr`` and ``tools.infer`` code, as the reference the
ports in ops/ppocr are held to (tests only: the ops import no PaddleOCR, and
importing these imports Paddle)."""

from __future__ import annotations

import importlib.util

import pytest

HAVE_PADDLEOCR = all(importlib.util.find_spec(m) is not None for m in ("paddle", "paddleocr"))


def import_ppocr() -> None:
    """Make PaddleOCR's ``ppocr`` and ``tools`` packages importable (heavy: imports paddle).

    ``import paddleocr`` appends its install dir to ``sys.path``, after which
    ``ppocr.data``, ``ppocr.postprocess`` and ``tools.infer`` import as PaddleOCR's
    tools do. Skips the calling test when PaddleOCR is not installed.
    """
    if not HAVE_PADDLEOCR:
        pytest.skip("PaddleOCR 2.10 (the reference) is not installed")
    import paddleocr  # noqa: F401  (side effect: sys.path gains the ppocr dir)
