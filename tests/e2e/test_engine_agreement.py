"""Every engine/precision pair batchline ships, on the same committed pages:
the documented agreement with PaddleOCR 2.10's lines (docs/CONFIG.md,
"Engines and precision").

* ``fp32`` on either engine (Paddle Inference's OpenVINO engine, OpenVINO
  Runtime): the exact profile, >= MIN_MATCH (98%) of PaddleOCR's lines identical.
* ``bf16`` on OpenVINO Runtime: on a CPU without native bfloat16 it runs
  fp32 (with a warning), so the exact bound holds; on a CPU with it,
  bfloat16 changes some characters and the documented bound is BF16_MATCH.

Each pair runs det -> rec through the real ops, batched, on the 12 sample pages.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

from tests.support.ocr_reference import MIN_MATCH, match_rate_over_pages

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not all(importlib.util.find_spec(m) for m in ("paddle", "openvino", "rapidocr_paddle")),
        reason="needs paddle, openvino and rapidocr_paddle",
    ),
]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BF16_MATCH = 0.90

PAIRS = {
    "paddle-openvino-fp32": {"engine": "paddle", "use_openvino": True, "precision": "fp32", "conv_kernels": "auto"},
    "openvino-fp32": {"engine": "openvino", "use_openvino": False, "precision": "fp32"},
    "openvino-bf16": {"engine": "openvino", "use_openvino": False, "precision": "bf16"},
}


def _bf16_native() -> bool:
    import openvino as ov

    return "BF16" in ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")


def _loaded(config_name: str, overrides: dict[str, dict]) -> dict:
    """``{op: (op, runner)}`` for the ops of ``configs/<config_name>`` named in
    ``overrides``, each with its ``local_service_conf`` updated by them."""
    from serving.config import parse_config
    from serving.config.load import read_config
    from serving.engine.launch import make_op, runners_for

    path = os.path.join(ROOT, "configs", config_name)
    _, data = read_config(path)
    for name, keys in overrides.items():
        data["op"][name]["local_service_conf"].update(keys)
    config = parse_config(data, path, path=path)
    loaded = {}
    for name in overrides:
        op = make_op(config.op[name])
        op.load()
        loaded[name] = (op, runners_for(op, 1)[0])
    return loaded


@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_engine_precision_pair_agrees_with_paddleocr(pair, docs, reference):
    from serving.engine.direct import run_chain_direct

    one_instance = {**PAIRS[pair], "instance_mode": "thread", "instance_num": 1}
    chain = list(_loaded("ocr.yml", {"det": one_instance, "rec": one_instance}).values())
    rate, bad = match_rate_over_pages(reference, [run_chain_direct(chain, doc.image) for doc in docs])
    low_precision = PAIRS[pair]["precision"] == "bf16" and _bf16_native()
    bound = BF16_MATCH if low_precision else MIN_MATCH
    assert rate >= bound, (pair, rate, bad[:5])


def test_ernie_gives_the_same_labels_on_both_engines():
    """The ERNIE demo model's ONNX twin (what OpenVINO reads) against its Paddle export."""
    from recipes.ernie_fields.data import generate
    from serving.engine.direct import run_op_direct

    texts = [text for text, _ in generate(20, seed=77)]
    answers = {}
    for engine in ("paddle", "openvino"):
        ((op, runner),) = _loaded("ernie.yml", {"ernie": {"engine": engine, "use_mkldnn": False}}).values()
        answers[engine] = [run_op_direct(op, runner, {"input": text}) for text in texts]
    for text, a, b in zip(texts, answers["paddle"], answers["openvino"]):
        assert a["label"] == b["label"], text
        assert abs(a["score"] - b["score"]) < 1e-4, text


def test_openvino_process_instances_answer_as_in_process_ones():
    """engine: openvino in instance_mode: process (isolation) reads crops exactly as in-process."""
    from serving.engine.direct import run_op_direct
    from tests.support import ocr_data

    crops = ocr_data.rec_crops()
    answers = {}
    for mode in ("thread", "process"):
        ((op, runner),) = _loaded("rec.yml", {"rec": {**PAIRS["openvino-fp32"], "instance_mode": mode}}).values()
        try:
            answers[mode] = [run_op_direct(op, runner, {"input": c.image}) for c in crops]
        finally:
            runner.close()
    assert [a["text"] for a in answers["thread"]] == [a["text"] for a in answers["process"]]
