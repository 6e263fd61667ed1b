"""A running pipeline: op stages wired by the DAG, admission control,
deadlines, warm-up, and draining shutdown.

    pipeline = Pipeline(load_config("configs/ocr.yml"))
    pipeline.start()                       # loads + warms every predictor
    handle = pipeline.submit(image)        # a RequestState
    lines = handle.result()                # raises ServingError on failure
    pipeline.shutdown()                    # drain, then stop
"""

from __future__ import annotations

import functools
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from serving.batching.admission import Admission
from serving.batching.launch import build_stage, launch
from serving.batching.metrics import Metrics
from serving.batching.request import RequestState
from serving.batching.stage import OpStage
from serving.batching.stage_api import Stage
from serving.batching.tracer import Tracer
from serving.config.schema import ServingConfig
from serving.errors import Overloaded, ShuttingDown
from serving.runners.cpu_plan import CpuAllocator, CpuSet
from serving.runners.device_hosts import DeviceHosts

log = logging.getLogger(__name__)


def time_limit_s(config: ServingConfig, timeout_ms: int | None = None) -> float:
    """A request's time limit: ``dag.request_timeout_ms``, or less if the request asks."""
    limit_ms = config.dag.request_timeout_ms
    return (limit_ms if timeout_ms is None else min(timeout_ms, limit_ms)) / 1000.0


