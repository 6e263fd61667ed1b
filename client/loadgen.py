"""Closed-loop and open-loop load generators, bounded in time and count.

Both take a ``client_factory`` (called once per worker thread, so each thread
owns its client and connection; the object is closed afterwards if it has a
``close()``) and ``make_request(client, i)`` which sends request number ``i``
(use ``i`` to cycle through inputs) and raises on failure — a
:class:`~client.pipeline_client.PipelineError` is counted under its status,
any other exception under status 0.

* :func:`run_closed_loop` — ``concurrency`` threads send back-to-back. The
  first ``warmup_s`` seconds are not counted; then requests *started* in the
  next ``duration_s`` seconds are counted (at most ``max_requests``).
* :func:`run_open_loop` — Poisson arrivals at ``rate``/s (seeded), handed to
  ``max_in_flight`` worker threads. When every worker is busy the arrival is
  dropped and counted in ``dropped``: the client never queues unboundedly, so
  the offered load stays what was asked. Latency is measured from the
  *scheduled* arrival time, so dispatch lag is not hidden.

Latency percentiles are over successful requests. ``qps`` is successful
requests per second of the measured window. For a closed loop that ran its
full ``duration_s``, that is the successful answers that *arrived* inside the
window (whenever they were sent) over ``duration_s``: the steady-state rate.
Dividing the requests *started* in the window by the time until the last of
them finished would add one request latency to the window and under-report a
server in proportion to its latency (8 clients at 1.5 s each over 10 s: -13%).
Otherwise (open loop, ``max_requests``, Ctrl-C) the window runs from the
first counted start to the last counted finish, at least ``duration_s``
unless ``max_requests`` ended it early.
"""

from __future__ import annotations

import logging
import queue
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .pipeline_client import PipelineError
from .stats import ErrorCounts, latency_summary

log = logging.getLogger(__name__)

ClientFactory = Callable[[], Any]
MakeRequest = Callable[[Any, int], Any]
Progress = Callable[[dict[str, Any]], None]
PROGRESS_INTERVAL_S = 0.5


@dataclass
class LevelResult:
    """Outcome of one load level (one concurrency or one rate)."""

    mode: str  # "closed" or "open"
    concurrency: int | None = None  # closed loop: client threads
    rate: float | None = None  # open loop: offered requests/s
    duration_s: float = 0.0  # measured window
    ok: int = 0
    errors: dict[str, int] = field(default_factory=dict)  # failed requests per HTTP status
    dropped: int = 0  # open loop: arrivals refused client-side
    latencies_s: list[float] = field(default_factory=list)  # successful requests
    op_stats: dict[str, dict[str, float | None]] = field(default_factory=dict)
    label: str = ""
    interrupted: bool = False
    #: closed loop run to its full duration: successful answers that arrived
    #: inside the measured window, whenever sent (what ``qps`` counts)
    window_ok: int | None = None

    @property
    def failed(self) -> int:
        return sum(self.errors.values())

    @property
    def requests(self) -> int:
        """Requests sent and answered (successfully or not) in the measured window."""
        return self.ok + self.failed

    @property
    def qps(self) -> float:
        done = self.ok if self.window_ok is None else self.window_ok
        return done / self.duration_s if self.duration_s > 0 else 0.0

    @property
    def latency_ms(self) -> dict[str, float]:
        return latency_summary(self.latencies_s)

    @property
    def x(self) -> float:
        """The load knob: concurrency (closed loop) or rate (open loop)."""
        return float(self.concurrency if self.mode == "closed" else self.rate or 0.0)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (no raw latencies)."""
        return {
            "label": self.label,
            "mode": self.mode,
            "concurrency": self.concurrency,
            "rate": self.rate,
            "duration_s": self.duration_s,
            "requests": self.requests,
            "ok": self.ok,
            "failed": self.failed,
            "errors": dict(self.errors),
            "dropped": self.dropped,
            "qps": self.qps,
            "window_ok": self.window_ok,
            "latency_ms": self.latency_ms,
            "op_stats": self.op_stats,
            "interrupted": self.interrupted,
        }


class _Recorder:
    """Thread-safe sink for measured outcomes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.latencies: list[float] = []
        self.errors = ErrorCounts()
        self.dropped = 0
        self.first_start: float | None = None
        self.last_finish: float | None = None
        self.ok_finishes: list[float] = []  # every success, counted or not

    def finished(self, finish: float, status: int | None) -> None:
        if status is None:
            with self._lock:
                self.ok_finishes.append(finish)

    def record(self, start: float, finish: float, status: int | None) -> None:
        if status is not None:
            self.errors.add(status)
        with self._lock:
            if status is None:
                self.latencies.append(finish - start)
            self.first_start = start if self.first_start is None else min(self.first_start, start)
            self.last_finish = finish if self.last_finish is None else max(self.last_finish, finish)

    def drop(self) -> None:
        with self._lock:
            self.dropped += 1

    def counts(self) -> dict[str, int]:
        with self._lock:
            ok, dropped = len(self.latencies), self.dropped
        return {"ok": ok, "failed": self.errors.total, "dropped": dropped}


