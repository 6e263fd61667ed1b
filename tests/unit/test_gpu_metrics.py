"""GPU metrics against a fake NVML (tests/support/fake_nvml.py): what each GPU
exports and how it is labelled, a failing GPU left out (and said once), no
NVML giving no GPU families, and a scrape that never raises; and the one
placement function that both the runners and ``batchline_op_instance_device`` use."""

from __future__ import annotations

import logging
import sys

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from serving.batching.metrics import InstanceDevices, Metrics
from serving.config.schema import LocalServiceConf
from serving.runners.factory import create_runners
from serving.runners.gpus import open_gpus
from serving.runners.placement import device_name, device_of, gpu_of
from tests.support.fake_nvml import FakeGpu, FakeNvml

GPU_FAMILIES = {
    "batchline_gpu_utilization_ratio",
    "batchline_gpu_memory_used_bytes",
    "batchline_gpu_memory_total_bytes",
}
GIB = 1 << 30


def scrape(metrics: Metrics) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """Family name -> {sorted labels: value} of one render."""
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(metrics.render().decode()):
        out[family.name] = {tuple(sorted(s.labels.items())): s.value for s in family.samples}
    return out


def two_gpus(second_fails: str | None = None) -> FakeNvml:
    """An H200 and an L4; ``second_fails``: an NVML call that raises for the L4."""
    fails = set() if second_fails is None else {second_fails}
    return FakeNvml(
        [
            FakeGpu("NVIDIA H200", utilization=37, used=2 * GIB, total=141 * GIB, uuid="GPU-aaaa"),
            FakeGpu("NVIDIA L4", utilization=100, used=0, total=24 * GIB, uuid="GPU-bbbb", fail=fails),
        ]
    )


def gpu_labels(index: int, name: str, uuid: str) -> tuple[tuple[str, str], ...]:
    return (("gpu", str(index)), ("name", name), ("uuid", uuid))


def test_each_gpu_exports_utilisation_as_a_ratio_and_memory_in_bytes_labelled_by_index_name_uuid():
    families = scrape(Metrics(gpus=open_gpus(two_gpus())))
    h200, l4 = gpu_labels(0, "NVIDIA H200", "GPU-aaaa"), gpu_labels(1, "NVIDIA L4", "GPU-bbbb")
    assert families["batchline_gpu_utilization_ratio"] == {h200: pytest.approx(0.37), l4: 1.0}
    assert families["batchline_gpu_memory_used_bytes"] == {h200: 2 * GIB, l4: 0}
    assert families["batchline_gpu_memory_total_bytes"] == {h200: 141 * GIB, l4: 24 * GIB}


def test_values_are_read_at_scrape_time_not_at_start():
    nvml = two_gpus()
    metrics = Metrics(gpus=open_gpus(nvml))
    nvml.gpus[0].utilization, nvml.gpus[0].used = 90, 5 * GIB
    families = scrape(metrics)
    h200 = gpu_labels(0, "NVIDIA H200", "GPU-aaaa")
    assert families["batchline_gpu_utilization_ratio"][h200] == pytest.approx(0.9)
    assert families["batchline_gpu_memory_used_bytes"][h200] == 5 * GIB


def test_names_older_pynvml_returns_as_bytes_are_text():
    nvml = FakeNvml([FakeGpu("Tesla T4", uuid="GPU-cccc")], names_as_bytes=True)
    families = scrape(Metrics(gpus=open_gpus(nvml)))
    assert list(families["batchline_gpu_memory_total_bytes"]) == [gpu_labels(0, "Tesla T4", "GPU-cccc")]


@pytest.mark.parametrize(
    "call",
    ["nvmlDeviceGetHandleByIndex", "nvmlDeviceGetUtilizationRates", "nvmlDeviceGetMemoryInfo", "nvmlDeviceGetUUID"],
)
def test_a_gpu_whose_call_fails_is_left_out_and_said_once(call, caplog):
    metrics = Metrics(gpus=open_gpus(two_gpus(second_fails=call)))
    with caplog.at_level(logging.WARNING, logger="serving.runners.gpus"):
        for _ in range(3):
            families = scrape(metrics)
            for name in GPU_FAMILIES:
                assert [dict(labels)["gpu"] for labels in families[name]] == ["0"], name
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and warnings[0].startswith(f"GPU 1: {call} failed"), warnings


