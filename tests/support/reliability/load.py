"""Load for reliability runs: capacity from a closed loop, open-loop offered
load (Poisson arrivals) with every answer recorded, a /health/ready probe
alongside, latency percentiles."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import requests

from client.loadgen import run_closed_loop, run_open_loop
from client.pipeline_client import PipelineError
from client.stats import percentile
from tests.support.reliability.known_good import paddle_body


def pct_ms(values_s: Sequence[float], qs: Sequence[float] = (50, 90, 99)) -> dict[str, float]:
    out = {f"p{q:g}": round(percentile([v * 1000 for v in values_s], q), 1) for q in qs}
    out["max"] = round(max(values_s) * 1000, 1) if values_s else float("nan")
    out["n"] = len(values_s)
    return out


class Outcomes:
    """Thread-safe list of (status, latency_s, retry_after header or None)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.items: list[tuple[int, float, str | None]] = []

    def add(self, status: int, latency_s: float, retry_after: str | None) -> None:
        with self._lock:
            self.items.append((status, latency_s, retry_after))

    def by_status(self) -> dict[int, int]:
        counts: dict[int, int] = {}
        for status, _, _ in list(self.items):
            counts[status] = counts.get(status, 0) + 1
        return dict(sorted(counts.items()))

    def latencies(self, pred: Callable[[int], bool]) -> list[float]:
        return [lat for status, lat, _ in list(self.items) if pred(status)]


def measure_capacity(
    url: str, name: str, image: bytes, *, concurrency: int, duration_s: float, warmup_s: float = 1.0
) -> tuple[float, dict[str, float]]:
    """Closed-loop throughput (successful requests/s) and latency percentiles."""
    body = paddle_body(image)

    def factory() -> requests.Session:
        return requests.Session()

    def one(session: requests.Session, i: int) -> None:
        r = session.post(f"{url}/{name}/prediction", data=body, timeout=60)
        if r.status_code != 200:
            raise PipelineError(r.status_code, r.text[:200])

    result = run_closed_loop(
        factory, one, concurrency=concurrency, duration_s=duration_s, warmup_s=warmup_s, max_requests=100_000
    )
    return result.qps, result.latency_ms


def offer(
    url: str,
    name: str,
    image: bytes,
    rate: float,
    duration_s: float,
    *,
    max_in_flight: int,
    client_timeout_s: float,
    seed: int = 0,
) -> tuple[Any, Outcomes]:
    """Open-loop load; returns (LevelResult, Outcomes)."""
    body = paddle_body(image)
    outcomes = Outcomes()

    def one(session: requests.Session, i: int) -> None:
        began = time.monotonic()
        try:
            r = session.post(f"{url}/{name}/prediction", data=body, timeout=client_timeout_s)
        except requests.RequestException as exc:
            outcomes.add(0, time.monotonic() - began, None)
            raise PipelineError(0, str(exc)) from exc
        outcomes.add(r.status_code, time.monotonic() - began, r.headers.get("Retry-After"))
        if r.status_code != 200:
            raise PipelineError(r.status_code, r.text[:200])

    # sleep clamped at 0: client.loadgen's dispatcher can compute a negative sleep when its
    # clock moves between the check and the call (ValueError kills the dispatcher thread)
    result = run_open_loop(
        requests.Session,
        one,
        rate=rate,
        duration_s=duration_s,
        max_in_flight=max_in_flight,
        seed=seed,
        sleep=lambda s: time.sleep(max(0.0, s)),
    )
    return result, outcomes


class HealthProbe:
    """GET /health/ready once per ``interval_s``; records (status, latency)."""

    def __init__(self, url: str, interval_s: float = 1.0):
        self.url = url
        self.interval_s = interval_s
        self.results: list[tuple[int, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="health-probe", daemon=True)

    def _loop(self) -> None:
        with requests.Session() as s:
            while not self._stop.is_set():
                began = time.monotonic()
                try:
                    status = s.get(self.url + "/health/ready", timeout=10).status_code
                except requests.RequestException:
                    status = 0
                self.results.append((status, time.monotonic() - began))
                self._stop.wait(max(0.0, self.interval_s - (time.monotonic() - began)))

    def __enter__(self) -> HealthProbe:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(15)
