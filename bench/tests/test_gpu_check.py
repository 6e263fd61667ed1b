"""bench.gpu_check without a GPU, a server or a model: the refusal without a GPU, the
configs it derives from configs/ocr_gpu.yml, the order of its measurements, its report,
the host check's import guard and what --prepare downloads. The whole check on a CPU
(real servers and models) is tests/e2e/test_gpu_check.py."""

from __future__ import annotations

import os
import sys

import pytest

from bench.lib.configs import load_repo_config
from bench.lib.gpu import configs, host, load, plan, reference, report
from bench.lib.gpu.cli import parser
from bench.lib.gpu.lines import line_check
from bench.lib.gpu.prepare import pip_download_argv
from tests.support import ocr_data
from tests.support.bench_runs import run_bench


def test_cuda_without_a_gpu_is_refused_with_one_line_and_exit_2(tmp_path):
    """A refusal, not a pass: exit 2, one line saying why, nothing written."""
    out = tmp_path / "out"
    proc = run_bench("bench.gpu_check", "--out", str(out), env={"CUDA_VISIBLE_DEVICES": ""}, timeout=120)
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("could not measure: --device cuda: ")
    assert "no CUDA GPU" in line or "torch is not installed" in line
    assert "--device cpu" in line
    assert not out.exists()


# det pads pages into size buckets on the GPU, so that pages of different sizes batch
DET_BATCHING = ("size_buckets", "max_padding_ratio")


def test_the_gpu_config_keeps_the_exact_profile_on_torch_on_gpu_0():
    """det and rec read as configs/ocr.yml reads (PaddleOCR's lines): det batches pages of
    different sizes only with the model masking their padding (docs/DESIGN_NOTES.md, "Det
    batches pages of any size, exactly")."""
    gpu, cpu = load_repo_config("ocr_gpu"), load_repo_config("ocr")
    for op in ("det", "rec"):
        mine = {k: v for k, v in gpu["op"][op]["params"].items() if op != "det" or k not in DET_BATCHING}
        exact = {k: v for k, v in cpu["op"][op]["params"].items() if op != "det" or k not in DET_BATCHING}
        assert mine == exact, op
        svc = gpu["op"][op]["local_service_conf"]
        assert (svc["engine"], svc["device_type"], svc["devices"], svc["precision"]) == ("torch", 1, "0", "fp32")
        assert svc["cuda_graphs"] and svc["instance_mode"] == "device_process"
        assert max(svc["run_batch_sizes"]) == svc["max_batch_size"]  # a bounded set of shapes to capture
        assert "tensorrt" not in svc
    det = gpu["op"]["det"]["params"]
    assert det["size_buckets"] and 0 < det["max_padding_ratio"] <= 0.5
    assert gpu["op"]["det"]["local_service_conf"]["mask_padding"] is True
    assert gpu["op"]["det"]["local_service_conf"]["max_batch_size"] == 8
    assert gpu["op"]["rec"]["local_service_conf"]["max_batch_size"] in (32, 64)


def test_cpu_variant_moves_every_op_to_the_cpu_and_nothing_else():
    shipped, cpu = configs.check_config("cuda"), configs.check_config("cpu")
    assert shipped == load_repo_config("ocr_gpu")
    for name, op in cpu["op"].items():
        svc = op["local_service_conf"]
        assert {k: svc[k] for k in configs.CPU_OPS} == configs.CPU_OPS
        rest = {k: v for k, v in svc.items() if k not in configs.CPU_OPS}
        assert rest == {k: v for k, v in shipped["op"][name]["local_service_conf"].items() if k not in configs.CPU_OPS}


def test_an_engine_override_drops_the_keys_another_engine_owns():
    ocr = load_repo_config("ocr")  # rec sets conv_kernels, an OpenVINO Runtime key
    assert ocr["op"]["rec"]["local_service_conf"]["conv_kernels"] == "jit"
    moved = configs.with_engine(ocr, "paddle")
    for op in moved["op"].values():
        assert op["local_service_conf"]["engine"] == "paddle"
        assert "conv_kernels" not in op["local_service_conf"]
    assert ocr["op"]["rec"]["local_service_conf"]["conv_kernels"] == "jit"  # the original is left alone


