"""Worker threads that call their ``step`` until it returns False (input closed).
An exception escaping ``step`` is a bug in the engine or an op (per-request
failures are handled inside): it is logged and the role goes to a fresh thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

Step = Callable[[], bool]


class SupervisedThreads:
    def __init__(self, prefix: str):
        self.prefix = prefix
        self._threads: dict[str, threading.Thread] = {}
        self._lock = threading.Lock()
        self.replaced = 0

    def start(self, role: str, step: Step) -> None:
        thread = threading.Thread(target=self._loop, args=(role, step), name=f"{self.prefix}-{role}", daemon=True)
        with self._lock:
            self._threads[role] = thread
        thread.start()

    def _loop(self, role: str, step: Step) -> None:
        try:
            while step():
                pass
        except BaseException:  # noqa: BLE001 - the point is to survive anything
            log.exception("%s-%s: worker thread died; starting a replacement", self.prefix, role)
            with self._lock:
                self.replaced += 1
            self.start(role, step)

    def join_role(self, role_prefix: str, timeout: float | None = None) -> None:
        """Wait for every thread whose role starts with ``role_prefix``
        (following replacements)."""
        while True:
            with self._lock:
                pending = [t for r, t in self._threads.items() if r.startswith(role_prefix) and t.is_alive()]
            if not pending:
                return
            for thread in pending:
                thread.join(timeout)
            if timeout is not None:
                return
