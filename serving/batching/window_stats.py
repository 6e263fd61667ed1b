"""Per-op counters over windows: items, batches, latency percentiles. The counts
only grow and each reader keeps its own cursor, so no read empties another's."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np


class WindowStats:
    """What one op's batches did, recorded by its instance threads."""

    def __init__(self, max_samples: int = 4096, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._lock = threading.Lock()
        # the latest latencies; a window sees those recorded since its reader's cursor (at most max_samples)
        self._latencies: deque[float] = deque(maxlen=max_samples)
        self._items = 0
        self._batches = 0
        self._samples = 0  # latencies ever recorded: the cursor readers keep

    def record_batch(self, size: int, latencies_s: list[float]) -> None:
        with self._lock:
            self._items += size
            self._batches += 1
            self._samples += len(latencies_s)
            self._latencies.extend(latencies_s)

    def reader(self) -> WindowReader:
        """A reader whose first window starts now."""
        return WindowReader(self)

    def _cursor(self) -> tuple[float, int, int, int]:
        with self._lock:
            return self._clock(), self._items, self._batches, self._samples

    def _since(self, samples: int) -> tuple[float, int, int, int, list[float]]:
        """Now, the totals, and the latencies recorded after the first ``samples``."""
        with self._lock:
            new = min(self._samples - samples, len(self._latencies))
            lat = list(self._latencies)[len(self._latencies) - new :] if new > 0 else []
            return self._clock(), self._items, self._batches, self._samples, lat


class WindowReader:
    """One reader's windows over a :class:`WindowStats`: each :meth:`read` covers
    what was recorded since this reader's previous read (or its creation)."""

    def __init__(self, stats: WindowStats):
        self._stats = stats
        self._since, self._items, self._batches, self._samples = stats._cursor()

    def read(self) -> dict[str, Any]:
        """Summary of this reader's window, which then starts again from now."""
        now, items, batches, samples, lat = self._stats._since(self._samples)
        span = max(1e-9, now - self._since)
        window_items, window_batches = items - self._items, batches - self._batches
        self._since, self._items, self._batches, self._samples = now, items, batches, samples
        return {
            "interval_s": span,
            "items": window_items,
            "qps": window_items / span,
            "mean_batch": window_items / window_batches if window_batches else 0.0,
            "p50_ms": float(np.percentile(lat, 50)) * 1000 if lat else 0.0,
            "p99_ms": float(np.percentile(lat, 99)) * 1000 if lat else 0.0,
        }