def test_the_scrape_never_raises_whatever_nvml_raises():
    nvml = two_gpus()
    metrics = Metrics(gpus=open_gpus(nvml))

    def broken(handle):
        raise RuntimeError("not an NVMLError: a binding that does not match the driver")

    nvml.nvmlDeviceGetMemoryInfo = broken  # every GPU, and not NVML's own error class
    families = scrape(metrics)  # /metrics still answers, with the other families
    assert all(families[name] == {} for name in GPU_FAMILIES)
    assert "batchline_requests" in families


def test_no_nvml_no_driver_or_no_gpu_means_no_gpu_families_and_one_info_line(monkeypatch, caplog):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml raises ImportError
    cases = {
        "not installed": None,
        "no driver": FakeNvml([FakeGpu()], init_error="NVML Shared Library Not Found"),
        "no GPU": FakeNvml([]),
    }
    for what, nvml in cases.items():
        caplog.clear()
        with caplog.at_level(logging.DEBUG, logger="serving.runners.gpus"):
            gpus = open_gpus(nvml)
        assert gpus is None, what
        assert [(r.levelno, r.name) for r in caplog.records] == [(logging.INFO, "serving.runners.gpus")], what
        assert caplog.records[0].getMessage().startswith("GPU metrics off"), what
        text = Metrics(gpus=gpus).render().decode()
        assert "batchline_gpu_" not in text, what


def test_nvml_is_started_once_and_gpus_counted_at_start():
    nvml = two_gpus()
    gpus = open_gpus(nvml)
    assert gpus is not None and gpus.count == 2
    scrape(Metrics(gpus=gpus))
    assert nvml.calls.count("nvmlInit") == 1


# ---- where each instance runs ------------------------------------------------------------------
def test_instances_go_round_robin_over_devices_on_gpu_and_stay_on_cpu_otherwise():
    gpu = LocalServiceConf(device_type=1, devices="2,5")
    assert [gpu_of(gpu, i) for i in range(3)] == [2, 5, 2]
    assert [device_of(gpu, i) for i in range(3)] == ["gpu:2", "gpu:5", "gpu:2"]
    assert [device_of(LocalServiceConf(device_type=2), i) for i in range(2)] == ["gpu:0", "gpu:0"]
    assert [device_of(LocalServiceConf(device_type=0, devices="1"), i) for i in range(2)] == ["cpu", "cpu"]


def test_the_runners_are_placed_where_the_metric_says():
    """create_runners hands an op's model factory the GPU that device_of names for the same index."""
    conf = LocalServiceConf(device_type=1, devices="0,1")
    placed: list[int | None] = []

    def factory(device_id):
        placed.append(device_id)
        return object()

    create_runners(conf, 3, factory=factory)
    assert [device_name(d) for d in placed] == [device_of(conf, i) for i in range(3)] == ["gpu:0", "gpu:1", "gpu:0"]


def test_instance_devices_reads_its_source_at_each_scrape():
    registry = CollectorRegistry()
    devices = InstanceDevices(registry)
    placements = [(("ocr", "1", "det"), ["gpu:0", "gpu:1"]), (("shared", "", "rec"), ["cpu"])]
    devices.read_from(lambda: placements)
    (family,) = devices.collect()
    assert {(tuple(s.labels.values()), s.value) for s in family.samples} == {
        (("ocr", "1", "det", "0", "gpu:0"), 1),
        (("ocr", "1", "det", "1", "gpu:1"), 1),
        (("shared", "", "rec", "0", "cpu"), 1),
    }
    placements.clear()  # the op stopped: its series go with it
    (family,) = devices.collect()
    assert family.samples == []
