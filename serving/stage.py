"""One op at run time: its input channel, intake workers (expand +
preprocess), batcher, predictor instances (one thread each, one batch at a
time) and postprocess workers.

``deliver(request, output)`` is called with the op's output for a request;
the pipeline wires it to the consumers' joins or to the response.
"""
from __future__ import annotations

import itertools
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable

from serving.batcher import Batcher, QueuedItem
from serving.channel import Channel, Join
from serving.errors import DeadlineExceeded, ServingError, as_serving_error
from serving.metrics import Metrics
from serving.op import Op, SubBatch
from serving.request import OpTiming, RequestState
from serving.supervise import SupervisedThreads
from serving.window_stats import WindowStats

log = logging.getLogger(__name__)

Deliver = Callable[[RequestState, Any], None]


@dataclass
class _Slot:
    """One item of one request in this op."""

    work: "_RequestWork"
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
    def __init__(self, op: Op, *, conf: Any, metrics: Metrics, deliver: Deliver,
                 channel_size: int, priority_levels: int = 1, priority_max_wait_s: float = 1.0,
                 batcher_capacity: int | None = None, clock: Callable[[], float] = time.monotonic):
        svc = conf.local_service_conf
        self.op = op
        self.name = op.name
        self.conf = conf
        self.metrics = metrics
        self.deliver = deliver
        self.clock = clock
        self.channel = Channel(self.name, channel_size)
        self.join = Join(self.channel, conf.input_ops or ["input"])
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
            spread=bool(getattr(svc, "spreads_batches", False)),
        )
        self.timeout_s = None if conf.timeout_ms is None else conf.timeout_ms / 1000.0
        self.retry = conf.retry
        self.window = WindowStats()
        self._threads = SupervisedThreads(f"op-{self.name}")
        self._post = ThreadPoolExecutor(max_workers=svc.concurrency, thread_name_prefix=f"{self.name}-post")
        self._runners: list[Any] = []
        self._batch_ids = itertools.count(1)
        self.run_sizes: list[int] = list(getattr(svc, "predictor_batch_sizes", []))

    # ---- life cycle ------------------------------------------------------------------
    def start(self, runners: list[Any]) -> None:
        self._runners = runners
        svc = self.conf.local_service_conf
        for i in range(svc.concurrency):
            self._threads.start(f"intake-{i}", self._intake_once)
        for i, runner in enumerate(runners):
            self._threads.start(f"instance-{i}", lambda r=runner: self._instance_once(r))

    def stop(self, timeout: float | None = None) -> None:
        """Close intake and batcher; workers finish what is queued, then exit."""
        self.channel.close()
        self._threads.join_role("intake", timeout)
        self.batcher.close()
        self._threads.join_role("instance", timeout)
        self._post.shutdown(wait=True)
        for runner in self._runners:
            close = getattr(runner, "close", None)
            if close is not None:
                close()

    def accept(self, source: str, request: RequestState, output: Any) -> None:
        """Called by an upstream op (or the pipeline, with source "input")."""
        self.join.deliver(source, request, output)

    # ---- intake: expand + preprocess, per request -------------------------------------------
    def _intake_once(self) -> bool:
        entry = self.channel.get()
        if entry is None:
            return False
        request, inputs = entry
        if request.done:
            return True
        try:
            self._intake(request, inputs)
        except Exception as exc:  # a bad input fails its own request only
            self._fail(request, exc)
        return True

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
        while not self.batcher.put(slots, priority=request.priority, deadline=deadline,
                                   timeout=max(0.001, min(0.5, deadline - self.clock()))):
            if self.batcher.closed:
                raise ServingError("server is shutting down")
            if request.done:
                return
            if self.clock() >= deadline:
                raise DeadlineExceeded(f"deadline passed while waiting for room in op {self.name!r}")
        self.metrics.queue_depth.labels(self.name).set(self.batcher.depth)

    # ---- instances: one batch at a time per runner -----------------------------------------
    def _instance_once(self, runner: Any) -> bool:
        batch = self.batcher.next_batch(on_expired=self._expire)
        if batch is None:
            return False
        try:
            self.metrics.queue_depth.labels(self.name).set(self.batcher.depth)
            started = self.clock()
            outcomes = self._run_with_retry(runner, [q.payload.item for q in batch])
            run_s = self.clock() - started
            self.batcher.record_run(len(batch), run_s)
            self._record_batch(batch, started, run_s)
            for queued, outcome in zip(batch, outcomes):
                self._post.submit(self._postprocess, queued.payload, outcome)
        except BaseException as exc:  # the thread dies and is replaced; its batch must not vanish
            for queued in batch:
                self._fail(queued.payload.work.request, exc)
            raise
        return True

    def _run_with_retry(self, runner: Any, items: list[Any]) -> list[Any]:
        """Per-item raw outputs, or a ServingError for items that failed.

        A failed batch is retried item by item ``retry`` times, so one bad
        item cannot take its batch-mates down with it."""
        try:
            return self.run_batch(runner, items)
        except Exception as exc:
            if self.retry <= 0:
                log.warning("op %s: batch of %d failed: %s", self.name, len(items), exc)
                return [as_serving_error(exc)] * len(items)
            log.warning("op %s: batch of %d failed (%s); retrying item by item", self.name, len(items), exc)
        outcomes: list[Any] = []
        for item in items:
            error: Exception | None = None
            for _ in range(self.retry):
                try:
                    outcomes.append(self.run_batch(runner, [item])[0])
                    break
                except Exception as exc:  # noqa: PERF203 - retry loop
                    error = exc
            else:
                log.warning("op %s: item failed after %d retries: %s", self.name, self.retry, error)
                outcomes.append(as_serving_error(error))
        return outcomes

    def run_batch(self, runner: Any, items: list[Any], *, record: bool = True) -> list[Any]:
        """collate -> run -> uncollate for one batch; raises on failure.
        ``record=False`` keeps warm-up runs out of the metrics."""
        outputs: list[Any] = [None] * len(items)
        real = padded = 0
        for sub in self._predictor_calls(items):
            raw = self.op.run(runner, sub.feed)
            for idx, out in zip(sub.indices, self.op.uncollate(sub, raw)):
                outputs[idx] = out
            real += sub.real_units
            padded += sub.padded_units
        if padded and record:
            self.metrics.real_units.labels(self.name).inc(real)
            self.metrics.padded_units.labels(self.name).inc(padded)
        return outputs

    def _predictor_calls(self, items: list[Any]):
        """The op's sub-batches, each split into ``run_batch_sizes`` chunks
        (largest first) and re-collated, so predictor shapes repeat."""
        sizes = self.run_sizes
        for sub in self.op.collate(items):
            n = len(sub.indices)
            if not sizes or n in sizes:
                yield sub
                continue
            start = 0
            for size in split_sizes(n, sizes):
                chunk = sub.indices[start:start + size]
                start += size
                for part in self.op.collate([items[i] for i in chunk]):
                    yield SubBatch(indices=[chunk[j] for j in part.indices], feed=part.feed,
                                   real_units=part.real_units, padded_units=part.padded_units, meta=part.meta)

    def _record_batch(self, batch: list[QueuedItem], started: float, run_s: float) -> None:
        m = self.metrics
        m.batch_size.labels(self.name).observe(len(batch))
        m.run_time.labels(self.name).observe(run_s)
        m.items.labels(self.name).inc(len(batch))
        batch_id = next(self._batch_ids)
        for queued in batch:
            wait = max(0.0, started - queued.enqueued)
            m.queue_wait.labels(self.name).observe(wait)
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
        except Exception as exc:
            self._fail(request, exc)

    def _finish(self, request: RequestState, inputs: dict[str, Any], results: list[Any]) -> None:
        output = self.op.merge(inputs, results)
        self.deliver(request, output)

    def _expire(self, expired: list[QueuedItem]) -> None:
        for queued in expired:
            self._fail(queued.payload.work.request,
                       DeadlineExceeded(f"deadline passed while queued in op {self.name!r}"))

    def _fail(self, request: RequestState, exc: BaseException) -> None:
        error = as_serving_error(exc)
        if error.status >= 500 and not isinstance(exc, ServingError):
            log.error("op %s: request %s failed", self.name, request.id, exc_info=exc)
        if request.fail(error):
            self.metrics.op_errors.labels(self.name, str(error.status)).inc()

    # ---- introspection -----------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """For the tracer: counters since the last snapshot plus queue depth."""
        stats = self.window.take()
        stats.update(op=self.name, queue_depth=self.batcher.depth, channel_depth=self.channel.qsize())
        return stats


def split_sizes(n: int, sizes: list[int]) -> list[int]:
    """Greedy split of ``n`` items into allowed sizes, largest first (``sizes`` holds 1)."""
    out = []
    for size in sorted(sizes, reverse=True):
        while n >= size:
            out.append(size)
            n -= size
    return out
