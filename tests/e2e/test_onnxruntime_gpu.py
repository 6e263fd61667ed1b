"""``engine: onnxruntime`` on a CUDA GPU, with the real weights: what only a GPU
can show. Skipped where the installed onnxruntime has no CUDA provider (CI's
CPU build); the TensorRT test also where it has no TensorRT provider.
tests/unit/test_onnxruntime_engine.py checks they are skipped here, not passed.
On a GPU host with ``onnxruntime-gpu``: ``python -m pytest tests/e2e/test_onnxruntime_gpu.py``.

* CUDA fp32 (TF32 off) reads the rec crops as the CPU provider does, and the
  det -> rec chain on it agrees with PaddleOCR as the CPU does.
* TensorRT fp32 reads them as the CPU too, fp16 at least FP16_SAME of them;
  its engines land in the cache folder, which a second load reads.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

from tests.support.gpu_tests import read_crops
from tests.support.loaded_ops import loaded_ops
from tests.support.ocr_reference import MIN_MATCH, match_rate_over_pages


def providers() -> list[str]:
    if importlib.util.find_spec("onnxruntime") is None:
        return []
    import onnxruntime

    return onnxruntime.get_available_providers()


pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif("CUDAExecutionProvider" not in providers(), reason="onnxruntime has no CUDA provider"),
]
needs_tensorrt = pytest.mark.skipif(
    "TensorrtExecutionProvider" not in providers(), reason="onnxruntime has no TensorRT provider"
)

FP16_SAME = 0.95
KEYS = {"engine": "onnxruntime", "use_openvino": False, "conv_kernels": "auto", "precision": "fp32"}
CUDA = {**KEYS, "device_type": 1, "devices": "0"}


def test_cuda_fp32_reads_as_the_cpu():
    assert read_crops(CUDA) == read_crops({**KEYS, "device_type": 0})


def test_the_chain_on_cuda_agrees_with_paddleocr(docs, reference):
    from serving.batching.direct import run_chain_direct

    keys = {**CUDA, "instance_mode": "thread", "instance_num": 1}
    chain = list(loaded_ops("ocr.yml", {"det": keys, "rec": keys}).values())
    rate, bad = match_rate_over_pages(reference, [run_chain_direct(chain, d.image) for d in docs])
    assert rate >= MIN_MATCH, (rate, bad[:5])


@needs_tensorrt
def test_tensorrt_reads_as_the_cpu_and_keeps_its_engines(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    cpu = read_crops({**KEYS, "device_type": 0})
    trt = {**KEYS, "device_type": 2, "devices": "0"}
    assert read_crops(trt) == cpu
    engines = [name for _, _, names in os.walk(tmp_path / "batchline" / "tensorrt") for name in names]
    assert any(name.endswith(".engine") for name in engines), engines
    assert read_crops(trt) == cpu  # from the cache
    fp16 = read_crops({**trt, "precision": "fp16"})
    assert sum(a == b for a, b in zip(fp16, cpu)) >= FP16_SAME * len(cpu)
