"""One op at run time: its input channel, intake workers (expand + preprocess),
batcher, predictor instances (one thread each, one batch at a time) and
postprocess workers. Outputs go to the pipeline that admitted each request
(``request.owner``), so one stage can serve several pipelines (a shared op).
"""

from __future__ import annotations

import functools
import itertools
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from serving.batching.batcher import Batcher, QueuedItem
from serving.batching.channel import Channel, ChannelClosed, Join
from serving.batching.execute import CallStats, run_batch, run_with_retry
from serving.batching.metrics import Metrics, OpMetrics
from serving.batching.request import OpTiming, RequestState
from serving.batching.units import Extent, batch_units, checked_extent, items_within
from serving.batching.window_stats import WindowReader, WindowStats
from serving.batching.worker_threads import SupervisedThreads
from serving.config.schema import OpConfig
from serving.errors import DeadlineExceeded, Overloaded, ServingError, ShuttingDown, as_serving_error
from serving.op import Op, Runner
from serving.runners.cpu_plan import use_idle_cpu
from serving.runners.placement import device_of
from serving.runners.process_supervisor import Restartable, Supervisor

log = logging.getLogger(__name__)

Deliver = Callable[[RequestState, Any], None]


@dataclass
class _Slot:
    """One item of one request in this op."""

    work: _RequestWork
    index: int
    item: Any


class _RequestWork:
    """This op's item results for one request, filled in any order."""

    def __init__(self, request: RequestState, inputs: dict[str, Any], count: int):
        self.request = request
        self.inputs = inputs
        self.results: list[Any] = [None] * count
        self._remaining = count
        self._lock = threading.Lock()

    def store(self, index: int, result: Any) -> bool:
        """Store a result; True when it was the last one."""
        with self._lock:
            self.results[index] = result
            self._remaining -= 1
            return self._remaining == 0


