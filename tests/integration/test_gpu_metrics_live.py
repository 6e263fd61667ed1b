"""/metrics of the real app (LiveApp: the HTTP front, the Flask app, a started
pipeline) with a fake NVML injected: the GPU families of each GPU, and, per
running op instance, the device it is on (a CPU config: ``cpu``)."""

from __future__ import annotations

import sys

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from client.pipeline_client import PipelineClient
from serving.config.file_set import load_repository
from tests.support.engine_fakes import op_conf
from tests.support.fake_nvml import FakeGpu, FakeNvml
from tests.support.live_app import LiveApp

GIB = 1 << 30
CONFIG = {"name": "dev", "op": {"add": op_conf("AddOp", instance_num=2), "sum": op_conf("AddOp", ["add"])}}


def samples(text: str, name: str) -> list[tuple[dict[str, str], float]]:
    return [(s.labels, s.value) for f in text_string_to_metric_families(text) if f.name == name for s in f.samples]


@pytest.fixture(scope="module")
def nvml():
    return FakeNvml(
        [
            FakeGpu("NVIDIA H200", utilization=55, used=3 * GIB, total=141 * GIB, uuid="GPU-aaaa"),
            FakeGpu("NVIDIA H200", uuid="GPU-bbbb", fail={"nvmlDeviceGetMemoryInfo"}),  # fell off the bus
        ]
    )


@pytest.fixture(scope="module")
def text(nvml) -> str:
    with LiveApp(CONFIG, nvml=nvml) as live, PipelineClient(live.url) as client:
        return client.metrics_text()


def test_the_gpus_nvml_answers_for_are_exported_at_scrape_time(text):
    h200 = {"gpu": "0", "name": "NVIDIA H200", "uuid": "GPU-aaaa"}
    assert samples(text, "batchline_gpu_utilization_ratio") == [(h200, pytest.approx(0.55))]
    assert samples(text, "batchline_gpu_memory_used_bytes") == [(h200, 3 * GIB)]
    assert samples(text, "batchline_gpu_memory_total_bytes") == [(h200, 141 * GIB)]


def placed(text: str) -> list[tuple[str, str, str, float]]:
    return sorted(
        (labels["op"], labels["instance"], labels["device"], value)
        for labels, value in samples(text, "batchline_op_instance_device")
        if labels["pipeline"] == "dev" and labels["version"] == "1"
    )


def test_each_running_instance_reports_its_device_cpu_here(text):
    assert placed(text) == [("add", "0", "cpu", 1), ("add", "1", "cpu", 1), ("sum", "0", "cpu", 1)]


def test_a_reload_of_the_same_version_shows_the_new_instances_only(tmp_path):
    """The old pipeline drains after the new one serves under the same labels: its instances
    must neither linger nor take the new ones' series with them (read at scrape time)."""
    path = tmp_path / "dev.yml"
    path.write_text(yaml.safe_dump(CONFIG))
    with LiveApp(load_repository([str(path)])) as live, PipelineClient(live.url) as client:
        assert [row[:2] for row in placed(client.metrics_text())] == [("add", "0"), ("add", "1"), ("sum", "0")]
        changed = {**CONFIG, "op": {**CONFIG["op"], "add": op_conf("AddOp", instance_num=1)}}
        path.write_text(yaml.safe_dump(changed))
        assert live.repository.reload().changed == ["dev/v1"]
        assert placed(client.metrics_text()) == [("add", "0", "cpu", 1), ("sum", "0", "cpu", 1)]


def test_without_nvml_the_server_exports_no_gpu_family(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # as where nvidia-ml-py is not installed
    with LiveApp(CONFIG) as live, PipelineClient(live.url) as client:
        text = client.metrics_text()
    assert "batchline_gpu_" not in text
    assert samples(text, "batchline_op_instance_device")
