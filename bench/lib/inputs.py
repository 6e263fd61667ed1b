"""Bench inputs: the OCR pages committed under tests/data/ocr/sample, rendered
text pages (tests/support/synth.py) and the text-line crops the det op finds
on them, cached on disk as PNGs under :func:`~bench.lib.paths.cache_dir`
(never in the repo)."""

from __future__ import annotations

import glob
import hashlib
import json
import os
from collections.abc import Sequence
from typing import Any

from bench.lib.configs import load_yaml, repo_config_path
from bench.lib.inprocess import make_op
from bench.lib.paths import ROOT, cache_dir
from bench.lib.script import BenchError

SAMPLE_PAGES_DIR = os.path.join(ROOT, "tests", "data", "ocr", "sample")


def sample_page_pngs() -> list[bytes]:
    """The 12 OCR pages committed under tests/data/ocr/sample, PNG bytes in name order."""
    return _read_all(sorted(glob.glob(os.path.join(SAMPLE_PAGES_DIR, "*.png"))))


def bench_documents(count: int = 24, seed: int = 7) -> list[Any]:
    """``count`` varied rendered pages (SynthDoc): the 12 sample pages, then random ones."""
    from tests.support.synth import random_document, sample_documents

    docs = list(sample_documents(seed))[:count]
    i = 0
    scripts = ("en", "zh", "mixed")
    while len(docs) < count:
        docs.append(
            random_document(
                seed * 7919 + i,
                script=scripts[i % 3],
                n_lines=3 + i % 6,
                font_size=(20, 24, 28, 32)[i % 4],
                words=(2, 7),
                name=f"r{i:02d}",
            )
        )
        i += 1
    return docs


def document_truth(count: int = 24, seed: int = 7) -> list[list[str]]:
    """The text each page of :func:`bench_documents` was rendered with: its lines, top to bottom."""
    return [[line.text for line in doc.lines] for doc in bench_documents(count, seed)]


def documents_dir(count: int = 24, seed: int = 7) -> str:
    """The folder of :func:`document_pngs` (filled if needed): ``NNN.png``, in page order."""
    document_pngs(count, seed)
    return cache_dir(f"docs-{count}-{seed}")


def document_pngs(count: int = 24, seed: int = 7) -> list[bytes]:
    """PNG bytes of :func:`bench_documents`, cached on disk."""
    from tests.support.synth import encode_image

    folder = cache_dir(f"docs-{count}-{seed}")
    paths = sorted(glob.glob(os.path.join(folder, "*.png")))
    if len(paths) != count:
        for doc_i, doc in enumerate(bench_documents(count, seed)):
            with open(os.path.join(folder, f"{doc_i:03d}.png"), "wb") as f:
                f.write(encode_image(doc.image))
        paths = sorted(glob.glob(os.path.join(folder, "*.png")))
    return _read_all(paths)


def bench_crops(count_docs: int = 24, seed: int = 7, det_config: str | None = None) -> list[bytes]:
    """PNG bytes of text-line crops found by the det op (configs/ocr.yml) on
    :func:`bench_documents`, in page then reading order. Cached on disk."""
    det_config = det_config or repo_config_path("ocr")
    folder = _crops_folder(count_docs, seed, det_config)
    done = os.path.join(folder, "DONE")
    if not os.path.exists(done):
        import cv2
        import numpy as np

        from ops.image import crop_boxes
        from serving.batching.direct import run_op_direct

        op, runners = make_op(det_config, "det")
        k = 0
        for png in document_pngs(count_docs, seed):
            img = cv2.imdecode(np.frombuffer(png, np.uint8), cv2.IMREAD_COLOR)
            out = run_op_direct(op, runners[0], {"input": img})
            for crop in crop_boxes(out["image"], out["boxes"], out.get("box_type", "quad")):
                ok, buf = cv2.imencode(".png", crop)
                if ok:
                    with open(os.path.join(folder, f"{k:04d}.png"), "wb") as f:
                        f.write(buf.tobytes())
                    k += 1
        if k == 0:
            raise BenchError("det found no text crop in the rendered pages")
        open(done, "w").close()
    return _read_all(sorted(glob.glob(os.path.join(folder, "*.png"))))


def crops_dir(count_docs: int = 24, seed: int = 7, det_config: str | None = None) -> str:
    """The folder of :func:`bench_crops` PNGs (created and filled if needed)."""
    bench_crops(count_docs, seed, det_config)
    return _crops_folder(count_docs, seed, det_config)


def _crops_folder(count_docs: int, seed: int, det_config: str | None) -> str:
    # keyed by the det op's class, params and model: other det settings find other crops
    det_config = det_config or repo_config_path("ocr")
    return cache_dir(f"crops-{count_docs}-{seed}-{_op_digest(det_config, 'det')}")


def _op_digest(config_path: str, op: str) -> str:
    conf = load_yaml(config_path)["op"][op]
    return hashlib.sha1(
        json.dumps(
            [conf.get("class"), conf.get("params"), conf["local_service_conf"].get("model_config")], sort_keys=True
        ).encode()
    ).hexdigest()[:10]


def _read_all(paths: Sequence[str]) -> list[bytes]:
    out = []
    for p in paths:
        with open(p, "rb") as f:
            out.append(f.read())
    return out


def decode_png(data: bytes) -> Any:
    import cv2
    import numpy as np

    return cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)


def fixed_crop(crops: Sequence[bytes]) -> bytes:
    """The crop of median width: the 'one fixed shape' input."""
    widths = sorted((decode_png(c).shape[1], i) for i, c in enumerate(crops))
    return crops[widths[len(widths) // 2][1]]


def idle_crop(op: Any, crops: Sequence[bytes], which: str = "short") -> bytes:
    """The lone-request crop: ``"short"``, the crop of the narrowest width bucket
    nearest that bucket's median (least predictor time, so the least noise), or
    ``"median"``, the median-width crop (:func:`fixed_crop`)."""
    if which == "median":
        return fixed_crop(crops)
    widths = [(op.preprocess(decode_png(c)).width, i) for i, c in enumerate(crops)]
    short = sorted(w_i for w_i in widths if op.bucket_width(w_i[0]) == op.bucket_width(0))
    return crops[short[len(short) // 2][1]] if short else fixed_crop(crops)
