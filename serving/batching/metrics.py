"""Prometheus metrics of one server, in its own registry (no global state).

Instance devices and GPU readings are collected at scrape time rather than kept
up to date: a reload's draining pipeline must not erase its successor's series
(same labels), and a GPU reading is then never older than the scrape."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Sequence

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from serving.runners.gpus import GpuReading, Gpus

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
BATCH_BUCKETS = (1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 128)
# share of a limit a dispatch used; units fill above 1.0 (+Inf only) is an item over the budget, alone
FILL_BUCKETS = (0.1, 0.25, 0.5, 0.75, 0.9, 1.0)
# a stage shared by several pipelines is labelled pipeline="shared", version="", op=its share name
PIPELINE_LABELS = ("pipeline", "version")
OP_LABELS = ("pipeline", "version", "op")
SHARED = "shared"


class Metrics:
    """Names are part of the public API (the bench client scrapes them).

    ``gpus`` (:func:`serving.runners.gpus.open_gpus`): the GPUs whose
    ``batchline_gpu_*`` families this registry exports; None: no such families."""

    def __init__(self, registry: CollectorRegistry | None = None, *, gpus: Gpus | None = None):
        self.registry = registry or CollectorRegistry()
        r = self.registry
        histogram = functools.partial(Histogram, registry=r)
        counter = functools.partial(Counter, registry=r)
        gauge = functools.partial(Gauge, registry=r)
        self.batch_size = histogram(
            "batchline_op_batch_size",
            "Items per dispatch: the batch the batcher hands one instance",
            OP_LABELS,
            buckets=BATCH_BUCKETS,
        )
        self.batch_fill = histogram(
            "batchline_op_batch_fill", "Items per dispatch / max_batch_size", OP_LABELS, buckets=FILL_BUCKETS
        )
        self.units_fill = histogram(
            "batchline_op_units_fill",
            "Padded units per dispatch (items x largest item) / max_batch_units, for ops with a budget",
            OP_LABELS,
            buckets=FILL_BUCKETS,
        )
        self.call_rows = histogram(
            "batchline_op_call_rows",
            "Rows per predictor call (a dispatch runs as one call per shape group and run_batch_sizes chunk)",
            OP_LABELS,
            buckets=BATCH_BUCKETS,
        )
        self.call_requests = histogram(
            "batchline_op_call_requests",
            "Distinct requests whose items share one predictor call",
            OP_LABELS,
            buckets=BATCH_BUCKETS,
        )
        self.queue_wait = histogram(
            "batchline_op_queue_wait_seconds",
            "Time an item waited in its op's batcher",
            OP_LABELS,
            buckets=LATENCY_BUCKETS,
        )
        self.run_time = histogram(
            "batchline_op_run_seconds", "Predictor time per batch", OP_LABELS, buckets=LATENCY_BUCKETS
        )
        self.real_units = counter("batchline_op_real_units", "Input units (pixels, tokens) before padding", OP_LABELS)
        self.padded_units = counter("batchline_op_padded_units", "Input units after padding", OP_LABELS)
        self.items = counter("batchline_op_items", "Items run through an op's predictor", OP_LABELS)
        self.instance_restarts = counter(
            "batchline_op_instance_restarts", "Predictor processes of an op that died and were restarted", OP_LABELS
        )
        self.instance_recycles = counter(
            "batchline_op_instance_recycles",
            "Predictor processes of an op replaced gracefully for holding more than max_rss_mb",
            OP_LABELS,
        )
        self.instance_rss = gauge(
            "batchline_op_instance_rss_bytes",
            "Resident memory of each predictor process of an op (instance_mode: process)",
            [*OP_LABELS, "instance"],
        )
        self.op_errors = counter("batchline_op_errors", "Failed items by op and status", [*OP_LABELS, "status"])
        self.queue_depth = gauge("batchline_op_queue_depth", "Items waiting in an op's batcher", OP_LABELS)
        self.requests = counter("batchline_requests", "Finished requests by status", [*PIPELINE_LABELS, "status"])
        self.protocol_requests = counter(
            "batchline_protocol_requests",
            "Finished requests by the front end they came in by (http, grpc, v2, v2-grpc; shadow: shadow copies) "
            "and status",
            [*PIPELINE_LABELS, "protocol", "status"],
        )
        self.in_flight = gauge("batchline_requests_in_flight", "Admitted, unfinished requests", PIPELINE_LABELS)
        self.request_time = histogram(
            "batchline_request_seconds", "Request latency inside the engine", PIPELINE_LABELS, buckets=LATENCY_BUCKETS
        )
        self.ready = gauge("batchline_ready", "1 when every predictor is loaded and warm", PIPELINE_LABELS)
        # several pipelines in one server
        self.shared_requests = counter(
            "batchline_shared_op_requests",
            "Requests each pipeline sent into a shared op (which pipelines feed it)",
            ["op", *PIPELINE_LABELS],
        )
        self.call_pipelines = histogram(
            "batchline_op_call_pipelines",
            "Distinct pipelines whose items share one predictor call (shared ops only)",
            OP_LABELS,
            buckets=(1, 2, 3, 4, 8),
        )
        self.shadow_requests = counter(
            "batchline_shadow_requests",
            "Shadow copies by outcome: agree, disagree, shadow_failed, primary_failed, dropped",
            ["pipeline", "shadow_version", "outcome"],
        )
        self.shadow_agreement = gauge(
            "batchline_shadow_agreement",
            "Share of compared shadow answers that agree with the primary's (op-defined comparison)",
            ["pipeline", "shadow_version"],
        )
        self.shadow_time = histogram(
            "batchline_shadow_request_seconds",
            "Latency of shadow copies inside the engine (never returned to clients)",
            ["pipeline", "shadow_version"],
            buckets=LATENCY_BUCKETS,
        )
        self.generation = gauge("batchline_generation", "Generation of the served pipeline set (reloads)")
        self.reloads = counter("batchline_reloads", "Reloads by outcome (ok, invalid, failed)", ["outcome"])
        # read at scrape time: where each running instance is (the repository names its stages),
        # and each GPU's utilisation and memory
        self.instance_devices = InstanceDevices(r)
        self.gpus = GpuCollector(gpus, r) if gpus is not None else None

    def render(self) -> bytes:
        return generate_latest(self.registry)


class OpMetrics:
    """One op's labelled series, looked up once (``labels()`` costs as much as an
    observation); ``units_fill`` only for an op with a budget, so others export none."""

    def __init__(self, metrics: Metrics, labels: tuple[str, str, str], *, units_budget: bool = False):
        self.batch_size = metrics.batch_size.labels(*labels)
        self.batch_fill = metrics.batch_fill.labels(*labels)
        self.units_fill = metrics.units_fill.labels(*labels) if units_budget else None
        self.run_time = metrics.run_time.labels(*labels)
        self.items = metrics.items.labels(*labels)
        self.queue_wait = metrics.queue_wait.labels(*labels)
        self.queue_depth = metrics.queue_depth.labels(*labels)
        self.call_rows = metrics.call_rows.labels(*labels)
        self.call_requests = metrics.call_requests.labels(*labels)
        self.call_pipelines = metrics.call_pipelines.labels(*labels)
        self.real_units = metrics.real_units.labels(*labels)
        self.padded_units = metrics.padded_units.labels(*labels)


#: one op: its (pipeline, version, op) labels and its instances' devices, by instance index
Placement = tuple[tuple[str, str, str], Sequence[str]]
PlacementSource = Callable[[], Iterable[Placement]]
DEVICE_FAMILY = "batchline_op_instance_device"
DEVICE_DOC = "1 for the device (cpu, gpu:N) each predictor instance of an op runs on"
DEVICE_LABELS = ("pipeline", "version", "op", "instance", "device")


def _no_placements() -> Iterable[Placement]:
    return ()


class InstanceDevices(Collector):
    """``batchline_op_instance_device``, as :mod:`serving.runners.placement` placed each
    instance; empty until :meth:`read_from` names where the placements come from."""

    def __init__(self, registry: CollectorRegistry):
        self._source: PlacementSource = _no_placements
        registry.register(self)

    def read_from(self, source: PlacementSource) -> None:
        self._source = source

    def describe(self) -> Iterator[GaugeMetricFamily]:
        yield GaugeMetricFamily(DEVICE_FAMILY, DEVICE_DOC, labels=DEVICE_LABELS)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(DEVICE_FAMILY, DEVICE_DOC, labels=DEVICE_LABELS)
        for labels, devices in self._source():
            for index, device in enumerate(devices):
                family.add_metric([*labels, str(index), device], 1)
        yield family


GPU_LABELS = ("gpu", "name", "uuid")  # gpu: NVML's index
# (name, help, the reading's value)
_GPU_FAMILIES: tuple[tuple[str, str, Callable[[GpuReading], float]], ...] = (
    (
        "batchline_gpu_utilization_ratio",
        "Share of NVML's last sample period (1/6 s to 1 s) in which a kernel ran on the GPU, 0..1",
        lambda r: r.utilization,
    ),
    ("batchline_gpu_memory_used_bytes", "GPU memory in use, by every process on the GPU", lambda r: r.memory_used),
    ("batchline_gpu_memory_total_bytes", "GPU memory in all", lambda r: r.memory_total),
)


class GpuCollector(Collector):
    """``batchline_gpu_*``; registered only where there are GPUs (:func:`serving.runners.gpus.open_gpus`)."""

    def __init__(self, gpus: Gpus, registry: CollectorRegistry):
        self.gpus = gpus
        registry.register(self)

    def describe(self) -> Iterator[GaugeMetricFamily]:
        for name, doc, _ in _GPU_FAMILIES:
            yield GaugeMetricFamily(name, doc, labels=GPU_LABELS)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        readings = self.gpus.read()
        for name, doc, value in _GPU_FAMILIES:
            family = GaugeMetricFamily(name, doc, labels=GPU_LABELS)
            for reading in readings:
                family.add_metric([str(reading.index), reading.name, reading.uuid], value(reading))
            yield family