class _Tickets:
    """At most ``limit`` takes succeed (unlimited when None)."""

    def __init__(self, limit: int | None):
        self._left = limit
        self._lock = threading.Lock()

    def take(self) -> bool:
        if self._left is None:
            return True
        with self._lock:
            if self._left <= 0:
                return False
            self._left -= 1
            return True


def _call(make_request: MakeRequest, client: Any, i: int, warned: threading.Event) -> int | None:
    """Run one request; None on success, else the status to count it under."""
    try:
        make_request(client, i)
        return None
    except PipelineError as e:
        return e.status
    except Exception:  # noqa: BLE001 - a load generator must keep going; logged once
        if not warned.is_set():
            warned.set()
            log.warning("request %d raised a non-HTTP error (counted as status 0)", i, exc_info=True)
        return 0


def _close(client: Any) -> None:
    close = getattr(client, "close", None)
    if callable(close):
        close()


def _monitor(
    threads: list[threading.Thread],
    rec: _Recorder,
    stop: threading.Event,
    progress: Progress | None,
    t0: float,
    measure_start: float,
    clock: Callable[[], float],
) -> bool:
    """Wait for ``threads``, reporting progress; True if interrupted by Ctrl-C."""
    interrupted = False
    while any(t.is_alive() for t in threads):
        try:
            for t in threads:
                t.join(timeout=PROGRESS_INTERVAL_S)
                if t.is_alive():
                    break
        except KeyboardInterrupt:
            interrupted = True
            stop.set()
            continue
        if progress is not None:
            now = clock()
            progress({"elapsed_s": now - t0, "phase": "warmup" if now < measure_start else "run", **rec.counts()})
    return interrupted


def _result(
    mode: str,
    rec: _Recorder,
    duration_s: float,
    max_requests: int | None,
    interrupted: bool,
    window: tuple[float, float] | None = None,
    **knob: Any,
) -> LevelResult:
    window_ok = None
    if window is not None and max_requests is None and not interrupted:
        lo, hi = window
        seconds = duration_s
        window_ok = sum(1 for t in rec.ok_finishes if lo <= t < hi)
    elif rec.first_start is not None and rec.last_finish is not None:
        seconds = rec.last_finish - rec.first_start
        if max_requests is None and not interrupted:
            seconds = max(seconds, duration_s)
    else:
        seconds = duration_s
    return LevelResult(
        mode=mode,
        duration_s=seconds,
        ok=len(rec.latencies),
        errors=rec.errors.as_dict(),
        dropped=rec.dropped,
        latencies_s=list(rec.latencies),
        interrupted=interrupted,
        window_ok=window_ok,
        **knob,
    )


