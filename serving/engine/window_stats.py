"""Per-op counters between two tracer ticks: items, batches, latency percentiles."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np


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
            lat = list(self._latencies)
            items, batches = self._items, self._batches
            self._latencies.clear()
            self._items = self._batches = 0
            self._since = now
        return {
            "interval_s": span,
            "items": items,
            "qps": items / span,
            "mean_batch": items / batches if batches else 0.0,
            "p50_ms": float(np.percentile(lat, 50)) * 1000 if lat else 0.0,
            "p99_ms": float(np.percentile(lat, 99)) * 1000 if lat else 0.0,
        }
