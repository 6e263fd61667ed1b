"""How many requests are in the request core now: the server waits for zero before it closes (drain)."""

from __future__ import annotations

import threading
from typing import Any


class HandlerCount:
    """Prediction handlers running now (the server waits for zero on shutdown)."""

    def __init__(self) -> None:
        self._n = 0
        self._cond = threading.Condition()

    def __enter__(self) -> HandlerCount:
        with self._cond:
            self._n += 1
        return self

    def __exit__(self, *exc: Any) -> None:
        with self._cond:
            self._n -= 1
            self._cond.notify_all()

    def wait_zero(self, timeout: float) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: self._n == 0, timeout)
