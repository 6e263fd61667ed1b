"""Per-op counters between two tracer ticks: items, batches, latency percentiles."""
from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any, Callable


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile of already sorted values (q in [0, 100])."""
    if not sorted_values:
        return 0.0
    rank = max(1, int(round(q / 100.0 * len(sorted_values) + 0.5 - 1e-9)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


class WindowStats:
    def __init__(self, max_samples: int = 4096, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._lock = threading.Lock()
        self._latencies: deque[float] = deque(maxlen=max_samples)
        self._items = 0
        self._batches = 0
        self._since = clock()

    def record_batch(self, size: int, latencies_s: list[float]) -> None:
        with self._lock:
            self._items += size
            self._batches += 1
            self._latencies.extend(latencies_s)

    def take(self) -> dict[str, Any]:
        """Summary since the previous call, then reset."""
        with self._lock:
            now = self._clock()
            span = max(1e-9, now - self._since)
            lat = sorted(self._latencies)
            items, batches = self._items, self._batches
            self._latencies.clear()
            self._items = self._batches = 0
            self._since = now
        return {
            "interval_s": span,
            "items": items,
            "qps": items / span,
            "mean_batch": items / batches if batches else 0.0,
            "p50_ms": percentile(lat, 50) * 1000,
            "p99_ms": percentile(lat, 99) * 1000,
        }
