"""PaddleOCR on another engine or precision (diagnostics).

PaddleOCR 2.10 builds its predictors with ``enable_mkldnn=True`` through one
call and has no switch for other engines or precisions, so a bench swaps
that call while PaddleOCR builds them."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any


@contextlib.contextmanager
def paddleocr_enable_mkldnn_as(replacement: Callable[[Callable[[Any], None], Any], None]) -> Iterator[None]:
    """While active, ``paddle.inference.Config.enable_mkldnn(config)`` calls
    ``replacement(original_enable_mkldnn, config)``."""
    import paddle.inference as pi

    original = pi.Config.enable_mkldnn
    pi.Config.enable_mkldnn = lambda config: replacement(original, config)
    try:
        yield
    finally:
        pi.Config.enable_mkldnn = original


def paddleocr_engine_openvino(cache_dir: str):
    """PaddleOCR predictors built meanwhile (``enable_mkldnn=True``) get Paddle
    Inference's OpenVINO engine instead: the engine batchline's OCR configs use."""
    import paddle.inference as pi

    def enable_openvino(_original, config):
        config.enable_openvino_engine(pi.PrecisionType.Float32)
        config.set_optim_cache_dir(cache_dir)

    return paddleocr_enable_mkldnn_as(enable_openvino)
