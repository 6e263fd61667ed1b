"""bench.gpu_probe without a GPU or a model: the refusal without a GPU, the steps' order, a step
that fails or runs past its budget recorded while the next one runs (the JSON rewritten after
each), the step process's own error record, the plan's sizes, the trace counts and the page.
The whole probe on a CPU (real models and servers) is tests/e2e/test_gpu_probe.py."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import types

import numpy as np
import pytest

from bench.lib.gpu import probe_cli, probe_plan, probe_report, probe_run, probe_step
from bench.lib.gpu.probe_models import compared, difference
from bench.lib.gpu.probe_profile import trace_summary
from bench.lib.script import BenchError
from tests.support.bench_runs import run_bench


def test_cuda_without_a_gpu_is_refused_with_one_line_and_exit_2(tmp_path):
    out = tmp_path / "out"
    proc = run_bench("bench.gpu_probe", "--out", str(out), env={"CUDA_VISIBLE_DEVICES": ""}, timeout=120)
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("could not measure: --device cuda: ") and "--device cpu" in line
    assert not out.exists()


def test_the_steps_run_in_the_issue_s_order():
    assert probe_plan.STEPS == ("versions", "parity", "precision", "profile", "curves", "served")
    assert set(probe_step.STEP_MODULES) == set(probe_plan.STEPS)
    for plan in (probe_plan.FULL, probe_plan.QUICK):
        assert set(plan.budgets_s) == set(probe_plan.STEPS)


def test_the_full_plan_measures_what_the_issue_asks_within_6_minutes():
    full = probe_plan.FULL
    assert full.det_sizes == (1, 2, 4, 8) and full.curve_det_side == 960
    assert full.rec_sizes == (1, 8, 32, 64, 128) and full.rec_widths == (320, 960)
    assert full.levels == (1, 32) and full.profile_rec_batch == 8
    assert sum(full.budgets_s.values()) <= full.total_s <= 360
    quick = probe_plan.QUICK
    assert max(quick.rec_sizes) <= 4 and len(quick.rec_widths) == 1 and quick.levels == (1, 2)


def test_a_timeout_option_overrides_one_step_s_budget_and_refuses_unknown_steps():
    assert probe_cli.budgets(["parity=12", "served=30.5"]) == {"parity": 12.0, "served": 30.5}
    plan = probe_plan.FULL.with_budgets({"parity": 12.0})
    assert plan.budgets_s["parity"] == 12.0 and plan.budgets_s["curves"] == probe_plan.FULL.budgets_s["curves"]
    for bad in ("warp=3", "parity", "parity="):
        with pytest.raises(BenchError, match="STEP=SECONDS"):
            probe_cli.budgets([bad])


# fake steps, each a python -c process writing its result file as a step process does
WRITE = "import json, sys; json.dump({RESULT}, open(sys.argv[1], 'w'))"
FAKE_STEPS = {
    "versions": WRITE.replace("{RESULT}", "{'python': '3'}"),
    "parity": WRITE.replace("{RESULT}", "{'det': {'max_abs_diff': 0.0}}") + "; raise RuntimeError('det refused')",
    "precision": WRITE.replace("{RESULT}", "{'fp16': {'partial': True}}") + "; import time; time.sleep(60)",
    "profile": WRITE.replace("{RESULT}", "{'det': {'kernels': 3}}"),
}
FAKE_BUDGETS = {"versions": 30.0, "parity": 30.0, "precision": 2.0, "profile": 30.0}


def fake_argv(name: str, result_file: str) -> list[str]:
    return [sys.executable, "-c", FAKE_STEPS[name], result_file]


def test_a_failing_and_a_hanging_step_are_recorded_and_the_next_steps_still_run(tmp_path):
    seen = []
    records = probe_run.run_steps(
        list(FAKE_STEPS), FAKE_BUDGETS, 120.0, fake_argv, str(tmp_path), lambda n, r: seen.append((n, r["status"]))
    )
    assert seen == [("versions", "ok"), ("parity", "failed"), ("precision", "timeout"), ("profile", "ok")]
    assert records["versions"]["result"] == {"python": "3"}
    failed = records["parity"]
    assert failed["error"] == "RuntimeError: det refused" and failed["exit"] == 1
    assert failed["result"] == {"det": {"max_abs_diff": 0.0}}  # what it wrote before failing is kept
    hung = records["precision"]
    assert hung["result"] == {"fp16": {"partial": True}} and "budget of 2 s" in hung["error"]
    assert 2.0 <= hung["seconds"] < 2.0 + probe_run.GRACE_S
    assert records["profile"]["result"] == {"det": {"kernels": 3}}


def test_a_step_with_no_time_left_in_the_run_is_skipped(tmp_path):
    names = ["versions", "precision", "profile"]  # precision hangs until its 2 s are up
    records = probe_run.run_steps(names, FAKE_BUDGETS, 6.5, fake_argv, str(tmp_path), lambda *a: None)
    assert [records[n]["status"] for n in names] == ["ok", "timeout", "skipped"]
    assert "left of the run's 6 s" in records["profile"]["error"]


def test_the_json_and_page_are_rewritten_after_every_step(tmp_path, monkeypatch):
    out = tmp_path / "out"
    written = []
    write = probe_cli.write_outputs

    def spy(folder, doc, started):
        write(folder, doc, started)
        with open(os.path.join(folder, "gpu_probe.json"), encoding="utf-8") as f:
            written.append({name: r["status"] for name, r in json.load(f)["steps"].items()})

    monkeypatch.setattr(probe_cli, "write_outputs", spy)
    monkeypatch.setattr(probe_cli, "step_argv", lambda args: fake_argv)
    argv = ["gpu_probe", "--device", "cpu", "--quick", "--out", str(out), "--step", "versions,parity,precision,profile"]
    monkeypatch.setattr(sys, "argv", [*argv, "--timeout", "precision=2"])
    assert probe_cli.main() == 1  # a step failed: the run says so
    assert written == [
        {},
        {"versions": "ok"},
        {"versions": "ok", "parity": "failed"},
        {"versions": "ok", "parity": "failed", "precision": "timeout"},
        {"versions": "ok", "parity": "failed", "precision": "timeout", "profile": "ok"},
    ]
    page = (out / "gpu_probe.md").read_text(encoding="utf-8")
    assert "| parity | failed |" in page and "RuntimeError: det refused" in page and "| precision | timeout |" in page


def run_fake_step(tmp_path, monkeypatch, body):
    module = types.ModuleType("fake_probe_step")
    module.run = body  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fake_probe_step", module)
    monkeypatch.setattr(probe_step, "STEP_MODULES", {"parity": "fake_probe_step"})
    result = tmp_path / "parity.json"
    code = probe_step.main(["parity", "--device", "cpu", "--quick", "--out", str(tmp_path), "--result", str(result)])
    return code, json.loads(result.read_text(encoding="utf-8"))


def test_a_step_process_writes_what_it_measured_and_its_error(tmp_path, monkeypatch):
    def fails(ctx):
        ctx.put("det", {"max_abs_diff": 0.5})
        raise ValueError("rec refused\nsecond line")

    code, record = run_fake_step(tmp_path, monkeypatch, fails)
    assert code == 1 and record == {"det": {"max_abs_diff": 0.5}, "error": "ValueError: rec refused"}


def test_a_step_process_stopped_past_its_budget_says_so(tmp_path, monkeypatch):
    """SIGTERM (what the runner sends past the budget) unwinds the step: its ``finally`` runs."""
    unwound = []

    def hangs(ctx):
        ctx.put("det", {"max_abs_diff": 0.5})
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(30)
        finally:
            unwound.append(True)

    before = signal.getsignal(signal.SIGTERM)
    try:
        code, record = run_fake_step(tmp_path, monkeypatch, hangs)
    finally:
        signal.signal(signal.SIGTERM, before)
    assert code == probe_step.STOPPED_EXIT and unwound == [True]
    assert record == {"det": {"max_abs_diff": 0.5}, "error": "stopped: past its time budget"}


def test_difference_takes_the_worst_output_and_counts_non_finite_values():
    ref = [np.array([1.0, 2.0, 3.0], np.float32), np.array([[10.0]], np.float32)]
    out = [np.array([1.0, 2.5, np.nan], np.float32), np.array([[9.0]], np.float32)]
    assert difference(ref, out) == {"max_abs_diff": 1.0, "mean_abs_diff": 0.5, "max_abs_ref": 10.0, "nonfinite": 1}


def test_det_is_also_compared_on_its_thresholded_map():
    ref, out = [np.array([[0.1, 0.2, 0.9, 0.31]])], [np.array([[0.1, 0.2, 0.9, 0.29]])]
    assert compared("det", ref, out)["mask_disagreement"] == 0.25
    assert "mask_disagreement" not in compared("rec", ref, out)


def test_trace_summary_counts_kernels_copies_and_synchronisations():
    trace = {
        "traceEvents": [
            {"ph": "X", "cat": "kernel", "name": "conv", "dur": 100.0},
            {"ph": "X", "cat": "kernel", "name": "relu", "dur": 50.0},
            {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pinned -> Device)", "dur": 20.0},
            {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pageable)", "dur": 30.0},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "dur": 5.0},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "dur": 1.0},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "dur": 1.0},
            {"ph": "X", "cat": "cpu_op", "name": "aten::conv2d", "dur": 300.0},
            {"ph": "i", "cat": "kernel", "name": "an instant, not a call"},
        ]
    }
    summary = trace_summary(trace)
    assert (summary["kernels"], summary["kernel_ms_sum"], summary["memcpy_ms_sum"]) == (2, 0.15, 0.05)
    assert summary["memcpy"] == {"Memcpy HtoD (Pinned -> Device)": 1, "Memcpy DtoH (Device -> Pageable)": 1}
    assert summary["sync_calls"]["cudaStreamSynchronize"] == 1 and summary["sync_calls"]["cudaDeviceSynchronize"] == 0
    assert summary["memcpy_calls"] == {"cudaMemcpyAsync": 1} and summary["cpu_ops"] == 1


def test_on_the_cpu_fp16_and_graphs_are_skipped_with_a_reason_and_bf16_runs():
    from bench.lib.gpu import probe_curves, probe_precision

    assert "no CUDA" in probe_precision.skipped("cpu", "fp16")
    assert probe_precision.skipped("cpu", "bf16") is None and probe_precision.skipped("cuda", "fp16") is None
    assert "no CUDA" in probe_curves.skipped("cpu", "fp32", True) and "no CUDA" in probe_curves.skipped(
        "cpu", "fp16", False
    )
    assert probe_curves.skipped("cpu", "fp32", False) is None and probe_curves.skipped("cuda", "fp16", True) is None


def test_prepare_carries_the_four_models_within_40_mib(monkeypatch):
    from bench.lib.gpu import probe_prepare

    calls = []
    monkeypatch.setattr(probe_prepare, "prepare_handover", lambda *a: calls.append(a) or 0)
    assert probe_prepare.prepare("DIR") == 0
    ((folder, models, limit),) = calls
    assert folder == "DIR" and limit == 40
    assert [os.path.basename(m) for m in models] == [
        "ch_PP-OCRv4_det_infer",
        "ch_PP-OCRv4_rec_infer",
        "ch_ppocr_mobile_v2_cls_infer",
        "model",
    ]


def test_the_page_shows_a_partial_run():
    doc = {
        "device": "cuda",
        "quick": False,
        "elapsed_s": 70.0,
        "steps": {
            "versions": {"status": "ok", "seconds": 3.0, "budget_s": 20, "result": {"torch": "2.11", "gpu": "H100"}},
            "curves": {
                "status": "timeout",
                "seconds": 85.0,
                "budget_s": 85,
                "error": "stopped after its budget of 85 s",
                "result": {
                    "det": {
                        "fp32_graphs_off": {"points": [{"batch": 1, "side": 960, "ms": 2.0, "items_per_s": 500.0}]},
                        "fp16_graphs_on": {"skipped": "no CUDA"},
                    },
                },
            },
        },
    }
    page = probe_report.markdown(doc)
    assert "| curves | timeout | 85 | 85 | stopped after its budget of 85 s |" in page
    assert "| det | fp32_graphs_off | 1 (960x960) | 2 | 500 | - |" in page and "skipped: no CUDA" in page
    assert "| gpu | H100 |" in page


def test_a_shape_that_fails_is_its_point_and_the_next_shapes_still_run(tmp_path, monkeypatch):
    from contextlib import contextmanager

    from bench.lib.gpu import probe_curves

    class Runner:
        graphs = None

        def run(self, feed):
            if feed["x"].shape[0] == 2:
                raise RuntimeError("CUDA out of memory\nmore")
            return [feed["x"]]

    @contextmanager
    def fake_runner(*args):
        yield Runner()

    monkeypatch.setattr(probe_curves, "runner", fake_runner)
    ctx = probe_step.StepContext("cpu", probe_plan.QUICK, str(tmp_path), str(tmp_path / "curves.json"))
    probe_curves.run(ctx)
    written = json.loads((tmp_path / "curves.json").read_text(encoding="utf-8"))
    points = written["det"]["fp32_graphs_off"]["points"]
    assert [p["batch"] for p in points] == [1, 2] and points[0]["ms"] > 0
    assert points[1] == {"batch": 2, "side": 320, "error": "RuntimeError: CUDA out of memory"}
    assert [p["batch"] for p in written["rec"]["fp32_graphs_off"]["points"]] == [1, 4]
    assert "| det | fp32_graphs_off | 2 (320x320) | error: RuntimeError: CUDA out of memory |" in probe_report.curves(
        written
    )
