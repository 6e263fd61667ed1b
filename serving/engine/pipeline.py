"""A running pipeline: op stages wired by the DAG, admission control,
deadlines, warm-up, and draining shutdown.

    pipeline = Pipeline(load_config("configs/ocr.yml"))
    pipeline.start()                       # loads + warms every predictor
    handle = pipeline.submit(image)        # a RequestState
    lines = handle.result()                # raises ServingError on failure
    pipeline.shutdown()                    # drain, then stop
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from serving.config.schema import OpConfig, ServingConfig
from serving.engine.admission import Admission
from serving.engine.metrics import Metrics
from serving.engine.request import RequestState
from serving.engine.stage import OpStage
from serving.engine.tracer import Tracer
from serving.engine.warmup import warm
from serving.errors import Overloaded, ShuttingDown
from serving.op import Op, OpContext, Runner
from serving.runners.cpu_plan import CpuSet, plan_cpus
from serving.runners.factory import create_runners

log = logging.getLogger(__name__)


def make_op(op_conf: OpConfig) -> Op:
    """The op object of a validated config entry (its class and params were resolved at load)."""
    if op_conf.op_class is None or op_conf.params_model is None:
        raise ValueError(f"op {op_conf.name!r} was not bound to its class: load the config with load_config()")
    return op_conf.op_class(OpContext(name=op_conf.name, conf=op_conf, params=op_conf.params_model))


def runners_for(op: Op, count: int, cpu_sets: list[CpuSet] | None = None) -> list[Runner]:
    """The op's own runners if it makes them, else the predictors its config describes."""
    own = op.create_runners(count)
    if own is not None:
        return own
    return create_runners(op.conf.local_service_conf, count, cpu_sets)


class Pipeline:
    def __init__(
        self, config: ServingConfig, *, metrics: Metrics | None = None, clock: Callable[[], float] = time.monotonic
    ):
        self.config = config
        self.name = config.name
        self.dag = config.dag_graph
        self.metrics = metrics or Metrics()
        self.clock = clock
        dag_conf = config.dag
        self.stages: dict[str, OpStage] = {}
        for name in self.dag.order:
            self.stages[name] = OpStage(
                make_op(config.op[name]),
                metrics=self.metrics,
                deliver=self._deliver_fn(name),
                channel_size=dag_conf.channel_size,
                priority_levels=dag_conf.priority_levels,
                priority_max_wait_s=dag_conf.priority_max_wait_ms / 1000.0,
                clock=clock,
            )
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._in_flight = 0
        # starting (neither), serving (_accepting), draining (_draining)
        self._accepting = False
        self._draining = False
        self._sink_parts: dict[int, dict[str, Any]] = {}
        self._active: dict[int, RequestState] = {}
        self._tracer = Tracer(self, dag_conf.tracer.interval_s)
        self.admission = Admission(dag_conf.max_queue_size, clock)

    # ---- life cycle ------------------------------------------------------------------
    def start(self, *, warmup: bool = True) -> None:
        cpu_plan = dict(zip(self.stages, plan_cpus([s.conf.local_service_conf for s in self.stages.values()])))
        for name, stage in self.stages.items():
            began = time.monotonic()
            stage.op.load()
            svc = stage.conf.local_service_conf
            if svc.instance_num > 1 and svc.instance_mode == "thread" and svc.device_type == 0 and stage.op.needs_model:
                log.warning(
                    "op %s: %d thread instances on CPU take turns (Paddle holds the GIL in run()) and "
                    "each keeps its own workspace memory; consider instance_mode: process",
                    name,
                    svc.instance_num,
                )
            runners = runners_for(stage.op, svc.instance_num, cpu_plan[name])
            if warmup:
                warm(stage, runners)
            stage.start(runners)
            log.info("op %s ready: %d instance(s), %.1fs", name, len(runners), time.monotonic() - began)
        with self._lock:
            self._accepting = True
        self.metrics.ready.labels(self.name).set(1)
        self._tracer.start()

    @property
    def ready(self) -> bool:
        """Every predictor loaded and warm, and not draining: the server takes requests."""
        return self._accepting

    @property
    def in_flight(self) -> int:
        return self._in_flight

    def shutdown(self, timeout: float | None = None) -> bool:
        """Refuse new requests, wait for accepted ones to finish (up to
        ``timeout``, default ``dag.shutdown_timeout_s``), then stop the ops.
        Returns True when everything accepted was answered."""
        timeout = self.config.dag.shutdown_timeout_s if timeout is None else timeout
        end = time.monotonic() + timeout
        with self._idle:
            self._accepting = False
            self._draining = True
            while self._in_flight and time.monotonic() < end:
                self._idle.wait(max(0.0, end - time.monotonic()))
            drained = self._in_flight == 0
            left = list(self._active.values())
        for request in left:  # nothing accepted is lost silently
            request.fail(ShuttingDown("server shut down before this request finished"))
        self.metrics.ready.labels(self.name).set(0)
        self._tracer.stop()
        for stage in self.stages.values():
            stage.stop(timeout=max(0.0, end - time.monotonic()) or 1.0)
        log.info("pipeline %s stopped (%s)", self.name, "drained" if drained else "timed out while draining")
        return drained

    # ---- requests ------------------------------------------------------------------------
    def submit(
        self, value: Any, *, priority: int = 0, timeout_ms: int | None = None, logid: Any = None
    ) -> RequestState:
        """Admit one request (one image or text) and start it; never blocks on
        a full server: beyond ``max_queue_size`` it raises Overloaded (503)."""
        dag_conf = self.config.dag
        limit_ms = dag_conf.request_timeout_ms if timeout_ms is None else min(timeout_ms, dag_conf.request_timeout_ms)
        with self._lock:
            if not self._accepting:
                if self._draining:
                    raise ShuttingDown()
                raise Overloaded("server is starting: predictors are loading and warming", retry_after=5.0)
            self.admission.check(self._in_flight, limit_ms / 1000.0)
            self._in_flight += 1
        self.metrics.in_flight.labels(self.name).inc()
        request = RequestState(
            next(self._ids),
            value,
            deadline=self.clock() + limit_ms / 1000.0,
            priority=priority,
            logid=logid,
            clock=self.clock,
        )
        with self._lock:
            self._active[request.id] = request
        request.add_done_callback(self._on_done)
        for source in self.dag.sources:
            self.stages[source].accept("input", request, value)
        return request

    def _deliver_fn(self, name: str) -> Callable[[RequestState, Any], None]:
        consumers = self.dag.consumers(name)
        if consumers:

            def deliver(request: RequestState, output: Any) -> None:
                for consumer in consumers:
                    self.stages[consumer].accept(name, request, output)
        else:

            def deliver(request: RequestState, output: Any) -> None:
                self._sink_output(name, request, output)

        return deliver

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
        m = self.metrics
        m.in_flight.labels(self.name).dec()
        m.requests.labels(self.name, str(status)).inc()
        m.request_time.labels(self.name).observe(max(0.0, (request.finished_at or 0) - request.created))
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

    def input_kind(self) -> str | None:
        """How request values are decoded: the source ops' ``input_kind``."""
        kinds = {self.stages[s].op.input_kind for s in self.dag.sources}
        return kinds.pop() if len(kinds) == 1 else None