def run_closed_loop(
    client_factory: ClientFactory,
    make_request: MakeRequest,
    concurrency: int,
    duration_s: float,
    warmup_s: float = 0.0,
    max_requests: int | None = None,
    progress: Progress | None = None,
    stop_event: threading.Event | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> LevelResult:
    """``concurrency`` threads send back-to-back; see the module docstring."""
    if concurrency < 1:
        raise ValueError("concurrency must be >= 1")
    if duration_s <= 0 or warmup_s < 0:
        raise ValueError("duration must be > 0 and warmup >= 0")
    stop = stop_event or threading.Event()
    rec, tickets, warned = _Recorder(), _Tickets(max_requests), threading.Event()
    index_lock = threading.Lock()
    next_index = [0]
    t0 = clock()
    measure_start, end = t0 + warmup_s, t0 + warmup_s + duration_s

    def worker() -> None:
        client = client_factory()
        try:
            while not stop.is_set():
                start = clock()
                if start >= end:
                    return
                measured = start >= measure_start
                if measured and not tickets.take():
                    return
                with index_lock:
                    i = next_index[0]
                    next_index[0] += 1
                status = _call(make_request, client, i, warned)
                finish = clock()
                rec.finished(finish, status)
                if measured:
                    rec.record(start, finish, status)
        finally:
            _close(client)

    threads = [threading.Thread(target=worker, name=f"closed-loop-{n}", daemon=True) for n in range(concurrency)]
    for t in threads:
        t.start()
    interrupted = _monitor(threads, rec, stop, progress, t0, measure_start, clock)
    return _result(
        "closed", rec, duration_s, max_requests, interrupted, window=(measure_start, end), concurrency=concurrency
    )


def poisson_arrivals(rate: float, duration_s: float, seed: int = 0, max_count: int | None = None) -> list[float]:
    """Arrival offsets (seconds from 0, increasing, < ``duration_s``) of a Poisson
    process with ``rate`` arrivals/s: exponential inter-arrival gaps from a seeded RNG."""
    if rate <= 0:
        raise ValueError("rate must be > 0")
    rng = random.Random(seed)
    out: list[float] = []
    t = rng.expovariate(rate)
    while t < duration_s and (max_count is None or len(out) < max_count):
        out.append(t)
        t += rng.expovariate(rate)
    return out


def run_open_loop(
    client_factory: ClientFactory,
    make_request: MakeRequest,
    rate: float,
    duration_s: float,
    warmup_s: float = 0.0,
    max_requests: int | None = None,
    max_in_flight: int = 64,
    seed: int = 0,
    progress: Progress | None = None,
    stop_event: threading.Event | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> LevelResult:
    """Poisson arrivals at ``rate``/s on ``max_in_flight`` workers; see the module docstring."""
    if max_in_flight < 1:
        raise ValueError("max_in_flight must be >= 1")
    if duration_s <= 0 or warmup_s < 0:
        raise ValueError("duration must be > 0 and warmup >= 0")
    arrivals = poisson_arrivals(rate, warmup_s + duration_s, seed)
    if max_requests is not None:
        warm = [t for t in arrivals if t < warmup_s]
        arrivals = warm + [t for t in arrivals if t >= warmup_s][:max_requests]
    stop = stop_event or threading.Event()
    rec, warned = _Recorder(), threading.Event()
    slots = threading.BoundedSemaphore(max_in_flight)
    work: queue.Queue[tuple | None] = queue.Queue()
    t0 = clock()
    measure_start = t0 + warmup_s

    def worker() -> None:
        client = client_factory()
        try:
            while True:
                job = work.get()
                if job is None:
                    return
                i, scheduled, measured = job
                try:
                    status = _call(make_request, client, i, warned)
                    if measured:
                        rec.record(scheduled, clock(), status)
                finally:
                    slots.release()
        finally:
            _close(client)

    def dispatcher() -> None:
        try:
            for i, offset in enumerate(arrivals):
                scheduled = t0 + offset
                while not stop.is_set() and clock() < scheduled:
                    sleep(max(0.0, min(scheduled - clock(), PROGRESS_INTERVAL_S)))
                if stop.is_set():
                    return
                measured = offset >= warmup_s
                if slots.acquire(blocking=False):
                    work.put((i, scheduled, measured))
                elif measured:
                    rec.drop()
        finally:
            for _ in workers:
                work.put(None)

    workers = [threading.Thread(target=worker, name=f"open-loop-{n}", daemon=True) for n in range(max_in_flight)]
    threads = workers + [threading.Thread(target=dispatcher, name="open-loop-dispatch", daemon=True)]
    for t in threads:
        t.start()
    interrupted = _monitor(threads, rec, stop, progress, t0, measure_start, clock)
    return _result("open", rec, duration_s, max_requests, interrupted, rate=rate)
