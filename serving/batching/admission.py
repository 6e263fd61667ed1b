"""Admission control: refuse fast (503 + Retry-After) a request the server cannot
be expected to finish before its deadline: beyond ``max_queue_size`` in flight, or
once ``min_in_flight`` are, when the expected wait (``in_flight / completion
rate`` over ``window_s``) exceeds half its time limit (DESIGN_NOTES, "Admission
by expected wait").
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Callable

from serving.errors import Overloaded


class Admission:
    def __init__(
        self,
        max_in_flight: int,
        clock: Callable[[], float],
        *,
        window_s: float = 10.0,
        min_samples: int = 16,
        wait_share: float = 0.5,
        min_in_flight: int = 4,
    ):
        self.max_in_flight = max_in_flight
        self.clock = clock
        self.window_s = window_s
        self.min_samples = min_samples
        self.wait_share = wait_share
        self.min_in_flight = min_in_flight
        self._done: deque[float] = deque(maxlen=8192)
        self._lock = threading.Lock()

    def record_completion(self) -> None:
        with self._lock:
            self._done.append(self.clock())

    def completion_rate(self) -> float | None:
        """Requests finished per second over the window, or None if too few."""
        now = self.clock()
        with self._lock:
            while self._done and now - self._done[0] > self.window_s:
                self._done.popleft()
            n = len(self._done)
            first = self._done[0] if n else now
        if n < self.min_samples:
            return None
        return n / max(now - first, 1e-3)

    def check(self, in_flight: int, time_limit_s: float) -> None:
        """Raise Overloaded if a new request should not be admitted now."""
        if in_flight >= self.max_in_flight:
            raise Overloaded(
                f"{in_flight} requests in flight (max_queue_size {self.max_in_flight})",
                retry_after=self._retry_after(in_flight),
            )
        if in_flight < self.min_in_flight:
            return
        rate = self.completion_rate()
        if rate is None:
            return
        expected = in_flight / rate
        if expected > self.wait_share * time_limit_s:
            raise Overloaded(
                f"expected wait {expected * 1000:.0f} ms exceeds half the request's time limit "
                f"({time_limit_s * 1000:.0f} ms)",
                retry_after=max(1.0, math.ceil(expected)),
            )

    def _retry_after(self, in_flight: int) -> float:
        rate = self.completion_rate()
        return 1.0 if rate is None else max(1.0, math.ceil(in_flight / rate))
