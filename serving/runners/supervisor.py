"""Supervised predictor processes: a dead one is noticed at once and restarted
in the background.

One watcher thread per :class:`~serving.runners.process.ProcessPredictor`
waits on its child's sentinel, so a crash (SIGKILL by the OOM killer, a
segfault in native code) is seen when it happens, not when the next batch is
sent. The watcher logs why the child ended, reports it (``on_death``: the
stage counts restarts in ``/metrics``), and starts a fresh child with
back-off, warmed before it takes work. Meanwhile the instance is not
``ready``: the stage gives its batches to the op's other instances, and
readiness says 503 while an op has none. After ``len(delays)`` failed starts
in a row (its model files vanished, say) the instance is ``failed`` for good,
which liveness reports, so that an orchestrator restarts the whole server.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Sequence
from multiprocessing.connection import wait
from typing import Any

log = logging.getLogger(__name__)

#: seconds before each restart attempt of a dead instance
RESTART_DELAYS = (0.0, 1.0, 2.0, 4.0, 8.0)


def exit_cause(exitcode: int | None) -> str:
    """Why a child process ended, for the log: its exit code or the signal that killed it."""
    if exitcode is None:
        return "ended (exit status unknown)"
    if exitcode < 0:
        try:
            return f"was killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"was killed by signal {-exitcode}"
    return f"exited with code {exitcode}"


class Supervisor:
    """Watches predictor processes and restarts those that die (see the module doc)."""

    def __init__(
        self,
        name: str,
        runners: Sequence[Any],
        *,
        on_death: Callable[[str], None] | None = None,
        warm: Callable[[Any], None] | None = None,
        delays: Sequence[float] = RESTART_DELAYS,
        poll_s: float = 0.5,
    ):
        self.name = name
        self.runners = [r for r in runners if hasattr(r, "restart") and hasattr(r, "child")]
        self._on_death = on_death
        self._warm = warm
        self._delays = tuple(delays)
        self._poll_s = poll_s
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for i, runner in enumerate(self.runners):
            runner.supervised = True
            thread = threading.Thread(target=self._watch, args=(runner,), name=f"op-{self.name}-watch-{i}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop watching (before the runners are closed: a closed runner is not dead)."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout)

    def _watch(self, runner: Any) -> None:
        watched = None  # the child last seen: whichever thread reaps it, its exit code lands here
        while not self._stop.is_set():
            child = runner.child
            if child is not None:
                watched = child
                wait([child.sentinel], timeout=self._poll_s)
                if child.is_alive() or self._stop.is_set():
                    continue
                runner.retire(child)  # nothing to do if a failed run already cleaned up
            elif runner.ready.is_set():
                continue
            code = watched.exitcode if watched is not None and watched.exitcode is not None else runner.last_exitcode
            watched = None
            cause = exit_cause(code)
            log.error("op %s: predictor process %s; restarting it", self.name, cause)
            if self._on_death is not None:
                self._on_death(cause)
            if not self._restart(runner):
                return

    def _restart(self, runner: Any) -> bool:
        """Start ``runner`` again, with back-off; False when it gave up (or was stopped)."""
        for attempt, delay in enumerate(self._delays, start=1):
            if self._stop.wait(delay):
                return False
            try:
                runner.restart(self._warm)
            except Exception as exc:  # noqa: BLE001 - any failure to start is retried, then reported
                log.warning("op %s: restart %d of %d failed: %s", self.name, attempt, len(self._delays), exc)
                continue
            log.info("op %s: predictor process %s restarted and warm", self.name, getattr(runner, "pid", "?"))
            return True
        runner.failed = True
        log.error(
            "op %s: predictor process could not be restarted (%d attempts); this instance is gone "
            "and /health/live reports it",
            self.name,
            len(self._delays),
        )
        return False
