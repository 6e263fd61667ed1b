"""Does a faster way to run PP-OCRv4 still give PaddleOCR's answers?

PaddleOCR 2.10 on oneDNN (the reference the OCR tests use) against the same
PaddleOCR with one thing changed, over many rendered pages (the 12 sample
pages for three seeds plus random English / Chinese / mixed pages):

* ``openvino``: its predictors on Paddle Inference's OpenVINO engine (what
  ``use_openvino`` does, and what configs/ocr.yml ships);
* ``bf16``: the rec predictor on oneDNN with bfloat16 (``precision: bf16``;
  the det model does not run in bf16 on Paddle 3.3);
* ``pad32``: each rec group padded up to a multiple of 32 px instead of to
  its widest crop (shape buckets, so fewer distinct shapes).

For each: the share of the reference's lines with identical text (matched
page by page, in order), the largest box difference, and ms per page
(after a warm-up pass). The OCR tests require >= 98% identical lines.

    python -m bench.engine_agreement [--variants openvino,bf16,pad32] [--pages 60]
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import tempfile
import time

from bench.lib.engines import THREADS
from bench.lib.paddleocr_engines import paddleocr_enable_mkldnn_as, paddleocr_engine_openvino
from bench.lib.results import verdict, write_result
from bench.lib.script import BenchError, run_main

TARGET = 0.98
VARIANTS = ("openvino", "bf16", "pad32")


def pages(random_pages: int) -> list:
    from tests.support.synth import random_document, sample_documents

    images = [d.image for seed in (0, 3, 7) for d in sample_documents(seed)]
    scripts = ("en", "zh", "mixed")
    for i in range(random_pages):
        images.append(
            random_document(
                1234 + i,
                script=scripts[i % 3],
                n_lines=2 + i % 7,
                font_size=(18, 22, 26, 30, 36)[i % 5],
                words=(1, 9),
                name=f"x{i}",
            ).image
        )
    return images


def rec_bf16():
    """oneDNN predictors built meanwhile run the rec model in bfloat16."""

    def enable(original, config):
        original(config)
        if "rec" in os.path.basename(os.path.dirname(config.prog_file())):
            config.enable_mkldnn_bfloat16()

    return paddleocr_enable_mkldnn_as(enable)


def pad_rec_groups_to(ocr, step: int) -> None:
    """Pad each rec group of ``ocr`` up to a multiple of ``step`` pixels."""
    import numpy as np

    recognizer = ocr.text_recognizer
    resize = recognizer.resize_norm_img

    def padded(img, max_wh_ratio):
        out = resize(img, max_wh_ratio)
        width = out.shape[2]
        target = int(math.ceil(width / step) * step)
        if target == width:
            return out
        wide = np.zeros(out.shape[:2] + (target,), np.float32)
        wide[:, :, :width] = out
        return wide

    recognizer.resize_norm_img = padded


def build(variant: str | None, threads: int, cache_dir: str):
    from tests.support.ocr_reference import make_reference

    context = {"openvino": lambda: paddleocr_engine_openvino(cache_dir), "bf16": rec_bf16}.get(
        variant or "", contextlib.nullcontext
    )
    with context():
        ocr = make_reference(use_angle_cls=False, cpu_threads=threads, enable_mkldnn=True)
    if variant == "pad32":
        pad_rec_groups_to(ocr, 32)
    return ocr


def read(ocr, images: list, warm: int) -> tuple[list, float]:
    """(lines per page, ms per page after ``warm`` warm-up pages)."""
    for image in images[:warm]:
        ocr.ocr(image, cls=False)
    started = time.perf_counter()
    result = []
    for image in images:
        page = ocr.ocr(image, cls=False)[0] or []
        result.append([(str(text), [[float(x), float(y)] for x, y in box]) for box, (text, _) in page])
    return result, (time.perf_counter() - started) / len(images) * 1000


def compare(reference: list, other: list) -> tuple[int, int, float]:
    """(lines, identical lines, largest box difference in px among same-text lines)."""
    lines = same = 0
    box_diff = 0.0
    for ref_page, page in zip(reference, other):
        lines += len(ref_page)
        for (text, box), (text2, box2) in zip(ref_page, page):
            if text == text2:
                same += 1
                box_diff = max(box_diff, max(abs(a - b) for p, q in zip(box, box2) for a, b in zip(p, q)))
    return lines, same, box_diff


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--variants", default=",".join(VARIANTS), help=f"comma separated, from {', '.join(VARIANTS)}")
    ap.add_argument("--pages", type=int, default=60, help="random pages added to the 36 sample pages")
    ap.add_argument("--threads", type=int, default=THREADS, help="PaddleOCR cpu_threads")
    args = ap.parse_args()
    variants = [v for v in args.variants.split(",") if v]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        raise BenchError(f"unknown variants {unknown}; choose from {VARIANTS}")

    images = pages(args.pages)
    warm = min(12, len(images))
    with tempfile.TemporaryDirectory(prefix="bench-ov-") as cache_dir:
        reference, ref_ms = read(build(None, args.threads, cache_dir), images, warm)
        rows = {}
        for variant in variants:
            answers, ms = read(build(variant, args.threads, cache_dir), images, warm)
            lines, same, box_diff = compare(reference, answers)
            rows[variant] = {
                "lines": lines,
                "identical": same,
                "identical_ratio": same / max(1, lines),
                "max_box_diff_px": box_diff,
                "ms_per_page": ms,
                "speedup": ref_ms / ms,
            }
    print(
        f"{len(images)} pages, {rows[variants[0]]['lines'] if variants else 0} reference lines; "
        f"PaddleOCR on oneDNN, cpu_threads {args.threads}: {ref_ms:.0f} ms/page"
    )
    for variant, row in rows.items():
        print(
            f"{variant:9s}: identical lines {row['identical']}/{row['lines']} = {row['identical_ratio']:.4f} "
            f"(>= {TARGET}: {verdict(row['identical_ratio'], TARGET)}), max box diff "
            f"{row['max_box_diff_px']:.1f} px, {row['ms_per_page']:.0f} ms/page ({row['speedup']:.2f}x)"
        )
    write_result(
        "engine_agreement",
        {"args": vars(args), "pages": len(images), "reference_ms_per_page": ref_ms, "variants": rows, "target": TARGET},
    )
    if variants:
        first = variants[0]
        print(f"RATIO {first} identical lines = {rows[first]['identical_ratio']:.4f}")
    return 0


if __name__ == "__main__":
    run_main(main)
