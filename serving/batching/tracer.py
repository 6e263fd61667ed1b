"""Periodic per-op summary in the log (Paddle Serving's ``tracer``): qps, item
latency p50/p99, mean batch size and queue depths since its previous line."""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from serving.batching.pipeline import Pipeline
    from serving.batching.stage import OpStage
    from serving.batching.window_stats import WindowReader

log = logging.getLogger(__name__)


class Tracer:
    def __init__(self, pipeline: Pipeline, interval_s: float):
        self.pipeline = pipeline
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # a shared stage is not any one pipeline's: only our own stages are traced
        self._windows: dict[OpStage, WindowReader] = {s: s.window.reader() for s in pipeline.owned_stages}

    def start(self) -> None:
        if self.interval_s <= 0 or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name=f"tracer-{self.pipeline.name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            for line in self.lines():
                log.info(line)

    def lines(self) -> list[str]:
        out = [f"tracer pipeline={self.pipeline.name} in_flight={self.pipeline.in_flight}"]
        for stage, window in self._windows.items():
            s = stage.snapshot(window)
            out.append(
                f"tracer op={s['op']} qps={s['qps']:.1f} p50={s['p50_ms']:.1f}ms p99={s['p99_ms']:.1f}ms "
                f"mean_batch={s['mean_batch']:.2f} queue={s['queue_depth']} channel={s['channel_depth']}"
            )
        return out
