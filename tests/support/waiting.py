"""Waiting in tests for something another process or thread brings about."""

from __future__ import annotations

import time
from collections.abc import Callable


def until(predicate: Callable[[], object], timeout: float = 120.0, interval: float = 0.1) -> bool:
    """Whether ``predicate()`` became true within ``timeout`` seconds (checked every ``interval``)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(interval)
    return False
