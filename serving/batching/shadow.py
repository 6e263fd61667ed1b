"""Shadow traffic: a sampled share of a route's requests is copied to another
version, whose answers are compared with the primary's and never returned.
Copies are background requests on idle-CPU instances; beyond ``max_in_flight``,
refused, or starved of CPU past their deadline, they are dropped and counted.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

from serving.batching.metrics import Metrics
from serving.batching.pipeline import Pipeline
from serving.batching.request import RequestState
from serving.errors import DeadlineExceeded, Overloaded, ServingError

log = logging.getLogger(__name__)


class Shadow:
    def __init__(self, route: str, pipeline: Pipeline, *, max_in_flight: int, metrics: Metrics):
        self.route = route
        self.pipeline = pipeline
        self.max_in_flight = max_in_flight
        self.metrics = metrics
        self.labels = (route, str(pipeline.version))
        self._lock = threading.Lock()
        self._in_flight = 0
        self._agree = 0
        self._compared = 0

    @property
    def in_flight(self) -> int:
        return self._in_flight

    def offer(
        self,
        primary: Pipeline,
        handles: Sequence[RequestState],
        values: Sequence[Any],
        *,
        timeout_ms: int | None,
        logid: Any,
    ) -> None:
        """Send a copy of each value; compare each copy's answer with its primary handle's."""
        for handle, value in zip(handles, values):
            with self._lock:
                full = self._in_flight >= self.max_in_flight
                if not full:
                    self._in_flight += 1
            if full:
                self._count("dropped")
                continue
            try:
                copy = self.pipeline.submit(
                    value, timeout_ms=timeout_ms, logid=logid, background=True, protocol="shadow"
                )
            except ServingError:
                self._release()
                self._count("dropped")
                continue
            _Pair(self, primary, handle, copy).watch()

    def _release(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _count(self, outcome: str) -> None:
        self.metrics.shadow_requests.labels(*self.labels, outcome).inc()

    def record(self, primary: Pipeline, handle: RequestState, copy: RequestState) -> None:
        """Both are done: classify and count the pair."""
        if copy.error is not None:
            # refused, evicted or starved of CPU under load: dropped; anything else is the shadow's fault
            dropped = isinstance(copy.error, (Overloaded, DeadlineExceeded))
            self._count("dropped" if dropped else "shadow_failed")
            return
        self.metrics.shadow_time.labels(*self.labels).observe(max(0.0, (copy.finished_at or 0.0) - copy.created))
        if handle.error is not None:
            self._count("primary_failed")
            return
        try:
            same = primary.agree(handle.outcome(), copy.outcome())
        except Exception:  # noqa: BLE001 - a comparison fault must never touch the primary's answer
            log.exception("shadow %s v%s: comparing answers failed", *self.labels)
            self._count("shadow_failed")
            return
        with self._lock:
            self._compared += 1
            self._agree += int(same)
            agreement = self._agree / self._compared
        self._count("agree" if same else "disagree")
        self.metrics.shadow_agreement.labels(*self.labels).set(agreement)


class _Pair:
    """A primary request and its shadow copy; recorded once both are done."""

    def __init__(self, shadow: Shadow, primary: Pipeline, handle: RequestState, copy: RequestState):
        self.shadow, self.primary, self.handle, self.copy = shadow, primary, handle, copy
        self._lock = threading.Lock()
        self._waiting = 2

    def watch(self) -> None:
        self.copy.add_done_callback(self._copy_done)
        self.handle.add_done_callback(self._done)

    def _copy_done(self, _: RequestState) -> None:
        self.shadow._release()
        self._done(_)

    def _done(self, _: RequestState) -> None:
        with self._lock:
            self._waiting -= 1
            both = self._waiting == 0
        if both:
            self.shadow.record(self.primary, self.handle, self.copy)
