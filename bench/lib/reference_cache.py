"""PaddleOCR 2.10's lines for an evaluation page set, computed once and cached.

The reference is PaddleOCR on oneDNN in fp32, built as bench/engine_agreement.py
builds it (``make_reference(cpu_threads=..., enable_mkldnn=True)``, no angle
classifier). Its output does not depend on load, so it is cached under the
bench cache dir, keyed by page set (seed, count, version) and the
PaddleOCR/Paddle versions; the ms per page stored with it is from the run
that filled the cache.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import time
from collections.abc import Sequence
from typing import Any

from bench.lib.paths import cache_dir


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "none"


def reference_path(seed: int, count: int, version: int) -> str:
    name = f"paddleocr{_version('paddleocr')}-paddle{_version('paddlepaddle')}-set{version}-seed{seed}-n{count}.json"
    return os.path.join(cache_dir("precision_profiles", "reference"), name)


def paddleocr_reference(
    images: Sequence[Any], *, seed: int, version: int, threads: int, warm: int
) -> tuple[list[list[dict]], dict]:
    """(lines per page as ``{"text", "score", "box"}``, run info with ms per page and whether cached)."""
    path = reference_path(seed, len(images), version)
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        return doc["pages"], {**doc["run"], "cached": True}
    from tests.support.ocr_reference import make_reference, run_reference

    ocr = make_reference(use_angle_cls=False, cpu_threads=threads, enable_mkldnn=True)
    for image in images[:warm]:
        run_reference(ocr, image)
    pages = []
    started = time.perf_counter()
    for image in images:
        pages.append([{"text": ln.text, "score": ln.score, "box": ln.box} for ln in run_reference(ocr, image)])
    run = {
        "ms_per_page": (time.perf_counter() - started) / max(1, len(images)) * 1000,
        "cpu_threads": threads,
        "time": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump({"run": run, "pages": pages}, f, ensure_ascii=False)
    os.replace(path + ".tmp", path)
    return pages, {**run, "cached": False}
