"""Online estimates the adaptive batcher decides with.

* :class:`CostModel` fits ``run_time(n) = fixed + per_item * n`` by least
  squares over the most recent batch runs (warm-up runs at batch 1 and at
  ``max_batch_size`` seed it before the first request).
* :class:`ArrivalEstimator` tracks the gap between arrivals (one arrival = one
  request's items put together) as an exponentially weighted mean.
"""

from __future__ import annotations

import threading
from collections import deque


class CostModel:
    def __init__(self, window: int = 128):
        self._samples: deque[tuple[int, float]] = deque(maxlen=window)
        self._lock = threading.Lock()

    def observe(self, batch_size: int, seconds: float) -> None:
        if batch_size >= 1 and seconds >= 0:
            with self._lock:
                self._samples.append((batch_size, seconds))

    def fit(self) -> tuple[float, float] | None:
        """(fixed, per_item) seconds, or None until two batch sizes were seen."""
        with self._lock:
            samples = list(self._samples)
        if len({n for n, _ in samples}) < 2:
            return None
        k = len(samples)
        mean_n = sum(n for n, _ in samples) / k
        mean_t = sum(t for _, t in samples) / k
        var = sum((n - mean_n) ** 2 for n, _ in samples)
        cov = sum((n - mean_n) * (t - mean_t) for n, t in samples)
        per_item = max(0.0, cov / var)
        fixed = max(0.0, mean_t - per_item * mean_n)
        return fixed, per_item

    def fixed_cost(self) -> float | None:
        fitted = self.fit()
        return None if fitted is None else fitted[0]


class ArrivalEstimator:
    def __init__(self, alpha: float = 0.2):
        self.alpha = alpha
        self.last_arrival: float | None = None
        self._gap: float | None = None

    def observe(self, now: float) -> None:
        """Record one arrival at ``now`` (caller serialises calls)."""
        if self.last_arrival is not None:
            gap = max(0.0, now - self.last_arrival)
            self._gap = gap if self._gap is None else (1 - self.alpha) * self._gap + self.alpha * gap
        self.last_arrival = now

    def expected_gap(self) -> float | None:
        return self._gap
