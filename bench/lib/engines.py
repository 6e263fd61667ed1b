"""The thread budget and CPU engine every op of a bench config runs on."""

from __future__ import annotations

import os
from typing import Any

#: Paddle intra-op threads per predictor, for us and for every peer
THREADS = int(os.environ.get("BENCH_THREADS", "2"))

# CPU engine overrides for every op of a bench config ("config": as the file says)
ENGINES: dict[str, dict[str, bool]] = {
    "config": {},
    "onednn": {"use_openvino": False, "use_mkldnn": True},
    "openvino": {"use_openvino": True, "use_mkldnn": False},
    "plain": {"use_openvino": False, "use_mkldnn": False},
}


def add_engine_arg(ap: Any, default: str = "config") -> None:
    """``--engine``: the CPU engine every op of the bench config runs on."""
    ap.add_argument(
        "--engine",
        choices=sorted(ENGINES),
        default=default,
        help=f"CPU engine for every op: oneDNN, OpenVINO, plain Paddle kernels, or as the "
        f"config says (default: {default})",
    )
