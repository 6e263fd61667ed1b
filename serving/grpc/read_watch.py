"""Calls whose message takes longer than their limit to arrive are cancelled (a client that
trickles its message is cut off as a slow HTTP body is, after ``http.request_timeout_s``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class ReadWatch:
    """One thread for all reads, started with the first, that looks every ``tick_s``
    (a timer per call would start a thread per request)."""

    def __init__(self, tick_s: float = 0.5):
        self.tick_s = tick_s
        self._reading: dict[int, tuple[float, Any]] = {}  # id(context) -> (cancel at, context)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @contextmanager
    def reading(self, context: Any, limit_s: float) -> Iterator[None]:
        key = id(context)
        with self._lock:
            self._reading[key] = (time.monotonic() + limit_s, context)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="grpc-read-watch", daemon=True)
                self._thread.start()
        try:
            yield
        finally:
            with self._lock:
                self._reading.pop(key, None)

    def _run(self) -> None:
        while True:
            time.sleep(self.tick_s)
            now = time.monotonic()
            with self._lock:
                late = [ctx for at, ctx in self._reading.values() if at <= now]
            for context in late:
                context.cancel()
