"""Prometheus metrics of one server, in its own registry (no global state)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
BATCH_BUCKETS = (1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 128)


class Metrics:
    """Names are part of the public API (the bench client scrapes them)."""

    def __init__(self, registry: CollectorRegistry | None = None):
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.batch_size = Histogram(
            "batchline_op_batch_size",
            "Items per dispatch: the batch the batcher hands one instance",
            ["op"],
            buckets=BATCH_BUCKETS,
            registry=r,
        )
        self.call_rows = Histogram(
            "batchline_op_call_rows",
            "Rows per predictor call (a dispatch runs as one call per shape group and run_batch_sizes chunk)",
            ["op"],
            buckets=BATCH_BUCKETS,
            registry=r,
        )
        self.call_requests = Histogram(
            "batchline_op_call_requests",
            "Distinct requests whose items share one predictor call",
            ["op"],
            buckets=BATCH_BUCKETS,
            registry=r,
        )
        self.queue_wait = Histogram(
            "batchline_op_queue_wait_seconds",
            "Time an item waited in its op's batcher",
            ["op"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.run_time = Histogram(
            "batchline_op_run_seconds", "Predictor time per batch", ["op"], buckets=LATENCY_BUCKETS, registry=r
        )
        self.real_units = Counter(
            "batchline_op_real_units", "Input units (pixels, tokens) before padding", ["op"], registry=r
        )
        self.padded_units = Counter("batchline_op_padded_units", "Input units after padding", ["op"], registry=r)
        self.items = Counter("batchline_op_items", "Items run through an op's predictor", ["op"], registry=r)
        self.op_errors = Counter("batchline_op_errors", "Failed items by op and status", ["op", "status"], registry=r)
        self.queue_depth = Gauge("batchline_op_queue_depth", "Items waiting in an op's batcher", ["op"], registry=r)
        self.requests = Counter("batchline_requests", "Finished requests by status", ["pipeline", "status"], registry=r)
        self.in_flight = Gauge(
            "batchline_requests_in_flight", "Admitted, unfinished requests", ["pipeline"], registry=r
        )
        self.request_time = Histogram(
            "batchline_request_seconds",
            "Request latency inside the engine",
            ["pipeline"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.ready = Gauge("batchline_ready", "1 when every predictor is loaded and warm", ["pipeline"], registry=r)

    def render(self) -> bytes:
        return generate_latest(self.registry)