def test_an_engine_without_masked_padding_reads_det_at_paddleocr_s_size():
    cpu = configs.check_config("cpu")
    moved = configs.with_engine(cpu, "openvino")
    det = moved["op"]["det"]
    assert "mask_padding" not in det["local_service_conf"]
    assert {k: det["params"][k] for k in configs.UNPADDED_DET} == configs.UNPADDED_DET
    assert cpu["op"]["det"]["params"]["size_buckets"]  # the original is left alone
    for masking in ("torch", "onnxruntime"):
        kept = configs.with_engine(cpu, masking)["op"]["det"]
        assert kept["params"] == cpu["op"]["det"]["params"] and kept["local_service_conf"]["mask_padding"]


def test_an_engine_override_refuses_an_engine_that_cannot_run_the_device():
    from bench.lib.script import BenchError

    with pytest.raises(BenchError, match="does not run op det's device_type 1"):
        configs.with_engine(load_repo_config("ocr_gpu"), "openvino")
    with pytest.raises(BenchError, match="not an engine"):
        configs.with_engine(load_repo_config("ocr_gpu"), "tensorflow")


def test_a_cap_lowers_max_batch_sizes_above_it_only():
    capped = configs.check_config("cpu", max_batch_size=4)
    assert {n: op["local_service_conf"]["max_batch_size"] for n, op in capped["op"].items()} == {"det": 4, "rec": 4}
    assert configs.capped(capped, 100) == capped


def test_batching_off_differs_only_in_the_batch_sizes():
    on = configs.check_config("cpu")
    off = configs.batching_off(on)
    sizes = ("max_batch_size", "run_batch_sizes")
    for name in on["op"]:
        a, b = on["op"][name]["local_service_conf"], off["op"][name]["local_service_conf"]
        assert b["max_batch_size"] == 1 and b.get("run_batch_sizes") in (None, [1])
        assert {k: v for k, v in a.items() if k not in sizes} == {k: v for k, v in b.items() if k not in sizes}


def test_a_cap_keeps_the_run_batch_sizes_that_fit():
    capped = configs.capped(configs.check_config("cuda"), 4)
    det = capped["op"]["det"]["local_service_conf"]
    assert det["max_batch_size"] == 4 and det["run_batch_sizes"] == [1, 2, 4]


def test_the_rec_pipeline_is_the_rec_op_alone_with_rec_yml_params():
    data = configs.check_config("cuda")
    rec = configs.rec_pipeline(data)
    assert rec["name"] == configs.pipeline_names(data)["rec"] == "ocr_gpu_rec"
    assert list(rec["op"]) == ["rec"] and rec["op"]["rec"]["input_ops"] == []
    assert rec["op"]["rec"]["params"] == load_repo_config("rec")["op"]["rec"]["params"]
    assert rec["op"]["rec"]["local_service_conf"] == data["op"]["rec"]["local_service_conf"]


def test_a_repository_holds_both_pipelines_and_loads(tmp_path, monkeypatch):
    from serving.config import load_config

    monkeypatch.setenv("BENCH_CACHE", str(tmp_path))
    data = configs.with_engine(configs.check_config("cpu"), "openvino")
    folder = configs.served_repositories(data)["off"]
    assert sorted(os.listdir(folder)) == ["ocr.yml", "rec.yml"]
    ocr = load_config(configs.ocr_file(folder))
    assert {op.name: op.local_service_conf.max_batch_size for op in ocr.ops} == {"det": 1, "rec": 1}
    assert load_config(os.path.join(folder, "rec.yml")).name == "ocr_gpu_rec"


def test_levels_alternate_which_server_goes_first():
    assert [load.order(i) for i in range(3)] == [("on", "off"), ("off", "on"), ("on", "off")]
    assert [load.order(i, ["on", "off", "cpu"]) for i in range(2)] == [("on", "off", "cpu"), ("cpu", "off", "on")]


