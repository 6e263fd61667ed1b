"""``python -m bench.gpu_check --device cpu --quick``: the GPU check's every step on the CPU,
with real servers and the real models: lines of two committed pages against PaddleOCR's,
det's and rec's batch curves, the served OCR and rec pipelines at 1 and 8 clients with
batching on and off, and the OCR pipeline of the CPU reference (configs/ocr.yml on two
cores) beside them; its JSON and markdown hold those values. (Without a GPU,
``--device cuda`` is refused: bench/tests/test_gpu_check.py.)"""

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

# the plan of --quick (bench/lib/gpu/plan.py)
PAGES, LINES, LEVELS, SIZES = 2, 14, [1, 8], [1, 2, 4]


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpu-check")
    doc, stdout = quick_cpu_run("bench.gpu_check", out, "gpu_check")
    return doc, (out / "gpu_check.md").read_text(encoding="utf-8"), stdout


def test_lines_of_every_server_are_paddleocr_s(result):
    doc, _, _ = result
    assert set(doc["lines"]) == {"on", "off", "cpu"}
    for checked in doc["lines"].values():
        assert (checked["pages"], checked["lines"]) == (PAGES, LINES)
        assert checked["ok"] and checked["matched"] >= 0.98 * LINES and checked["rate"] >= checked["min_match"]


def test_curves_have_a_time_per_batch_size(result):
    doc, _, _ = result
    for op in ("det", "rec"):
        points = doc["curves"][op]["points"]
        assert [p["batch"] for p in points] == SIZES
        assert all(p["ms"] > 0 and p["ms_per_item"] == pytest.approx(p["ms"] / p["batch"], abs=1e-2) for p in points)
    assert doc["curves"]["rec"]["input_per_item"][:2] == [3, 48]


def test_both_pipelines_ran_with_batching_on_and_off_at_each_level(result):
    doc, _, _ = result
    assert set(doc["load"]) == {"ocr", "rec"}
    for pipeline, rows in doc["load"].items():
        assert [r["clients"] for r in rows] == LEVELS
        servers = ("on", "off", "cpu") if pipeline == "ocr" else ("on", "off")
        for row in rows:
            assert set(row) == {"clients", "first", *servers}
            for batching in servers:
                level = row[batching]
                # every client's requests are counted (no warm-up), but a short window on 2 cores
                # may close before 8 clients' first OCR answers: the rate can be 0 there
                assert level["ok"] >= row["clients"] and level["failed"] == 0 and level["req_per_s"] >= 0
                assert level["p99_ms"] >= level["p50_ms"] > 0
    assert doc["rec_crops"] >= LINES  # det's crops of the pages feed the rec pipeline


def test_the_cpu_reference_is_configs_ocr_yml_on_two_cores(result):
    import os

    doc, page, _ = result
    ref = doc["reference"]
    assert ref["config"] == "configs/ocr.yml" and ref["engine"] in ("openvino", "onnxruntime")
    assert len(ref["cpus"]) == min(2, len(os.sched_getaffinity(0))) and ref["physical_cores"] >= 1
    assert set(ref["ocr_on_over_cpu"]) == {str(n) for n in LEVELS}
    assert f"on {ref['engine']}, pinned to CPUs" in page and "| on/off | on/cpu |" in page


def test_environment_and_the_ops_as_run(result):
    doc, _, stdout = result
    env = doc["environment"]
    assert env["device"] == "cpu" and env["torch"] and env["commit"] != "unknown"
    assert all(svc["device_type"] == 0 and svc["engine"] == "torch" for svc in doc["ops"].values())
    assert stdout.splitlines()[0].startswith("CPU; torch ")


def test_markdown_shows_the_same_run(result):
    doc, page, _ = result
    assert page.startswith("# GPU check: configs/ocr_gpu.yml on cpu")
    for heading in ("## Lines", "## Batch curves", "## Served ocr", "## Served rec"):
        assert heading in page
    assert f"| batching on, all pages at once | {PAGES} | {LINES} |" in page