class OpStage:
    def __init__(
        self,
        op: Op,
        *,
        metrics: Metrics,
        deliver: Deliver | None = None,
        channel_size: int,
        priority_levels: int = 1,
        priority_max_wait_s: float = 1.0,
        batcher_capacity: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        labels: tuple[str, str] = ("", ""),
        shared: bool = False,
        idle_cpu: bool = False,
    ):
        conf = op.conf
        svc = conf.local_service_conf
        self.op = op
        self.name = op.name
        self.conf: OpConfig = conf
        self.metrics = metrics
        self.deliver: Deliver = deliver or self._deliver_to_owner
        self.clock = clock
        # metric labels: (pipeline, version, op)
        self.labels: tuple[str, str, str] = (*labels, self.name)
        self._m = OpMetrics(metrics, self.labels, units_budget=svc.max_batch_units is not None)
        self.shared = shared
        self.idle_cpu = idle_cpu  # instance threads (and their process instances) use only idle CPU time
        self._lowered = _ThreadFlag()  # per instance thread: whether it moved to the idle CPU class yet
        self.channel = Channel(self.name, channel_size)
        self.join = Join(self.channel, conf.input_ops or ["input"])
        # padded units size batches under a budget, or price padding (adaptive); both need pad_unit
        priced = svc.batching_policy == "adaptive" and op.pad_unit is not None
        self.counts_units = svc.max_batch_units is not None or priced
        self.batcher = Batcher(
            max_batch_size=svc.max_batch_size,
            max_queue_delay_s=svc.max_queue_delay / 1000.0,
            preferred_sizes=svc.preferred_batch_size,
            policy=svc.batching_policy,
            priority_levels=priority_levels,
            priority_max_wait_s=priority_max_wait_s,
            capacity=batcher_capacity or max(4 * svc.max_batch_size, channel_size),
            clock=clock,
            is_dead=lambda slot: slot.work.request.done,
            spread=svc.spreads_batches,
            on_evicted=self._evicted,
            max_batch_units=svc.max_batch_units,
            extent_of=self._slot_extent if self.counts_units else None,
            groups_by_extent=op.extent_groups,
        )
        self.timeout_s = None if conf.timeout_ms is None else conf.timeout_ms / 1000.0
        self.retry = conf.retry
        self.window = WindowStats(clock=clock)  # each reader takes its own windows: window.reader()
        self._threads = SupervisedThreads(f"op-{self.name}")
        self._post = ThreadPoolExecutor(max_workers=svc.concurrency, thread_name_prefix=f"{self.name}-post")
        self._runners: list[Runner] = []
        self._supervisor: Supervisor | None = None
        self._batch_ids = itertools.count(1)
        self.run_sizes: list[int] = svc.predictor_batch_sizes

    # ---- life cycle ------------------------------------------------------------------
    def start(self, runners: list[Runner]) -> None:
        self._runners = runners
        svc = self.conf.local_service_conf
        for i in range(svc.concurrency):
            self._threads.start(f"intake-{i}", self._intake_once)
        for i, runner in enumerate(runners):
            restartable = runner if isinstance(runner, Restartable) else None  # decided once, off the batch path
            self._threads.start(f"instance-{i}", functools.partial(self._instance_once, runner, restartable))
        self._supervisor = Supervisor(
            self.name,
            runners,
            on_death=self._instance_died,
            on_recycle=self._instance_recycled,
            on_memory=self._instance_memory,
            warm=self._warm_one,
        )
        if self._supervisor.runners:  # predictor processes: their counters start at 0
            self.metrics.instance_restarts.labels(*self.labels)
            self.metrics.instance_recycles.labels(*self.labels)
        self._supervisor.start()

    def _instance_died(self, cause: str) -> None:
        self.metrics.instance_restarts.labels(*self.labels).inc()

    def _instance_recycled(self, rss: int) -> None:
        self.metrics.instance_recycles.labels(*self.labels).inc()

    def _instance_memory(self, index: int, rss: int) -> None:
        self.metrics.instance_rss.labels(*self.labels, str(index)).set(rss)

    def _deliver_to_owner(self, request: RequestState, output: Any) -> None:
        request.owner.on_output(self, request, output)

    def _warm_one(self, runner: Runner) -> None:
        """A restarted or replacement instance runs every warm-up shape once before it takes work."""
        for item in self.op.warmup_items():
            self.run_batch(runner, [item], record=False)

    def item_extent(self, item: Any) -> Extent:
        """A preprocessed item's padded extent (ops with ``pad_unit``)."""
        return checked_extent(self.op.pad_extent(item), self.name)

    def _slot_extent(self, slot: _Slot) -> Extent:
        return self.item_extent(slot.item)

    def batch_limit(self, item: Any) -> int:
        """How many items like ``item`` one batch may hold: ``max_batch_size``, or fewer under ``max_batch_units``."""
        svc = self.conf.local_service_conf
        if svc.max_batch_units is None:
            return svc.max_batch_size
        return items_within(self.item_extent(item), svc.max_batch_units, svc.max_batch_size)

    def stop(self, timeout: float | None = None) -> None:
        """Close intake and batcher; workers finish what is queued, then exit."""
        self.channel.close()
        self._threads.join_role("intake", timeout)
        self.batcher.close()
        self._threads.join_role("instance", timeout)
        self._post.shutdown(wait=True)
        if self._supervisor is not None:
            self._supervisor.stop()
        for runner in self._runners:
            runner.close()

    def accept(self, source: str, request: RequestState, output: Any) -> None:
        """Called by an upstream op (or the pipeline, with source "input").

        A request's own input to an idle source op is taken in on the submitting
        thread, which would only wait: one hand-off less for a lone request, and it
        can neither block nor overtake queued ones. Under load, and for shadow copies
        (which must never delay the primary's thread), the intake workers take it."""
        own_input = source == "input" and not request.background and len(self.join.input_ops) == 1
        if own_input and self.channel.qsize() == 0 and self.batcher.depth == 0:  # idle: checked only here
            if self.channel.closed:  # draining: refused as a put on the closed channel would be
                raise ChannelClosed(self.name)
            self._take_in(request, {source: output})
            return
        self.join.deliver(source, request, output)

    # ---- intake: expand + preprocess, per request -------------------------------------------
    def _intake_once(self) -> bool:
        entry = self.channel.get()
        if entry is None:
            return False
        self._take_in(*entry)
        return True

    def _take_in(self, request: RequestState, inputs: dict[str, Any]) -> None:
        if request.done:
            return
        try:
            self._intake(request, inputs)
        except Exception as exc:  # noqa: BLE001 - a bad input fails its own request only
            self._fail(request, exc)

    def _intake(self, request: RequestState, inputs: dict[str, Any]) -> None:
        if request.remaining() <= 0:
            raise DeadlineExceeded(f"deadline passed before op {self.name!r}")
        payloads = list(self.op.expand(inputs))
        if not payloads:
            self._finish(request, inputs, [])
            return
        work = _RequestWork(request, inputs, len(payloads))
        slots = [_Slot(work, i, self.op.preprocess(p)) for i, p in enumerate(payloads)]
        deadline = request.deadline
        if self.timeout_s is not None:
            deadline = min(deadline, self.clock() + self.timeout_s)
        if self.shared:
            self.metrics.shared_requests.labels(self.name, *request.owner.labels).inc()
        while not self.batcher.put(
            slots,
            priority=request.priority,
            deadline=deadline,
            timeout=max(0.001, min(0.5, deadline - self.clock())),
            background=request.background,
        ):
            if self.batcher.closed:
                raise ShuttingDown(f"server is shutting down (op {self.name!r} accepts no new items)")
            if request.done:
                return
            if self.clock() >= deadline:
                raise DeadlineExceeded(f"deadline passed while waiting for room in op {self.name!r}")
        self._m.queue_depth.set(self.batcher.depth)

    # ---- instances: one batch at a time per runner -----------------------------------------
    def _instance_once(self, runner: Runner, restartable: Restartable | None) -> bool:
        if self.idle_cpu and not self._lowered.done:
            self._use_idle_cpu()
        if restartable is not None and not restartable.ready.is_set():
            # restarting: batches go to the other instances; the queue's deadlines are kept from here
            if restartable.failed or (self.batcher.closed and self.batcher.depth == 0):
                return False
            self.batcher.expire_due(self._expire)
            restartable.ready.wait(0.1)
            return True
        batch = self.batcher.next_batch(on_expired=self._expire)
        if batch is None:
            return False
        try:
            self._m.queue_depth.set(self.batcher.depth)
            started = self.clock()
            requests = [q.payload.work.request for q in batch]
            if hasattr(runner, "run_deadline"):  # a predictor process: silent past this, it is hung
                runner.run_deadline = time.monotonic() + max(r.remaining() for r in requests)
            outcomes, calls = run_with_retry(
                self.op,
                runner,
                [q.payload.item for q in batch],
                self.run_sizes,
                self.retry,
                owners=[r.id for r in requests],
                groups=[id(r.owner) for r in requests] if self.shared else None,
            )
            run_s = self.clock() - started
            units = batch_units(q.extent for q in batch) if self.counts_units else None
            self.batcher.record_run(len(batch), run_s, units)
            self._record_batch(batch, started, run_s, calls)
            # nothing queued: this instance would idle, so it postprocesses itself (one hand-off less)
            inline = self.batcher.depth == 0
            for queued, outcome in zip(batch, outcomes):
                if inline:
                    self._postprocess(queued.payload, outcome)
                else:
                    self._post.submit(self._postprocess, queued.payload, outcome)
        except BaseException as exc:  # the thread dies and is replaced; its batch must not vanish
            for queued in batch:
                self._fail(queued.payload.work.request, exc)
            raise
        return True

    def _use_idle_cpu(self) -> None:
        """Move this instance thread into the idle CPU class (Linux threads are scheduled one by one)."""
        self._lowered.done = True
        try:
            use_idle_cpu(threading.get_native_id())
        except OSError as exc:
            log.warning("op %s: cannot lower the instance thread's CPU priority: %s", self.name, exc)

    def run_batch(self, runner: Runner, items: list[Any], *, record: bool = True) -> list[Any]:
        """collate -> run -> uncollate for one batch; raises on failure.
        ``record=False`` keeps warm-up runs out of the metrics."""
        outputs, calls = run_batch(self.op, runner, items, self.run_sizes)
        if record:
            self._record_calls(calls)
        return outputs

    def _record_calls(self, calls: CallStats) -> None:
        m = self._m
        for rows, requests in zip(calls.rows, calls.requests):
            m.call_rows.observe(rows)
            m.call_requests.observe(requests)
        for groups in calls.groups:
            m.call_pipelines.observe(groups)
        if calls.padded_units:
            m.real_units.inc(calls.real_units)
            m.padded_units.inc(calls.padded_units)

    def _record_batch(self, batch: list[QueuedItem], started: float, run_s: float, calls: CallStats) -> None:
        m = self._m
        svc = self.conf.local_service_conf
        m.batch_size.observe(len(batch))
        m.batch_fill.observe(len(batch) / svc.max_batch_size)
        if m.units_fill is not None and svc.max_batch_units is not None:
            # counted as the batcher counted it (items x largest extent), the figure the budget bounds
            m.units_fill.observe(batch_units(q.extent for q in batch) / svc.max_batch_units)
        m.run_time.observe(run_s)
        m.items.inc(len(batch))
        self._record_calls(calls)
        batch_id = next(self._batch_ids)
        for queued in batch:
            wait = max(0.0, started - queued.enqueued)
            m.queue_wait.observe(wait)
            queued.payload.work.request.add_timing(OpTiming(self.name, wait, len(batch), run_s, batch_id))
        self.window.record_batch(len(batch), [started + run_s - q.enqueued for q in batch])

    # ---- postprocess + merge, per item / per request ------------------------------------------
    def _postprocess(self, slot: _Slot, outcome: Any) -> None:
        request = slot.work.request
        if request.done:
            return
        try:
            if isinstance(outcome, ServingError):
                raise outcome
            result = self.op.postprocess(slot.item, outcome)
            if slot.work.store(slot.index, result):
                self._finish(request, slot.work.inputs, slot.work.results)
        except Exception as exc:  # noqa: BLE001 - a fault in postprocess/merge fails its own request only
            self._fail(request, exc)

    def _finish(self, request: RequestState, inputs: dict[str, Any], results: list[Any]) -> None:
        output = self.op.merge(inputs, results)
        self.deliver(request, output)

    def _expire(self, expired: list[QueuedItem]) -> None:
        for queued in expired:
            self._fail(
                queued.payload.work.request, DeadlineExceeded(f"deadline passed while queued in op {self.name!r}")
            )

    def _evicted(self, evicted: list[QueuedItem]) -> None:
        for queued in evicted:
            self._fail(
                queued.payload.work.request,
                Overloaded(f"background (shadow) item dropped: op {self.name!r} is full of foreground work"),
            )

    def _fail(self, request: RequestState, exc: BaseException) -> None:
        error = as_serving_error(exc)
        if error.status >= 500 and not isinstance(exc, ServingError):
            log.error("op %s: request %s failed", self.name, request.id, exc_info=exc)
        if request.fail(error):
            self.metrics.op_errors.labels(*self.labels, str(error.status)).inc()

    # ---- introspection -----------------------------------------------------------------------
    @property
    def devices(self) -> list[str]:
        """The device of each started instance (none before :meth:`start`), as the runners placed them."""
        svc = self.conf.local_service_conf
        return [device_of(svc, index) for index in range(len(self._runners))]

    @property
    def healthy(self) -> bool:
        """Some instance takes work (a supervised predictor process may be restarting)."""
        return not self._runners or any(_is_up(r) for r in self._runners)

    @property
    def broken(self) -> bool:
        """No instance will take work again: every one's predictor process could not be restarted."""
        return bool(self._runners) and all(isinstance(r, Restartable) and r.failed for r in self._runners)

    def snapshot(self, window: WindowReader) -> dict[str, Any]:
        """``window``'s counters since its previous read (no other reader's move) plus the queue depths now."""
        stats = window.read()
        stats.update(op=self.name, queue_depth=self.batcher.depth, channel_depth=self.channel.qsize())
        return stats


class _ThreadFlag(threading.local):
    done = False  # the default every thread sees until it sets its own


def _is_up(runner: Runner) -> bool:
    return not isinstance(runner, Restartable) or runner.ready.is_set()
