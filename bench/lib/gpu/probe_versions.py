"""Probe step 1, versions: Python, torch and its CUDA and cuDNN, the GPU, onnx, numpy,
OpenCV (and the GPU check's environment: machine, driver, the commit measured)."""

from __future__ import annotations

import importlib.metadata
import os
from typing import Any

from serving.runners.onnx_export import CACHE_ENV, converter_version

from . import device
from .probe_step import StepContext

DISTRIBUTIONS = ("onnx", "numpy", "opencv-python-headless", "opencv-python", "onnxruntime", "pydantic")


def run(ctx: StepContext) -> None:
    ctx.record.update(device.environment(ctx.device, ctx.prepared))
    ctx.record.update(torch_details())
    ctx.put("packages", installed(DISTRIBUTIONS))
    ctx.put("cv2", opencv_version())
    ctx.put("onnx_cache", os.environ.get(CACHE_ENV) or "the user cache (no carried one)")
    ctx.put("paddle2onnx", converter_version())


def torch_details() -> dict[str, Any]:
    import torch

    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    out: dict[str, Any] = {"cudnn": cudnn, "cuda_available": torch.cuda.is_available()}
    if torch.cuda.is_available():
        out["gpu_count"] = torch.cuda.device_count()
        out["bf16_supported"] = torch.cuda.is_bf16_supported()
    return out


def installed(names: tuple[str, ...]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def opencv_version() -> str | None:
    try:
        import cv2
    except ImportError:
        return None
    return str(cv2.__version__)
