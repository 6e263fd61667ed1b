"""Supervised predictor processes: one watcher thread per
:class:`~serving.runners.process.ProcessPredictor` waits on its child's
sentinel, so a crash is seen when it happens, and restarts it in the
background, warmed, with back-off. After ``len(delays)`` failed starts the
instance is ``failed`` for good (liveness reports it). The watcher is also the
memory guard: a child over ``max_rss_bytes`` is recycled between batches.
Design: docs/DESIGN_NOTES.md, "Supervised predictor processes".
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable, Sequence
from multiprocessing.connection import wait
from typing import Any, Protocol, runtime_checkable

from serving.runners.process import ProcessPredictor

log = logging.getLogger(__name__)

#: seconds before each restart attempt of a dead instance
RESTART_DELAYS = (0.0, 1.0, 2.0, 4.0, 8.0)


@runtime_checkable
class Restartable(Protocol):
    """A runner that may be down for a while (a supervised predictor process being
    restarted). The stage gives it batches only while ``ready`` is set and counts it
    gone for good once ``failed``; a runner without these is always up."""

    ready: threading.Event
    failed: bool


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
        on_death: Callable[[str], None] = lambda cause: None,
        on_recycle: Callable[[int], None] = lambda rss: None,
        on_memory: Callable[[int, int], None] = lambda index, rss: None,
        warm: Callable[[Any], None] | None = None,
        delays: Sequence[float] = RESTART_DELAYS,
        poll_s: float = 0.5,
    ):
        self.name = name
        self.runners = [r for r in runners if isinstance(r, ProcessPredictor)]
        self._on_death = on_death
        self._on_recycle = on_recycle  # (RSS in bytes that made it recycle)
        self._on_memory = on_memory  # (instance index, RSS in bytes), every poll
        self._warm = warm
        self._delays = tuple(delays)
        self._poll_s = poll_s
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for i, runner in enumerate(self.runners):
            runner.supervised = True
            thread = threading.Thread(
                target=self._watch, args=(i, runner), name=f"op-{self.name}-watch-{i}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop watching (before the runners are closed: a closed runner is not dead)."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout)

    def _watch(self, index: int, runner: ProcessPredictor) -> None:
        watched = None  # the child last seen: whichever thread reaps it, its exit code lands here
        guard = _MemoryGuard(self.name, runner)
        while not self._stop.is_set():
            child = runner.child
            if child is not None:
                watched = child
                wait([child.sentinel], timeout=self._poll_s)
                if self._stop.is_set():
                    continue
                if child.is_alive():
                    self._check_memory(index, runner, guard)
                    continue
                if not runner.retire(child) and runner.child is not None:
                    continue  # a recycle replaced it and ended it on purpose
            elif runner.ready.is_set():
                continue
            code = watched.exitcode if watched is not None and watched.exitcode is not None else runner.last_exitcode
            watched = None
            cause = exit_cause(code)
            log.error("op %s: predictor process %s; restarting it", self.name, cause)
            self._on_death(cause)
            if not self._restart(runner):
                return

    def _check_memory(self, index: int, runner: ProcessPredictor, guard: _MemoryGuard) -> None:
        rss = runner.rss_bytes()
        if rss is None:
            return
        self._on_memory(index, rss)
        limit = guard.exceeded(rss)
        if limit is None:
            return
        log.warning(
            "op %s: predictor process %s holds %d MiB, over max_rss_mb %d: replacing it",
            self.name,
            runner.pid,
            rss >> 20,
            limit >> 20,
        )
        try:
            fresh = runner.recycle(self._warm)
        except Exception as exc:  # noqa: BLE001 - the old child still serves; try again later
            log.error("op %s: could not start a replacement process (%s); the old one keeps serving", self.name, exc)
            guard.back_off()
            return
        log.info(
            "op %s: predictor process replaced by %s (%s MiB, warm)",
            self.name,
            runner.pid,
            "?" if fresh is None else fresh >> 20,
        )
        self._on_recycle(rss)
        guard.recycled(fresh)

    def _restart(self, runner: ProcessPredictor) -> bool:
        """Start ``runner`` again, with back-off; False when it gave up (or was stopped)."""
        for attempt, delay in enumerate(self._delays, start=1):
            if self._stop.wait(delay):
                return False
            try:
                runner.restart(self._warm)
            except Exception as exc:  # noqa: BLE001 - any failure to start is retried, then reported
                log.warning("op %s: restart %d of %d failed: %s", self.name, attempt, len(self._delays), exc)
                continue
            log.info("op %s: predictor process %s restarted and warm", self.name, runner.pid)
            return True
        runner.failed = True
        log.error(
            "op %s: predictor process could not be restarted (%d attempts); this instance is gone "
            "and /health/live reports it",
            self.name,
            len(self._delays),
        )
        return False


class _MemoryGuard:
    """When one instance's child is over its ``max_rss_bytes``; off for good (said once)
    where a fresh, warm child is over it already, which would be replaced forever."""

    #: seconds before another try after a replacement failed to start
    RETRY_S = 30.0

    def __init__(self, name: str, runner: ProcessPredictor):
        self._name = name
        self._limit: int | None = runner.max_rss_bytes
        self._not_before = 0.0

    def exceeded(self, rss: int) -> int | None:
        """The limit ``rss`` is over (act on it now), or None."""
        if self._limit is not None and rss > self._limit and time.monotonic() >= self._not_before:
            return self._limit
        return None

    def back_off(self) -> None:
        self._not_before = time.monotonic() + self.RETRY_S

    def recycled(self, fresh_rss: int | None) -> None:
        if self._limit is not None and fresh_rss is not None and fresh_rss > self._limit:
            log.error(
                "op %s: a fresh, warm predictor process already holds %d MiB, over max_rss_mb %d: "
                "the memory guard is off for this instance (raise max_rss_mb)",
                self._name,
                fresh_rss >> 20,
                self._limit >> 20,
            )
            self._limit = None
