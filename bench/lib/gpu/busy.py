"""How busy the GPU was while a load level ran: NVML's utilisation (the share of its last
sample period in which a kernel ran) and memory, read every ``interval_s`` on a thread from
the end of the level's warm-up to its end. Issue 37's question is whether a served pipeline
keeps the GPU busy (whole-pipeline servers sit at 15-29% because their CPU side is the
bottleneck); the requests/s alone do not say which side bounds them.

NVML through :func:`serving.runners.gpus.open_gpus` (the server's own GPU metrics): without
nvidia-ml-py, a driver or a GPU, nothing is sampled and a level's summary has no ``gpu``.
"""

from __future__ import annotations

import statistics
import threading
from collections.abc import Callable
from typing import Any

from serving.runners.gpus import GpuReading, Gpus, open_gpus

INTERVAL_S = 0.1
MIB = 1 << 20


def gpus_for(device: str) -> Gpus | None:
    """The GPUs to sample for a run on ``device`` (none on the CPU)."""
    return open_gpus() if device == "cuda" else None


class GpuSampler:
    """A context that reads ``gpus`` every ``interval_s`` from ``delay_s`` after it is entered
    until it is left; :meth:`summary` then gives each GPU's mean and peak."""

    def __init__(
        self,
        gpus: Gpus | None,
        delay_s: float = 0.0,
        interval_s: float = INTERVAL_S,
        wait: Callable[[threading.Event, float], bool] | None = None,
    ) -> None:
        self._gpus = gpus
        self._delay_s = delay_s
        self._interval_s = interval_s
        self._wait = wait or (lambda event, seconds: event.wait(seconds))
        self._stop = threading.Event()
        self._readings: list[list[GpuReading]] = []
        self._thread: threading.Thread | None = None

    def __enter__(self) -> GpuSampler:
        if self._gpus is not None:
            self._thread = threading.Thread(target=self._sample, name="gpu-sampler", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _sample(self) -> None:
        assert self._gpus is not None
        if self._wait(self._stop, self._delay_s):
            return
        while True:
            self._readings.append(self._gpus.read())
            if self._wait(self._stop, self._interval_s):
                return

    def summary(self) -> dict[str, Any] | None:
        """``{"gpu0": {"util_mean_pct", "util_max_pct", "memory_max_mib", "samples"}, ...}``
        (None when nothing was sampled: no GPUs, or a level shorter than its warm-up)."""
        by_gpu: dict[int, list[GpuReading]] = {}
        for reading in (r for sample in self._readings for r in sample):
            by_gpu.setdefault(reading.index, []).append(reading)
        if not by_gpu:
            return None
        return {
            f"gpu{index}": {
                "util_mean_pct": round(100 * statistics.fmean(r.utilization for r in readings), 1),
                "util_max_pct": round(100 * max(r.utilization for r in readings), 1),
                "memory_max_mib": round(max(r.memory_used for r in readings) / MIB),
                "samples": len(readings),
            }
            for index, readings in sorted(by_gpu.items())
        }


def busiest(summary: dict[str, Any] | None) -> float | None:
    """The highest mean utilisation (percent) of a level's GPUs, or None without readings."""
    if not summary:
        return None
    return max(gpu["util_mean_pct"] for gpu in summary.values())
