"""Every engine/precision pair batchline ships, on the same committed pages:
the documented agreement with PaddleOCR 2.10's lines (docs/CONFIG.md,
"Engines and precision").

* ``fp32`` on either engine (Paddle Inference's OpenVINO engine, OpenVINO
  Runtime): the exact profile, >= MIN_MATCH (98%) of PaddleOCR's lines identical.
* ``bf16`` on OpenVINO Runtime: on a CPU without native bfloat16 it runs
  fp32 (with a warning), so the exact bound holds; on a CPU with it,
  bfloat16 changes some characters and the documented bound is BF16_MATCH.
* ``fp32`` on PyTorch (``engine: torch``, the models' ONNX form on the CPU)
  and on ONNX Runtime (``engine: onnxruntime``, the same ONNX file, its CPU
  provider): the same lines as the exact profile (OpenVINO Runtime fp32), every one.
* ``bf16`` on PyTorch (weights cast once, batch norms folded, reductions and
  heads in fp32; torch computes bfloat16 on any CPU): character accuracy against
  the pages' ground truth at least the exact profile's, and TORCH_BF16_MATCH of
  PaddleOCR's lines identical (what bfloat16 changes is mostly a space: CTC's
  blank and space are close calls).

Each pair runs det -> rec through the real ops, batched, on the 12 sample pages.
"""

from __future__ import annotations

import importlib.util

import pytest

from tests.support.loaded_ops import loaded_ops
from tests.support.ocr_reference import MIN_MATCH, match_rate_over_pages

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not all(
            importlib.util.find_spec(m)
            for m in ("paddle", "openvino", "rapidocr_paddle", "torch", "onnxruntime", "paddle2onnx")
        ),
        reason="needs paddle, openvino, rapidocr_paddle, torch, onnxruntime and paddle2onnx",
    ),
]

BF16_MATCH = 0.90
TORCH_BF16_MATCH = 0.75

PAIRS = {
    "paddle-openvino-fp32": {"engine": "paddle", "use_openvino": True, "precision": "fp32", "conv_kernels": "auto"},
    "openvino-fp32": {"engine": "openvino", "use_openvino": False, "precision": "fp32"},
    "openvino-bf16": {"engine": "openvino", "use_openvino": False, "precision": "bf16"},
    "torch-fp32": {"engine": "torch", "use_openvino": False, "precision": "fp32", "conv_kernels": "auto"},
    "torch-bf16": {"engine": "torch", "use_openvino": False, "precision": "bf16", "conv_kernels": "auto"},
    "onnxruntime-fp32": {"engine": "onnxruntime", "use_openvino": False, "precision": "fp32", "conv_kernels": "auto"},
}
# the engines that run the models' ONNX form: the exact profile's lines, every one
ONNX_PAIRS = ["onnxruntime-fp32", "torch-fp32"]
SCORE_TOL = 1e-4


def _bf16_native() -> bool:
    import openvino as ov

    return "BF16" in ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")


def _read_pages(pair: str, docs) -> list:
    from serving.batching.direct import run_chain_direct

    one_instance = {**PAIRS[pair], "instance_mode": "thread", "instance_num": 1}
    chain = list(loaded_ops("ocr.yml", {"det": one_instance, "rec": one_instance}).values())
    return [run_chain_direct(chain, doc.image) for doc in docs]


@pytest.fixture(scope="module")
def pages_read(docs):
    """Each pair's lines on the pages, read once for the module."""
    return {pair: _read_pages(pair, docs) for pair in sorted(PAIRS)}


@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_engine_precision_pair_agrees_with_paddleocr(pair, pages_read, reference):
    rate, bad = match_rate_over_pages(reference, pages_read[pair])
    low_precision = PAIRS[pair]["precision"] == "bf16" and _bf16_native()
    bound = TORCH_BF16_MATCH if pair == "torch-bf16" else BF16_MATCH if low_precision else MIN_MATCH
    assert rate >= bound, (pair, rate, bad[:5])


@pytest.mark.parametrize("pair", ONNX_PAIRS)
def test_onnx_engines_read_every_line_as_the_exact_profile(pair, pages_read):
    """engine: torch and engine: onnxruntime, fp32 on the CPU: the exact profile's lines (text and
    box), scores to SCORE_TOL."""
    for page, (ours, exact) in enumerate(zip(pages_read[pair], pages_read["openvino-fp32"])):
        assert [(line["text"], line["box"]) for line in ours] == [(line["text"], line["box"]) for line in exact], page
        assert all(abs(a["score"] - b["score"]) <= SCORE_TOL for a, b in zip(ours, exact)), page


def test_torch_bf16_reads_the_characters_as_well_as_the_exact_profile(pages_read, docs):
    from tests.support.ocr_accuracy import char_accuracy, score_page

    def accuracy(pair: str) -> float:
        return char_accuracy([score_page(doc.lines, lines) for doc, lines in zip(docs, pages_read[pair])])

    assert accuracy("torch-bf16") >= accuracy("openvino-fp32")


def test_ernie_gives_the_same_labels_on_every_engine():
    """The ERNIE demo model's ONNX twin (what OpenVINO, torch and ONNX Runtime read) against its Paddle export."""
    from recipes.ernie_fields.data import generate
    from serving.batching.direct import run_op_direct

    texts = [text for text, _ in generate(20, seed=77)]
    answers = {}
    for engine in ("paddle", "openvino", "torch", "onnxruntime"):
        ((op, runner),) = loaded_ops("ernie.yml", {"ernie": {"engine": engine, "use_mkldnn": False}}).values()
        answers[engine] = [run_op_direct(op, runner, {"input": text}) for text in texts]
    for other in ("openvino", "torch", "onnxruntime"):
        for text, a, b in zip(texts, answers["paddle"], answers[other]):
            assert a["label"] == b["label"], (other, text)
            assert abs(a["score"] - b["score"]) < SCORE_TOL, (other, text)


@pytest.mark.parametrize("pair", ["openvino-fp32", *ONNX_PAIRS])
def test_process_instances_answer_as_in_process_ones(pair):
    """An engine in instance_mode: process (isolation) or device_process (a thread of the
    device's process) reads crops exactly as in-process."""
    from serving.batching.direct import run_op_direct
    from tests.support import ocr_data

    crops = ocr_data.rec_crops()
    answers = {}
    for mode in ("thread", "process", "device_process"):
        ((op, runner),) = loaded_ops("rec.yml", {"rec": {**PAIRS[pair], "instance_mode": mode}}).values()
        try:
            answers[mode] = [run_op_direct(op, runner, {"input": c.image}) for c in crops]
        finally:
            runner.close()
    texts = {mode: [a["text"] for a in found] for mode, found in answers.items()}
    assert texts["thread"] == texts["process"] == texts["device_process"]