def test_the_cpu_reference_is_the_shipped_cpu_config_under_the_gpu_pipeline_s_name():
    """configs/ocr.yml as shipped (its engine, threads, batch sizes, PaddleOCR's params),
    only renamed, or moved to ONNX Runtime without the keys OpenVINO owns."""
    shipped = load_repo_config("ocr")
    same = reference.reference_config("openvino", "ocr_gpu")
    assert same["name"] == "ocr_gpu" and {**same, "name": shipped["name"]} == shipped
    moved = reference.reference_config("onnxruntime", "ocr_gpu", max_batch_size=4)
    for name, op in moved["op"].items():
        svc, mine = op["local_service_conf"], shipped["op"][name]["local_service_conf"]
        assert svc["engine"] == "onnxruntime" and svc["device_type"] == 0 and "conv_kernels" not in svc
        assert (svc["instance_num"], svc["thread_num"]) == (mine["instance_num"], mine["thread_num"])
        assert svc["max_batch_size"] == min(mine["max_batch_size"], 4)
        assert op["params"] == shipped["op"][name]["params"]


def test_auto_picks_the_best_cpu_engine_installed_and_none_skips_the_reference():
    from bench.lib.script import BenchError

    def only(*modules):
        return lambda module: module in modules

    assert reference.reference_engine("auto", only("openvino", "onnxruntime")) == "openvino"
    assert reference.reference_engine("auto", only("onnxruntime")) == "onnxruntime"
    assert reference.reference_engine("onnxruntime", only("openvino", "onnxruntime")) == "onnxruntime"
    assert reference.reference_engine("none", only()) is None
    with pytest.raises(BenchError, match="openvino or onnxruntime is not installed here"):
        reference.reference_engine("auto", only("torch"))
    with pytest.raises(BenchError, match="--cpu-reference openvino: openvino is not installed"):
        reference.reference_engine("openvino", only("onnxruntime"))
    assert parser().parse_args([]).cpu_reference == "auto"


def test_the_reference_takes_two_physical_cores_where_the_host_has_them():
    pairs = {0: {0, 8}, 8: {0, 8}, 1: {1, 9}, 9: {1, 9}}  # 2 cores x 2 threads, as Linux numbers them

    def siblings_of(cpu):
        return pairs.get(cpu, {cpu})

    assert reference.distinct_cores([0, 1, 8, 9], siblings_of=siblings_of) == [0, 1]
    assert reference.distinct_cores([0, 8], siblings_of=siblings_of) == [0, 8]  # one core: both its threads
    assert reference.distinct_cores([3], siblings_of=siblings_of) == [3]
    assert reference.describe("onnxruntime", [0, 1], siblings_of)["physical_cores"] == 2
    assert reference.describe("onnxruntime", [0, 8], siblings_of)["physical_cores"] == 1
    assert reference.parse_cpu_list("0-2,8\n") == [0, 1, 2, 8]


def test_the_reference_serves_only_the_ocr_pipeline(tmp_path, monkeypatch):
    from serving.config import load_config

    monkeypatch.setenv("BENCH_CACHE", str(tmp_path))
    data = reference.reference_config("onnxruntime", "ocr_gpu")
    folder = configs.write_repository(data, reference.KEY, with_rec=False)
    assert os.listdir(folder) == ["ocr.yml"]
    assert load_config(configs.ocr_file(folder)).name == "ocr_gpu"