class Pipeline:
    """One pipeline (a name and version) with its op stages. ``shared``: op name -> a
    stage run by someone else (the repository's shared stages, Ray deployments).
    ``ids`` is shared by pipelines feeding one shared stage, so request ids stay unique;
    ``idle_cpu`` runs our own instances only on CPU time left unused (a shadow version)."""

    def __init__(
        self,
        config: ServingConfig,
        *,
        metrics: Metrics | None = None,
        clock: Callable[[], float] = time.monotonic,
        shared: Mapping[str, Stage] | None = None,
        ids: Iterator[int] | None = None,
        cpus: CpuAllocator | None = None,
        hosts: DeviceHosts | None = None,
        idle_cpu: bool = False,
    ):
        self.config = config
        self.name = config.name
        self.version = config.effective_version
        self.labels: tuple[str, str] = (self.name, str(self.version))
        self.dag = config.dag_graph
        self.metrics = metrics or Metrics()
        # this pipeline's series, looked up once (labels() costs as much as the update)
        self._in_flight_gauge = self.metrics.in_flight.labels(*self.labels)
        self._request_time = self.metrics.request_time.labels(*self.labels)
        self._ok_requests = self.metrics.requests.labels(*self.labels, "200")
        self.clock = clock
        self.cpus = cpus or CpuAllocator()
        self.hosts = hosts if hosts is not None else DeviceHosts()
        self.idle_cpu = idle_cpu
        dag_conf = config.dag
        shared = dict(shared or {})
        self.stages: dict[str, Stage] = {}
        self._owned: list[OpStage] = []
        for name in self.dag.order:
            stage = shared.get(name)
            if stage is None:
                stage = build_stage(
                    config.op[name], dag_conf, metrics=self.metrics, clock=clock, labels=self.labels, idle_cpu=idle_cpu
                )
                self._owned.append(stage)
            self.stages[name] = stage
        self._op_of: dict[Stage, str] = {stage: name for name, stage in self.stages.items()}
        self._consumers = {name: self.dag.consumers(name) for name in self.dag.order}
        self._cpu_sets: list[list[CpuSet]] = []
        self._ids = ids or itertools.count(1)
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._in_flight = 0
        # starting (neither), serving (_accepting), draining (_draining)
        self._accepting = False
        self._draining = False
        self._stopped = False
        self._sink_parts: dict[int, dict[str, Any]] = {}
        self._active: dict[int, RequestState] = {}
        self._tracer = Tracer(self, dag_conf.tracer.interval_s)
        self.admission = Admission(dag_conf.max_queue_size, clock)

    # ---- life cycle ------------------------------------------------------------------
    def start(self, *, warmup: bool = True) -> None:
        """Load, warm and start this pipeline's own stages (shared ones are already running)."""
        try:
            for stage in self._owned:
                self._cpu_sets.append(launch(stage, self.cpus, warmup=warmup, hosts=self.hosts))
        except BaseException:
            self._stop_stages(timeout=1.0)
            raise
        with self._lock:
            self._accepting = True
        self.metrics.ready.labels(*self.labels).set(1)
        self._tracer.start()

    @property
    def ready(self) -> bool:
        """Every predictor loaded and warm, every stage healthy, and not draining: the server takes requests."""
        return self._accepting and all(stage.healthy for stage in self.stages.values())

    @property
    def broken(self) -> bool:
        """An op of this pipeline lost every instance for good: only a restart of the server helps."""
        return any(stage.broken for stage in self.stages.values())

    @property
    def state(self) -> str:
        """``starting``, ``serving``, ``draining`` or ``stopped``."""
        if self._stopped:
            return "stopped"
        if self._draining:
            return "draining"
        return "serving" if self._accepting else "starting"

    @property
    def in_flight(self) -> int:
        return self._in_flight

    @property
    def owned_stages(self) -> list[OpStage]:
        return list(self._owned)

    def shutdown(self, timeout: float | None = None) -> bool:
        """Refuse new requests, wait for accepted ones (up to ``timeout``, default
        ``dag.shutdown_timeout_s``), stop our own stages; True when all were answered."""
        timeout = self.config.dag.shutdown_timeout_s if timeout is None else timeout
        end = time.monotonic() + timeout
        self.stop_admitting()
        with self._idle:
            while self._in_flight and time.monotonic() < end:
                self._idle.wait(max(0.0, end - time.monotonic()))
            drained = self._in_flight == 0
            left = list(self._active.values())
        for request in left:  # nothing accepted is lost silently
            request.fail(ShuttingDown("server shut down before this request finished"))
        self.metrics.ready.labels(*self.labels).set(0)
        self._tracer.stop()
        self._stop_stages(timeout=max(0.0, end - time.monotonic()) or 1.0)
        self._stopped = True
        log.info(
            "pipeline %s v%d stopped (%s)",
            self.name,
            self.version,
            "drained" if drained else "timed out while draining",
        )
        return drained

    def stop_admitting(self) -> None:
        """Refuse new requests from now on (503); the accepted ones go on. :meth:`shutdown` begins with it."""
        with self._lock:
            self._accepting = False
            self._draining = True

    def _stop_stages(self, timeout: float) -> None:
        for stage in self._owned:
            stage.stop(timeout=timeout)
        for sets in self._cpu_sets:
            self.cpus.release(sets)
        self._cpu_sets = []

    # ---- requests ------------------------------------------------------------------------
    def submit(
        self,
        value: Any,
        *,
        priority: int = 0,
        timeout_ms: int | None = None,
        logid: Any = None,
        background: bool = False,
        protocol: str = "http",
    ) -> RequestState:
        """Admit one request (one image or text) and start it; never blocks: beyond
        ``max_queue_size`` it raises Overloaded (503). ``background`` (shadow copies)
        queue behind all others."""
        limit_s = self.time_limit_s(timeout_ms)
        with self._lock:
            self._check_admission(1, limit_s)
            self._in_flight += 1
        self._in_flight_gauge.inc()
        request = RequestState(
            next(self._ids),
            value,
            deadline=self.clock() + limit_s,
            priority=priority,
            logid=logid,
            clock=self.clock,
            owner=self,
            background=background,
            protocol=protocol,
        )
        with self._lock:
            self._active[request.id] = request
        request.add_done_callback(self._on_done)
        try:
            for source in self.dag.sources:
                self.stages[source].accept("input", request, value)
        except ShuttingDown as exc:  # a source stage already closed: answered, and no longer counted in flight
            request.fail(exc)
        return request

    def time_limit_s(self, timeout_ms: int | None = None) -> float:
        return time_limit_s(self.config, timeout_ms)

    def precheck(self, count: int, *, timeout_ms: int | None = None) -> None:
        """Raise now what :meth:`submit` would raise for ``count`` more requests, admitting
        none, so the HTTP layer can refuse before decoding (``submit`` checks again)."""
        with self._lock:
            self._check_admission(count, self.time_limit_s(timeout_ms))

    def _check_admission(self, count: int, limit_s: float) -> None:
        """Admission for ``count`` requests, the last of which would see ``count - 1`` more in flight (lock held)."""
        if not self._accepting:
            if self._draining:
                raise ShuttingDown()
            raise Overloaded("server is starting: predictors are loading and warming", retry_after=5.0)
        self.admission.check(self._in_flight + max(count, 1) - 1, limit_s)

    def on_output(self, stage: Stage, request: RequestState, output: Any) -> None:
        """A stage's output for one of our requests: to the consumers, or to the response."""
        name = self._op_of[stage]
        consumers = self._consumers[name]
        if not consumers:
            self._sink_output(name, request, output)
            return
        for consumer in consumers:
            self.stages[consumer].accept(name, request, output)

    def _sink_output(self, sink: str, request: RequestState, output: Any) -> None:
        sinks = self.dag.sinks
        if len(sinks) == 1:
            request.finish(output)
            return
        with self._lock:
            parts = self._sink_parts.setdefault(request.id, {})
            parts[sink] = output
            complete = len(parts) == len(sinks)
            if complete:
                del self._sink_parts[request.id]
        if complete:
            request.finish({s: parts[s] for s in sinks})

    def _on_done(self, request: RequestState) -> None:
        status = 200 if request.error is None else request.error.status
        if status == 200:
            self.admission.record_completion()
        with self._idle:
            self._in_flight -= 1
            self._sink_parts.pop(request.id, None)
            self._active.pop(request.id, None)
            if self._in_flight == 0:
                self._idle.notify_all()
        self._in_flight_gauge.dec()
        counter = self._ok_requests if status == 200 else self.metrics.requests.labels(*self.labels, str(status))
        counter.inc()
        self.metrics.protocol_requests.labels(*self.labels, request.protocol, str(status)).inc()
        self._request_time.observe(max(0.0, (request.finished_at or 0) - request.created))
        if self.config.dag.use_profile:
            self._log_profile(request, status)

    def _log_profile(self, request: RequestState, status: int) -> None:
        summary = request.timing_summary()
        parts = [
            f"{op}[wait={v['queue_wait_ms']:.1f}ms batch={','.join(map(str, v['batch_sizes']))} "
            f"run={v['run_ms']:.1f}ms]"
            for op, v in summary["ops"].items()
        ]
        log.info(
            "profile pipeline=%s request=%s logid=%s status=%s total=%.1fms %s",
            self.name,
            request.id,
            request.logid,
            status,
            summary["total_ms"],
            " ".join(parts),
        )

    # ---- introspection -------------------------------------------------------------------------
    def op_table(self) -> list[dict[str, Any]]:
        return self.config.op_table()

    def agree(self, primary: Any, shadow: Any) -> bool:
        """Whether a shadow version's answer agrees with the primary's, by the sink ops' own comparison."""
        sinks = self.dag.sinks
        if len(sinks) == 1:
            return self.stages[sinks[0]].op.agree(primary, shadow)
        return all(self.stages[s].op.agree(primary[s], shadow[s]) for s in sinks)

    def input_kind(self) -> str | None:
        """How request values are decoded: the source ops' ``input_kind``."""
        return self._input_kind

    @functools.cached_property
    def _input_kind(self) -> str | None:
        return self.config.input_kind  # worked out once: the HTTP layer asks per request
