"""RapidOCR 1.4.4 built the way the OCR peer benchmarks run it. Runs inside
the bench's RapidOCR virtual environment (bench/lib/rapidocr_venv.py), not
batchline's: it imports nothing from the repo.

RapidOCR ships the same PP-OCRv4 det/rec weights as ONNX. Its own options
are set to PaddleOCR 2.10's values (what configs/ocr.yml uses), so every
contender does the same work:

* det: resize so the longer side is at most 960 (``limit_type: max``; RapidOCR
  defaults to the shorter side at least 736), ImageNet mean/std (RapidOCR:
  0.5/0.5), box_thresh 0.6 (0.5), unclip_ratio 1.5 (1.6), no dilation (on);
* no angle classifier (``use_cls``; on by default), drop score 0.5 (same);
* no letterbox for very flat or short pages (``width_height_ratio``,
  ``min_height``): PaddleOCR has none.

One thing its options cannot set: with ``limit_type: max`` RapidOCR raises
the limit to 1500 (2000) for pages whose longer side is 960-1500 (> 1500
px), where PaddleOCR shrinks them to 960. ``det_resize="paddleocr"``
replaces its detector's choice of limit by the fixed one (the default here).
"""

from __future__ import annotations

import importlib
import importlib.metadata as md
from typing import Any

ENGINES = {"openvino": "rapidocr_openvino", "onnxruntime": "rapidocr_onnxruntime"}
PRECISIONS = ("default", "fp32")
DET_RESIZES = ("paddleocr", "rapidocr")

# RapidOCR constructor options with PaddleOCR 2.10's values (see the module doc)
PADDLEOCR_ALIGNED: dict[str, Any] = {
    "use_cls": False,
    "text_score": 0.5,
    "width_height_ratio": -1,
    "min_height": 0,
    "det_limit_side_len": 960,
    "det_limit_type": "max",
    "det_thresh": 0.3,
    "det_box_thresh": 0.6,
    "det_unclip_ratio": 1.5,
    "det_donot_use_dilation": True,
    "det_score_mode": "fast",
    "det_mean": [0.485, 0.456, 0.406],
    "det_std": [0.229, 0.224, 0.225],
}


def versions(engine: str) -> dict[str, str | None]:
    """Installed versions of the packages this engine runs on."""
    names = [ENGINES[engine], "openvino" if engine == "openvino" else "onnxruntime", "numpy", "opencv-python"]
    out: dict[str, str | None] = {}
    for name in names:
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            out[name] = None
    return out


def _patch_openvino_compile(precision: str, pinning: bool) -> None:
    """RapidOCR's OpenVINO session compiles with no config: add ours
    (``INFERENCE_PRECISION_HINT`` f32 when forced, ``ENABLE_CPU_PINNING``)."""
    infer_engine = importlib.import_module("rapidocr_openvino.utils.infer_engine")
    base = infer_engine.Core
    if getattr(base, "_bench_patched", False):
        base = base.__bases__[0]
    extra: dict[str, Any] = {}
    if precision == "fp32":
        extra["INFERENCE_PRECISION_HINT"] = "f32"
    if not pinning:
        extra["ENABLE_CPU_PINNING"] = False

    class Core(base):  # type: ignore[misc, valid-type]
        _bench_patched = True

        def compile_model(self, model: Any, device_name: str = "CPU", config: Any = None) -> Any:
            return super().compile_model(model, device_name, {**(config or {}), **extra})

    setattr(infer_engine, "Core", Core)  # noqa: B010 (a module found by name)


def make_rapidocr(
    engine: str, precision: str = "default", threads: int = 2, pinning: bool = True, det_resize: str = "paddleocr"
) -> Any:
    """A RapidOCR instance: ``threads`` math threads per model, PaddleOCR-aligned options."""
    if engine not in ENGINES or precision not in PRECISIONS or det_resize not in DET_RESIZES:
        raise ValueError(f"unknown engine {engine!r}, precision {precision!r} or det_resize {det_resize!r}")
    if engine == "openvino":
        _patch_openvino_compile(precision, pinning)
        thread_opts: dict[str, Any] = {"inference_num_threads": threads}
    else:
        if precision != "default":
            raise ValueError("onnxruntime runs its fp32 model as is: only precision 'default'")
        thread_opts = {"intra_op_num_threads": threads}
    module = importlib.import_module(ENGINES[engine])
    ocr = module.RapidOCR(**PADDLEOCR_ALIGNED, **thread_opts)
    if det_resize == "paddleocr":
        det = ocr.text_det
        pre = importlib.import_module(f"{ENGINES[engine]}.ch_ppocr_det.utils").DetPreProcess
        fixed = pre(det.limit_side_len, det.limit_type, det.mean, det.std)
        det.get_preprocess = lambda _max_wh: fixed
    return ocr


def precisions(ocr: Any, engine: str) -> dict[str, str]:
    """The precision each model actually runs at (OpenVINO: the compiled model's
    ``INFERENCE_PRECISION_HINT``; onnxruntime's CPU provider runs the fp32 model)."""
    if engine != "openvino":
        return {"det": "f32 (onnxruntime CPU)", "rec": "f32 (onnxruntime CPU)"}
    out = {}
    for name, session in (("det", ocr.text_det.infer), ("rec", ocr.text_rec.session)):
        value = session.session.get_compiled_model().get_property("INFERENCE_PRECISION_HINT")
        out[name] = value.to_string() if hasattr(value, "to_string") else str(value)
    return out


def read_page(ocr: Any, img: Any) -> list[dict]:
    """One page's lines as ``[{"text", "score", "box"}]``, RapidOCR's reading order."""
    result, _elapse = ocr(img, use_cls=False)
    return [
        {"text": str(text), "score": float(score), "box": [[float(x), float(y)] for x, y in box]}
        for box, text, score in (result or [])
    ]
