"""One request's life in the engine: its value, deadline, priority, outputs
per op, timeline, and the one-shot result the caller waits for."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from serving.errors import DeadlineExceeded, ServingError


@dataclass
class OpTiming:
    """One batch an item of this request ran in."""

    op: str
    queue_wait_s: float
    batch_size: int
    run_s: float
    batch_id: int = 0  # items of one request that ran in the same batch share it


class RequestState:
    """Created by :meth:`serving.batching.pipeline.Pipeline.submit`; the handle callers keep.
    Only the first ``finish``/``fail`` takes effect: a request that timed out never succeeds."""

    def __init__(
        self,
        request_id: int,
        value: Any,
        *,
        deadline: float,
        priority: int = 0,
        logid: Any = None,
        clock: Callable[[], float] = time.monotonic,
        owner: Any = None,
        background: bool = False,
        protocol: str = "http",
    ):
        self.id = request_id
        self.value = value
        self.deadline = deadline
        self.priority = priority
        self.logid = logid
        # the pipeline that admitted it: stages hand their outputs to it (a
        # stage shared by several pipelines serves requests of each)
        self.owner = owner
        # a shadow copy: queued behind every foreground item, evicted first when full
        self.background = background
        self.protocol = protocol  # the front end it came in by (metrics: batchline_protocol_requests)
        self.created = clock()
        self.finished_at: float | None = None
        self.outputs: dict[str, Any] = {}
        self.timeline: list[OpTiming] = []
        self._clock = clock
        self._lock = threading.Lock()
        self._event = threading.Event()  # set once the outcome is fixed and the callbacks ran
        self._completed = False
        self._result: Any = None
        self._error: ServingError | None = None
        self._callbacks: list[Callable[[RequestState], None]] = []

    # ---- completion ------------------------------------------------------------
    @property
    def done(self) -> bool:
        """Finished or failed (its outcome is fixed; waiters may not have been woken yet)."""
        return self._completed

    @property
    def error(self) -> ServingError | None:
        return self._error

    def finish(self, result: Any) -> bool:
        return self._complete(result, None)

    def fail(self, error: ServingError) -> bool:
        return self._complete(None, error)

    def _complete(self, result: Any, error: ServingError | None) -> bool:
        with self._lock:
            if self._completed:
                return False
            self._completed = True
            self._result, self._error = result, error
            self.finished_at = self._clock()
            callbacks, self._callbacks = self._callbacks, []
        # bookkeeping callbacks (the in-flight count) run before waiters wake: a client that
        # sends its next request at once must find its slot free at max_queue_size
        try:
            for callback in callbacks:
                callback(self)
        finally:
            self._event.set()
        return True

    def outcome(self) -> Any:
        """The result of a completed request without waiting (what done callbacks read:
        ``result`` would wait); raises its error, or RuntimeError if it is not done."""
        if not self._completed:
            raise RuntimeError(f"request {self.id} is not done")
        if self._error is not None:
            raise self._error
        return self._result

    def add_done_callback(self, callback: Callable[[RequestState], None]) -> None:
        with self._lock:
            if not self._completed:
                self._callbacks.append(callback)
                return
        callback(self)

    # ---- waiting -----------------------------------------------------------------
    def remaining(self) -> float:
        return self.deadline - self._clock()

    def wait(self, timeout: float | None = None) -> bool:
        return self._event.wait(timeout)

    def result(self, timeout: float | None = None) -> Any:
        """Wait for the outcome; past the deadline the request fails with 504. A shorter
        ``timeout`` raises :class:`TimeoutError` and leaves the request running."""
        limit = self.remaining() if timeout is None else min(timeout, self.remaining())
        if not self._event.wait(max(0.0, limit)):
            if self.remaining() > 0:
                raise TimeoutError(f"request {self.id} still running")
            self.fail(
                DeadlineExceeded(f"request {self.id} timed out after {(self._clock() - self.created) * 1000:.0f} ms")
            )
        if self._error is not None:
            raise self._error
        return self._result

    def add_timing(self, timing: OpTiming) -> None:
        with self._lock:
            self.timeline.append(timing)

    def timing_summary(self) -> dict[str, Any]:
        """Per op: max queue wait, size and run time of each batch its items ran in; the total."""
        per_op: dict[str, dict[str, Any]] = {}
        with self._lock:
            timeline = list(self.timeline)
        seen: set[tuple[str, int]] = set()
        for t in timeline:
            entry = per_op.setdefault(t.op, {"queue_wait_ms": 0.0, "batch_sizes": [], "run_ms": 0.0})
            entry["queue_wait_ms"] = max(entry["queue_wait_ms"], round(t.queue_wait_s * 1000, 3))
            if (t.op, t.batch_id) in seen:
                continue
            seen.add((t.op, t.batch_id))
            entry["batch_sizes"].append(t.batch_size)
            entry["run_ms"] = round(entry["run_ms"] + t.run_s * 1000, 3)
        end = self.finished_at if self.finished_at is not None else self._clock()
        return {"total_ms": round((end - self.created) * 1000, 3), "ops": per_op}
