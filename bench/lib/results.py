"""Bench results: bench/results/<name>.json with the machine they ran on, and
MET/MISSED verdicts against a target."""

from __future__ import annotations

import json
import math
import os
import platform
import time
from collections.abc import Mapping
from typing import Any

from bench.lib.engines import THREADS
from bench.lib.paths import RESULTS_DIR


def machine_info() -> dict:
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        load = os.getloadavg()
    except OSError:
        load = None
    import importlib.metadata as md

    def ver(pkg: str) -> str | None:
        try:
            return md.version(pkg)
        except md.PackageNotFoundError:
            return None

    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "python": platform.python_version(),
        "paddle": ver("paddlepaddle"),
        "paddleocr": ver("paddleocr"),
        "thread_num": THREADS,
        "loadavg_at_start": load,
    }


def write_result(name: str, doc: Mapping[str, Any], results_dir: str = RESULTS_DIR) -> str:
    """Write ``doc`` (plus machine info and time) to ``results_dir``/<name>.json."""
    os.makedirs(results_dir, exist_ok=True)
    path = os.path.join(results_dir, f"{name}.json")
    full = {"bench": name, "time": time.strftime("%Y-%m-%d %H:%M:%S"), "machine": machine_info(), **doc}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(_json_safe(full), f, indent=2, ensure_ascii=False)
    return path


def _json_safe(obj: Any) -> Any:
    # NaN and inf are not JSON: a ratio that could not be computed is written as null
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {str(k): _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    return obj


def verdict(value: float, target: float, higher_is_better: bool = True) -> str:
    met = value >= target if higher_is_better else value <= target
    return "MET" if met else "MISSED"
