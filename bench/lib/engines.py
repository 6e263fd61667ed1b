"""The thread budget and CPU engine every op of a bench config runs on."""

from __future__ import annotations

import os
from typing import Any

#: Paddle intra-op threads per predictor, for us and for every peer
THREADS = int(os.environ.get("BENCH_THREADS", "2"))

# CPU engine overrides for every op of a bench config ("config": as the file says)
ENGINES: dict[str, dict[str, Any]] = {
    "config": {},
    # (conv_kernels is an OpenVINO Runtime key: the Paddle engines drop the configs' choice)
    "onednn": {"engine": "paddle", "use_openvino": False, "use_mkldnn": True, "conv_kernels": "auto"},
    "openvino": {"engine": "paddle", "use_openvino": True, "use_mkldnn": False, "conv_kernels": "auto"},
    "plain": {"engine": "paddle", "use_openvino": False, "use_mkldnn": False, "conv_kernels": "auto"},
    # OpenVINO Runtime itself (engine: openvino), not Paddle's embedded engine
    "ov-runtime": {"engine": "openvino", "use_openvino": False, "use_mkldnn": False},
    # PyTorch on the models' ONNX form (engine: torch), on the CPU
    "torch": {"engine": "torch", "use_openvino": False, "use_mkldnn": False, "conv_kernels": "auto"},
}


def add_engine_arg(ap: Any, default: str = "config") -> None:
    """``--engine``: the CPU engine every op of the bench config runs on."""
    ap.add_argument(
        "--engine",
        choices=sorted(ENGINES),
        default=default,
        help=f"CPU engine for every op: Paddle Inference on oneDNN, on its OpenVINO engine or on plain "
        f"kernels, OpenVINO Runtime (ov-runtime), PyTorch (torch), or as the config says (default: {default})",
    )


def engine_label(svc: dict[str, Any]) -> str:
    """The CPU engine a ``local_service_conf`` mapping runs on, as ``--engine`` names it."""
    if svc.get("engine") == "openvino":
        return "ov-runtime"
    if svc.get("engine") == "torch":
        return "torch"
    return "openvino" if svc.get("use_openvino") else ("onednn" if svc.get("use_mkldnn") else "plain")
