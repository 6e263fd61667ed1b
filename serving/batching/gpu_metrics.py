"""``batchline_gpu_*``: each GPU's utilisation and memory, read from NVML
(:mod:`serving.runners.gpus`) when ``/metrics`` is scraped. A custom
collector rather than gauges kept up to date: no polling thread, and a value
is never older than the scrape that shows it."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from serving.runners.gpus import GpuReading, Gpus

GPU_LABELS = ("gpu", "name", "uuid")  # gpu: NVML's index
# (name, help, the reading's value)
_FAMILIES: tuple[tuple[str, str, Callable[[GpuReading], float]], ...] = (
    (
        "batchline_gpu_utilization_ratio",
        "Share of NVML's last sample period (1/6 s to 1 s) in which a kernel ran on the GPU, 0..1",
        lambda r: r.utilization,
    ),
    ("batchline_gpu_memory_used_bytes", "GPU memory in use, by every process on the GPU", lambda r: r.memory_used),
    ("batchline_gpu_memory_total_bytes", "GPU memory in all", lambda r: r.memory_total),
)


class GpuCollector(Collector):
    """Registered in ``registry`` only where there are GPUs to report (see :func:`open_gpus`)."""

    def __init__(self, gpus: Gpus, registry: CollectorRegistry):
        self.gpus = gpus
        registry.register(self)

    def describe(self) -> Iterator[GaugeMetricFamily]:
        for name, doc, _ in _FAMILIES:
            yield GaugeMetricFamily(name, doc, labels=GPU_LABELS)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        readings = self.gpus.read()
        for name, doc, value in _FAMILIES:
            family = GaugeMetricFamily(name, doc, labels=GPU_LABELS)
            for reading in readings:
                family.add_metric(_labels(reading), value(reading))
            yield family


def _labels(reading: GpuReading) -> list[str]:
    return [str(reading.index), reading.name, reading.uuid]
