"""Freed heap handed back to the system, so memory comes back after a burst:
glibc keeps what the process frees in its arenas, and resident memory would stay
near the peak. :class:`HeapTrim` calls ``malloc_trim(0)`` when a burst's memory
is free (:meth:`HeapTrim.trim_if_worth`); without glibc it does nothing. What it
cannot give back, and the measurements: docs/DESIGN_NOTES.md (issue 38).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import threading
from collections.abc import Callable
from typing import Any

from serving.runners.process_memory import rss_bytes

log = logging.getLogger(__name__)

INTERVAL_S = 2.0
THRESHOLD_BYTES = 16 << 20


class Mallinfo2(ctypes.Structure):
    """glibc's ``struct mallinfo2`` (2.33 and later): every field a ``size_t``."""

    _fields_ = [
        (name, ctypes.c_size_t)
        for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks")
    ] + [("keepcost", ctypes.c_size_t)]


def glibc() -> Any:
    """The C library when it is glibc with ``mallinfo2`` and ``malloc_trim``, else None."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name or "libc.so.6")
        mallinfo2, malloc_trim = libc.mallinfo2, libc.malloc_trim
    except (OSError, AttributeError):
        return None
    mallinfo2.restype = Mallinfo2
    mallinfo2.argtypes = []
    malloc_trim.restype = ctypes.c_int
    malloc_trim.argtypes = [ctypes.c_size_t]
    return libc


class HeapTrim:
    """Trims the heap of this process on a thread of its own, from :meth:`start` to :meth:`stop`.
    ``libc``: what has ``mallinfo2()`` and ``malloc_trim(pad)`` (default: glibc); ``rss``: the
    resident bytes now (default: this process's). Tests give fakes of both."""

    def __init__(
        self,
        *,
        interval_s: float = INTERVAL_S,
        threshold_bytes: int = THRESHOLD_BYTES,
        libc: Any = None,
        rss: Callable[[], int | None] | None = None,
    ):
        self.interval_s = interval_s
        self.threshold_bytes = threshold_bytes
        self._libc = glibc() if libc is None else libc
        pid = os.getpid()
        self._rss = rss if rss is not None else lambda: rss_bytes(pid)
        self._last_rss = self._rss() or 0  # the resident bytes after the last trim (or at start)
        self._free_low = self.free_bytes() or 0  # the arenas' least free bytes seen since then
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def available(self) -> bool:
        return self._libc is not None

    def free_bytes(self) -> int | None:
        """Bytes the arenas hold free (None without glibc)."""
        if self._libc is None:
            return None
        return int(self._libc.mallinfo2().fordblks)

    def trim_if_worth(self) -> bool:
        """Trim when, since the last trim, the arenas' free bytes rose ``threshold_bytes`` over
        the lowest seen (a burst is done: freed memory stays resident, so RSS does not move),
        or RSS grew that much while that much is free (a burst between two looks). A steady
        load reuses what it frees and is not trimmed again and again. Whether it trimmed."""
        rss, free = self._rss(), self.free_bytes()
        if rss is None or free is None:
            return False
        self._free_low = min(self._free_low, free)
        freed = free - self._free_low > self.threshold_bytes
        grew = rss - self._last_rss > self.threshold_bytes and free > self.threshold_bytes
        if not (freed or grew):
            return False
        self._libc.malloc_trim(0)
        self._last_rss = self._rss() or rss
        self._free_low = self.free_bytes() or 0  # (trimmed chunks stay counted free: given back, not unmapped)
        log.debug("heap trimmed: %d bytes were free, %d resident now", free, self._last_rss)
        return True

    def start(self) -> HeapTrim:
        """Start looking every ``interval_s``."""
        if self._libc is not None and self._thread is None:
            self._thread = threading.Thread(target=self._run, name="heap-trim", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.trim_if_worth()
