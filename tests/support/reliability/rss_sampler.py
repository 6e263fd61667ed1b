"""A server's resident memory over a run: its whole process tree (predictor
processes count too), its own and its largest child's, sampled on a thread.
The readings are :mod:`serving.runners.process_memory`'s; 0 where unreadable."""

from __future__ import annotations

import statistics
import threading
import time
from typing import Any

from serving.runners.process_memory import children, rss_bytes, tree_rss_bytes


class RssSampler:
    """Samples ``tree_rss_bytes(pid)`` every ``interval_s`` on a daemon thread; also the
    process's own RSS (``own``) and its largest child's (``largest_child``)."""

    def __init__(self, pid: int, interval_s: float = 1.0):
        self.pid = pid
        self.interval_s = interval_s
        self.samples: list[tuple[float, int]] = []
        self.own: list[tuple[float, int]] = []
        self.largest_child: list[tuple[float, int]] = []
        self._t0 = 0.0
        self.settled_at = 0.0  # seconds into the run when baseline() returned: where a growth starts
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="rss-sampler", daemon=True)

    def _sample(self, t: float) -> None:
        own = rss_bytes(self.pid) or 0
        subtrees = [tree_rss_bytes(c) for c in children(self.pid)]  # one walk of the tree serves all three
        self.samples.append((t, own + sum(subtrees)))
        self.own.append((t, own))
        self.largest_child.append((t, max(subtrees, default=0)))

    def _loop(self) -> None:
        self._t0 = time.monotonic()
        while not self._stop.is_set():
            self._sample(time.monotonic() - self._t0)
            self._stop.wait(self.interval_s)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(5)
        self._sample(self.samples[-1][0] + self.interval_s if self.samples else 0.0)

    def baseline(self, settle_s: float) -> int:
        """The median of what is sampled over the next ``settle_s`` seconds: the level a run's
        growth is measured from (0 if nothing was read)."""
        time.sleep(settle_s)
        before = [s for _, s in self.samples]
        self.settled_at = self.samples[-1][0] if self.samples else 0.0
        return int(statistics.median(before)) if before else 0

    def peak(self, series: list[tuple[float, int]] | None = None) -> int:
        return max((s for _, s in (self.samples if series is None else series)), default=0)

    def peak_after_baseline(self) -> int:
        """The peak of the samples after :meth:`baseline` returned: a heap trim during the
        settling second leaves a level above the median behind, which is not the run's."""
        return max((s for t, s in self.samples if t > self.settled_at), default=0)

    def at(self, t: float, series: list[tuple[float, int]] | None = None) -> int:
        """The first sample at or after ``t`` seconds (of the tree, or of ``series``)."""
        series = self.samples if series is None else series
        for ts, s in series:
            if ts >= t:
                return s
        return series[-1][1] if series else 0


def mb(n: float) -> str:
    return f"{n / (1 << 20):.1f} MB"
