"""Resident memory of a server process and its children (predictor processes
count too), read from /proc; 0 where it cannot be read."""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from serving.runners import pids


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (whichever of its threads started them)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                out.append(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    return out


def _rss_one(pid: int) -> int:
    return pids.rss_bytes(pid) or 0


def peak_rss_bytes(pid: int, *, reset: bool = False) -> int:
    """The process's RSS high-water mark (VmHWM); ``reset`` restarts it from
    the current RSS (via /proc/PID/clear_refs) after reading. 0 if unavailable."""
    peak = pids.peak_rss_bytes(pid) or 0
    if reset:
        pids.reset_peak(pid)
    return peak


def rss_bytes(pid: int, *, tree: bool = True) -> int:
    """Resident set size of ``pid`` (plus its descendants when ``tree``)."""
    total, todo, seen = 0, [pid], set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        total += _rss_one(p)
        if tree:
            todo.extend(children(p))
    return total


class RssSampler:
    """Samples ``rss_bytes(pid)`` every ``interval_s`` on a daemon thread; also the
    process's own RSS (``own``) and its largest child's (``largest_child``)."""

    def __init__(self, pid: int, interval_s: float = 1.0):
        self.pid = pid
        self.interval_s = interval_s
        self.samples: list[tuple[float, int]] = []
        self.own: list[tuple[float, int]] = []
        self.largest_child: list[tuple[float, int]] = []
        self._t0 = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="rss-sampler", daemon=True)

    def _sample(self, t: float) -> None:
        own = _rss_one(self.pid)
        subtrees = [rss_bytes(c) for c in children(self.pid)]  # one walk of the tree serves all three
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

    def peak(self, series: list[tuple[float, int]] | None = None) -> int:
        return max((s for _, s in (self.samples if series is None else series)), default=0)

    def at(self, t: float, series: list[tuple[float, int]] | None = None) -> int:
        """The first sample at or after ``t`` seconds (of the tree, or of ``series``)."""
        series = self.samples if series is None else series
        for ts, s in series:
            if ts >= t:
                return s
        return series[-1][1] if series else 0


def mb(n: float) -> str:
    return f"{n / (1 << 20):.1f} MB"
