"""int8 models for the precision bench: NNCF post-training quantization of a
Paddle model read by OpenVINO, calibrated on feeds our own ops prepare from
rendered pages (another seed than the evaluation pages).

Weights are quantized with NNCF's overflow fix on every layer (7-bit
weights): CPUs without VNNI (AVX2 only, like the bench machine) multiply-add
int8 through 16-bit intermediates that saturate with full 8-bit weights, which
costs accuracy (docs/BENCHMARKS.md, "Precision profiles"); with VNNI or AMX the
fix costs next to nothing, so one recipe serves both.

Quantized models are cached under the bench cache dir, keyed by model,
calibration, recipe and NNCF/OpenVINO versions.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from bench.lib.paths import cache_dir

log = logging.getLogger(__name__)

#: names the quantization settings below in cached models' keys
RECIPE = "ptq-overflowfix"


def nncf_problem() -> str | None:
    """Why int8 cannot be built here (None: NNCF and OpenVINO are importable)."""
    for package, hint in (("openvino", "pip install openvino"), ("nncf", "pip install nncf")):
        if importlib.util.find_spec(package) is None:
            return f"{package} is not installed ({hint})"
    return None


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "none"


def quantized_model(program: str, tag: str, feeds: Callable[[], Sequence[np.ndarray]]) -> str:
    """The model directory of the int8 OpenVINO IR of ``program`` (a .pdmodel):
    ``inference.xml``, which ``engine: openvino`` reads, quantized with ``feeds()``
    (each one model input) unless the cache holds it for ``tag``."""
    import nncf
    import openvino as ov
    from nncf.quantization.advanced_parameters import AdvancedQuantizationParameters, OverflowFix

    model_name = os.path.basename(os.path.dirname(program))
    key = f"{model_name}-{tag}-{RECIPE}-nncf{_version('nncf')}-ov{_version('openvino')}"
    model_dir = cache_dir("precision_profiles", "int8", key)
    path = os.path.join(model_dir, "inference.xml")
    if os.path.exists(path):
        return model_dir
    data = list(feeds())
    started = time.perf_counter()
    model = ov.Core().read_model(program)
    quantized = nncf.quantize(
        model,
        nncf.Dataset(data),
        subset_size=len(data),
        advanced_parameters=AdvancedQuantizationParameters(overflow_fix=OverflowFix.ENABLE),
    )
    ov.save_model(quantized, path, compress_to_fp16=False)
    log.info("quantized %s on %d feeds in %.0f s -> %s", model_name, len(data), time.perf_counter() - started, path)
    return model_dir


def op_feeds(op: Any, inputs: Sequence[Mapping[str, Any]], limit: int) -> list[np.ndarray]:
    """One single-item model input per item ``op`` makes of ``inputs`` (its own
    expand, preprocess and collate, so padding is what it serves), at most
    ``limit``, spread evenly over the items."""
    items = [op.preprocess(payload) for x in inputs for payload in op.expand(x)]
    if len(items) > limit:
        step = len(items) / limit
        items = [items[int(i * step)] for i in range(limit)]
    feeds = []
    for item in items:
        (sub,) = op.collate([item])
        (feed,) = sub.feed.values()
        feeds.append(np.ascontiguousarray(feed))
    return feeds
