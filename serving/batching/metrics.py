"""Prometheus metrics of one server, in its own registry (no global state)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from serving.batching.gpu_metrics import GpuCollector
from serving.batching.instance_devices import InstanceDevices
from serving.runners.gpus import Gpus

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
BATCH_BUCKETS = (1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 128)
# share of a limit a dispatch used; units fill above 1.0 (+Inf only) is an item over the budget, alone
FILL_BUCKETS = (0.1, 0.25, 0.5, 0.75, 0.9, 1.0)
# A pipeline is named by its name and version; an op by its pipeline and op
# name, and a stage shared by several pipelines by pipeline="shared", version=""
# and its share name.
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
        self.batch_size = Histogram(
            "batchline_op_batch_size",
            "Items per dispatch: the batch the batcher hands one instance",
            OP_LABELS,
            buckets=BATCH_BUCKETS,
            registry=r,
        )
        self.batch_fill = Histogram(
            "batchline_op_batch_fill",
            "Items per dispatch / max_batch_size",
            OP_LABELS,
            buckets=FILL_BUCKETS,
            registry=r,
        )
        self.units_fill = Histogram(
            "batchline_op_units_fill",
            "Padded units per dispatch (items x largest item) / max_batch_units, for ops with a budget",
            OP_LABELS,
            buckets=FILL_BUCKETS,
            registry=r,
        )
        self.call_rows = Histogram(
            "batchline_op_call_rows",
            "Rows per predictor call (a dispatch runs as one call per shape group and run_batch_sizes chunk)",
            OP_LABELS,
            buckets=BATCH_BUCKETS,
            registry=r,
        )
        self.call_requests = Histogram(
            "batchline_op_call_requests",
            "Distinct requests whose items share one predictor call",
            OP_LABELS,
            buckets=BATCH_BUCKETS,
            registry=r,
        )
        self.queue_wait = Histogram(
            "batchline_op_queue_wait_seconds",
            "Time an item waited in its op's batcher",
            OP_LABELS,
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.run_time = Histogram(
            "batchline_op_run_seconds", "Predictor time per batch", OP_LABELS, buckets=LATENCY_BUCKETS, registry=r
        )
        self.real_units = Counter(
            "batchline_op_real_units", "Input units (pixels, tokens) before padding", OP_LABELS, registry=r
        )
        self.padded_units = Counter("batchline_op_padded_units", "Input units after padding", OP_LABELS, registry=r)
        self.items = Counter("batchline_op_items", "Items run through an op's predictor", OP_LABELS, registry=r)
        self.instance_restarts = Counter(
            "batchline_op_instance_restarts",
            "Predictor processes of an op that died and were restarted",
            OP_LABELS,
            registry=r,
        )
        self.instance_recycles = Counter(
            "batchline_op_instance_recycles",
            "Predictor processes of an op replaced gracefully for holding more than max_rss_mb",
            OP_LABELS,
            registry=r,
        )
        self.instance_rss = Gauge(
            "batchline_op_instance_rss_bytes",
            "Resident memory of each predictor process of an op (instance_mode: process)",
            [*OP_LABELS, "instance"],
            registry=r,
        )
        self.op_errors = Counter(
            "batchline_op_errors", "Failed items by op and status", [*OP_LABELS, "status"], registry=r
        )
        self.queue_depth = Gauge("batchline_op_queue_depth", "Items waiting in an op's batcher", OP_LABELS, registry=r)
        self.requests = Counter(
            "batchline_requests", "Finished requests by status", [*PIPELINE_LABELS, "status"], registry=r
        )
        self.protocol_requests = Counter(
            "batchline_protocol_requests",
            "Finished requests by the front end they came in by (http, grpc, v2, v2-grpc; shadow: shadow copies) "
            "and status",
            [*PIPELINE_LABELS, "protocol", "status"],
            registry=r,
        )
        self.in_flight = Gauge(
            "batchline_requests_in_flight", "Admitted, unfinished requests", PIPELINE_LABELS, registry=r
        )
        self.request_time = Histogram(
            "batchline_request_seconds",
            "Request latency inside the engine",
            PIPELINE_LABELS,
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.ready = Gauge("batchline_ready", "1 when every predictor is loaded and warm", PIPELINE_LABELS, registry=r)
        # several pipelines in one server
        self.shared_requests = Counter(
            "batchline_shared_op_requests",
            "Requests each pipeline sent into a shared op (which pipelines feed it)",
            ["op", *PIPELINE_LABELS],
            registry=r,
        )
        self.call_pipelines = Histogram(
            "batchline_op_call_pipelines",
            "Distinct pipelines whose items share one predictor call (shared ops only)",
            OP_LABELS,
            buckets=(1, 2, 3, 4, 8),
            registry=r,
        )
        self.shadow_requests = Counter(
            "batchline_shadow_requests",
            "Shadow copies by outcome: agree, disagree, shadow_failed, primary_failed, dropped",
            ["pipeline", "shadow_version", "outcome"],
            registry=r,
        )
        self.shadow_agreement = Gauge(
            "batchline_shadow_agreement",
            "Share of compared shadow answers that agree with the primary's (op-defined comparison)",
            ["pipeline", "shadow_version"],
            registry=r,
        )
        self.shadow_time = Histogram(
            "batchline_shadow_request_seconds",
            "Latency of shadow copies inside the engine (never returned to clients)",
            ["pipeline", "shadow_version"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.generation = Gauge("batchline_generation", "Generation of the served pipeline set (reloads)", registry=r)
        self.reloads = Counter("batchline_reloads", "Reloads by outcome (ok, invalid, failed)", ["outcome"], registry=r)
        # read at scrape time: where each running instance is (the repository names its stages),
        # and each GPU's utilisation and memory
        self.instance_devices = InstanceDevices(r)
        self.gpus = GpuCollector(gpus, r) if gpus is not None else None

    def render(self) -> bytes:
        return generate_latest(self.registry)


class OpMetrics:
    """One op's labelled series, looked up once: a stage records several per
    batch, and ``labels()`` costs as much as the observation itself.
    ``units_fill`` exists only for an op with a budget (``units_budget``), so
    other ops export no empty series of it."""

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