def test_a_served_process_started_on_cpus_runs_there_and_this_one_keeps_its_own():
    import subprocess

    from bench.lib.server import started_on

    mine = os.sched_getaffinity(0)
    one = min(mine)
    with started_on([one]):
        child = subprocess.run(
            [sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
            capture_output=True,
            text=True,
            check=True,
        )
    assert child.stdout.strip() == str([one])
    assert os.sched_getaffinity(0) == mine


def test_level_summary_keeps_rate_latency_errors_and_batch_sizes():
    result = {
        "qps": 12.345,
        "latency_ms": {"p50": 10.0, "p90": 20.0, "p99": 30.123},
        "ok": 100,
        "failed": 1,
        "errors": {"503": 1},
        "op_stats": {"rec": {"mean_batch_size": 3.5}},
    }
    assert load.level_summary(result) == {
        "req_per_s": 12.35,
        "p50_ms": 10.0,
        "p99_ms": 30.12,
        "ok": 100,
        "failed": 1,
        "errors": {"503": 1},
        "mean_batch": {"rec": 3.5},
    }


def test_plan_levels_override_and_quick_is_small():
    assert plan.FULL.with_levels("1,8").levels == (1, 8)
    assert plan.FULL.with_levels("").levels == plan.FULL.levels == (1, 8, 32, 64)
    assert plan.QUICK.levels == (1, 8) and plan.QUICK.rec_sizes == (1, 2, 4) and len(plan.QUICK.pages) == 2
    assert plan.QUICK.max_batch_size == max(plan.QUICK.rec_sizes) and plan.FULL.max_batch_size is None
    assert max(plan.FULL.det_sizes) == load_repo_config("ocr_gpu")["op"]["det"]["local_service_conf"]["max_batch_size"]
    assert max(plan.FULL.rec_sizes) == load_repo_config("ocr_gpu")["op"]["rec"]["local_service_conf"]["max_batch_size"]


def test_paddleocr_own_lines_pass_the_line_check_and_missing_ones_fail():
    pages = (4, 8)
    reference = ocr_data.reference("sample")
    answers = [[{"text": ln.text, "score": ln.score, "box": ln.box} for ln in reference[i]] for i in pages]
    checked = line_check(pages, answers)
    assert checked["ok"] and checked["rate"] == 1.0 and checked["matched"] == checked["lines"] == 14
    short = line_check(pages, [answers[0], answers[1][:-1]])
    assert not short["ok"] and short["matched"] == 13 and len(short["misses"]) == 1


def fake_doc(lines_ok: bool = True) -> dict:
    point = {"batch": 1, "ms": 2.0, "ms_per_item": 2.0}
    level = {"req_per_s": 10.0, "p99_ms": 5.0, "failed": 0, "mean_batch": {"det": 1.0, "rec": 3.5}}
    lines = {"pages": 2, "lines": 14, "matched": 14, "rate": 1.0, "min_match": 0.98, "ok": lines_ok}
    return {
        "config": "configs/ocr_gpu.yml",
        "engine": "as configured",
        "quick": True,
        "environment": {"device": "cpu", "torch": "2.13.0", "commit": "abc"},
        "lines": {"on": lines, "off": lines},
        "curves": {
            op: {"points": [point], "input_per_item": [3, 48, 320], "warmup": 1, "repeats": 3} for op in ("det", "rec")
        },
        "load": {"ocr": [{"clients": 1, "on": level, "off": {**level, "req_per_s": 5.0}}], "rec": []},
        "steps_s": {"curves": 1.0},
        "elapsed_s": 12.0,
    }


def test_markdown_has_every_section_and_the_on_off_ratio():
    page = report.markdown(fake_doc())
    for heading in ("# GPU check", "## Lines", "## Batch curves", "## Served ocr", "## Served rec"):
        assert heading in page
    assert "| 1 | 10 | 5 | 5 | 5 | 2 | 3.5 | 0 |" in page
    assert "| batch | det ms/call | det ms/item | rec ms/call | rec ms/item |" in page
    assert "FAILED" in report.markdown(fake_doc(lines_ok=False))
    assert "CPU reference" not in page


def test_markdown_puts_the_cpu_reference_beside_the_gpu_servers():
    doc = fake_doc()
    level = doc["load"]["ocr"][0]["on"]
    doc["load"]["ocr"][0]["cpu"] = {**level, "req_per_s": 0.5, "p99_ms": 900.0, "failed": 2}
    doc["lines"]["cpu"] = doc["lines"]["on"]
    doc["reference"] = reference.describe("onnxruntime", [0, 1], lambda cpu: {cpu})
    page = report.markdown(doc)
    assert "on onnxruntime, pinned to CPUs 0, 1 (2 physical cores)" in page
    assert "## Served ocr: closed-loop clients, batching on and off and the CPU reference" in page
    assert (
        "| clients | on req/s | on p99 ms | off req/s | off p99 ms | cpu req/s | cpu p99 ms | on/off | on/cpu |" in page
    )
    assert "| 1 | 10 | 5 | 5 | 5 | 0.5 | 900 | 2 | 20 | 3.5 | 0 / 0 / 2 |" in page
    assert "| CPU reference, all pages at once | 2 | 14 | 14 |" in page
    assert report.over_reference(doc["load"]["ocr"]) == {1: 20.0}
    assert report.over_reference([{"clients": 8, "on": {"error": "x"}, "cpu": level}]) == {8: None}


def test_the_host_guard_refuses_what_neither_the_host_has_nor_travels():
    finder = host.HostFinder(frozenset({"numpy"}))
    assert finder.find_spec("json") is None  # the standard library
    assert finder.find_spec("serving.config") is None  # the checkout
    assert finder.find_spec("numpy.linalg") is None
    with pytest.raises(ImportError, match="not on the GPU host"):
        finder.find_spec("yaml")
    assert [r["distribution"].lower() for r in finder.refused.values()] == ["pyyaml"]


def test_the_travelling_wheels_are_not_on_the_host_but_one():
    on_host = host.host_packages()
    assert {"torch", "numpy", "onnx", "werkzeug", "pyyaml"} <= on_host
    assert not {"paddlepaddle", "openvino", "flask", "pydantic"} & on_host
    assert set(host.TRAVELLING) & on_host == {"typing-extensions"}


def test_prepare_downloads_exactly_the_travelling_wheels_for_cpython_3_12():
    argv = pip_download_argv("W")
    assert argv[:2] == ["pip", "download"]
    for flag in ("--no-deps", "--only-binary=:all:"):
        assert flag in argv
    assert argv[argv.index("--python-version") + 1] == "3.12"
    pinned = [a for a in argv if "==" in a]
    assert [p.split("==")[0] for p in pinned] == list(host.TRAVELLING)


def test_a_level_that_measures_nothing_is_recorded_and_the_rest_still_run(monkeypatch):
    from bench.lib.script import BenchError

    calls = []

    def fake_loop(url, name, payloads, clients, duration_s, warmup_s):
        calls.append((url, clients))
        if clients == 8 and url == "off":
            raise BenchError("no request to off/ocr succeeded (errors: {})")
        return {"qps": 1.0, "latency_ms": {"p50": 1.0, "p99": 2.0}, "ok": 3, "failed": 0, "errors": {}}

    monkeypatch.setattr(load, "closed_loop", fake_loop)
    rows = load.levels({"on": "on", "off": "off"}, "ocr", [{}], [1, 8, 32], 1.0, 0.0)
    assert calls == [("on", 1), ("off", 1), ("off", 8), ("on", 8), ("on", 32), ("off", 32)]
    assert rows[1]["off"] == {"error": "no request to off/ocr succeeded (errors: {})"}
    assert rows[1]["on"]["req_per_s"] == 1.0 and rows[2]["off"]["ok"] == 3
    page = report.load_table(rows)
    assert "| 8 | 1 | 2 | - | - | - | - | 0 / no request to off/ocr succeeded (errors: {}) |" in page


def test_a_run_that_fails_midway_writes_what_it_measured_and_exits_2(tmp_path, monkeypatch):
    from bench.lib.gpu import cli, device
    from bench.lib.script import BenchError

    def half_run(args, steps, doc):
        doc["curves"] = fake_doc()["curves"]
        doc["steps_s"]["curves"] = 1.0
        raise RuntimeError("the OCR ops need PaddleOCR 2.10\nTraceback ...")

    monkeypatch.setattr(sys, "argv", ["gpu_check", "--device", "cpu", "--quick", "--out", str(tmp_path)])
    env = {"device": "cpu", "commit": "abc", "torch": "2", "cuda": None, "nproc": 2, "cpu": "x", "python": "3"}
    monkeypatch.setattr(device, "environment", lambda *a: env)
    monkeypatch.setattr(cli, "run_check", half_run)
    with pytest.raises(BenchError, match=r"^RuntimeError: the OCR ops need PaddleOCR 2.10 \(what was measured"):
        cli.main()
    page = (tmp_path / "gpu_check.md").read_text(encoding="utf-8")
    assert "## Batch curves" in page and "## Lines" not in page
    assert "**Stopped:** RuntimeError: the OCR ops need PaddleOCR 2.10" in page
    assert "(curves 1 s)" in page


def test_instance_mode_puts_every_op_in_that_mode():
    per_op = configs.check_config("cpu", instance_mode="process")
    assert {op["local_service_conf"]["instance_mode"] for op in per_op["op"].values()} == {"process"}
    assert parser().parse_args(["--instance-mode", "process"]).instance_mode == "process"


def test_cpu_engines_takes_the_median_of_each_round_s_ratio_to_the_first_engine():
    from bench.cpu_engines import median_ratios

    def row(clients, ov, ort):
        return {"clients": clients, "openvino": {"req_per_s": ov}, "onnxruntime": {"req_per_s": ort}}

    rounds = [
        [row(1, 4.0, 2.0), row(8, 8.0, 6.0)],
        [row(1, 5.0, 3.0), row(8, 8.0, 2.0)],
        [row(1, 4.0, 1.0), row(8, 7.0, 7.0)],
    ]
    summary = median_ratios(rounds, ["openvino", "onnxruntime"])
    assert summary[0] == {
        "clients": 1,
        "openvino": 4.0,
        "onnxruntime": 2.0,
        "openvino/openvino": 1.0,
        "onnxruntime/openvino": 0.5,
    }
    assert summary[1]["onnxruntime/openvino"] == 0.75 and summary[1]["onnxruntime"] == 6.0
    rounds[2][1]["onnxruntime"] = {"error": "no request succeeded"}
    assert median_ratios(rounds, ["openvino", "onnxruntime"])[1]["onnxruntime/openvino"] is None


def fake_gpus(utilization: int = 0, used: int = 0):
    from serving.runners.gpus import open_gpus
    from tests.support.fake_nvml import FakeGpu, FakeNvml

    nvml = FakeNvml([FakeGpu("NVIDIA H100", utilization=utilization, used=used)])
    return nvml, open_gpus(nvml)


def test_the_sampler_reads_the_gpus_from_the_end_of_warm_up_to_the_end_of_the_level():
    from bench.lib.gpu.busy import GpuSampler

    nvml, gpus = fake_gpus(utilization=5, used=1 << 30)
    waits = []
    script = iter([(60, 3 << 30), (40, 2 << 30)])  # what the GPU reads after each wait

    def wait(event, seconds):
        waits.append(seconds)
        try:
            nvml.gpus[0].utilization, nvml.gpus[0].used = next(script)
        except StopIteration:
            return True  # the level ended
        return False

    with GpuSampler(gpus, delay_s=2.0, interval_s=0.1, wait=wait) as sampler:
        pass
    assert waits == [2.0, 0.1, 0.1]  # the warm-up, then between readings
    assert sampler.summary() == {
        "gpu0": {"util_mean_pct": 50.0, "util_max_pct": 60.0, "memory_max_mib": 3072, "samples": 2}
    }


def test_no_gpus_or_a_level_shorter_than_its_warm_up_samples_nothing():
    from bench.lib.gpu.busy import GpuSampler, busiest, gpus_for

    with GpuSampler(None) as idle:
        pass
    assert idle.summary() is None and busiest(None) is None
    _, gpus = fake_gpus(utilization=50)
    with GpuSampler(gpus, delay_s=600) as early:
        pass  # left at once: the real wait returns as the level ends
    assert early.summary() is None
    assert gpus_for("cpu") is None


def test_each_level_records_how_busy_the_gpu_was_and_the_table_shows_it(monkeypatch):
    import time

    nvml, gpus = fake_gpus(utilization=75, used=5 << 30)

    def answered(*args):
        return {"qps": 8.0, "latency_ms": {"p50": 1.0, "p99": 2.0}, "ok": 3, "failed": 0, "errors": {}}

    def level_until_the_gpu_is_read(*args):
        deadline = time.monotonic() + 30
        while "nvmlDeviceGetUtilizationRates" not in nvml.calls and time.monotonic() < deadline:
            time.sleep(0.01)
        nvml.calls.clear()
        return answered()

    monkeypatch.setattr(load, "closed_loop", level_until_the_gpu_is_read)
    rows = load.levels({"on": "on", "off": "off"}, "ocr", [{}], [1], 1.0, 0.0, gpus=gpus)
    for server in ("on", "off"):
        assert rows[0][server]["gpu"]["gpu0"]["util_mean_pct"] == 75.0
        assert rows[0][server]["gpu"]["gpu0"]["memory_max_mib"] == 5120
    page = report.load_table(rows)
    assert "| on/off | on GPU busy % | off GPU busy % | rec batch (on) | failed |" in page
    assert "| 1 | 8 | 2 | 8 | 2 | 1 | 75 | 75 | - | 0 |" in page
    monkeypatch.setattr(load, "closed_loop", answered)
    assert "GPU busy" not in report.load_table(load.levels({"on": "on"}, "ocr", [{}], [1], 1.0, 0.0))
