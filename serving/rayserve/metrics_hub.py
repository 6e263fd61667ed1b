"""One ``/metrics`` for the whole Ray application: every replica pushes its registry's text to
the hub, and the ingress merges them, each sample labelled with its ``replica``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from serving.batching.metrics import Metrics

log = logging.getLogger(__name__)

REPLICA_LABEL = "replica"


class MetricsHub:
    """The body of the hub deployment (one replica, no CPU): the latest text of every replica."""

    def __init__(self, clock: Any = time.monotonic) -> None:
        self._clock = clock
        self._texts: dict[str, tuple[float, str]] = {}

    async def push(self, replica: str, text: str, ttl_s: float) -> None:
        self._texts[replica] = (self._clock() + ttl_s, text)

    async def forget(self, replica: str) -> None:
        self._texts.pop(replica, None)

    async def collect(self) -> dict[str, str]:
        now = self._clock()
        self._texts = {r: (t, text) for r, (t, text) in self._texts.items() if t > now}
        return {r: text for r, (_, text) in self._texts.items()}


class _Merged:
    """A collector yielding the families of several expositions, each sample labelled with its replica."""

    def __init__(self, texts: Mapping[str, str]):
        self._texts = texts

    def collect(self) -> list[Metric]:
        families: dict[str, Metric] = {}
        for replica, text in sorted(self._texts.items()):
            for family in text_string_to_metric_families(text):
                merged = families.get(family.name)
                if merged is None:
                    merged = families[family.name] = Metric(family.name, family.documentation, family.type)
                for s in family.samples:
                    merged.add_sample(s.name, {**s.labels, REPLICA_LABEL: replica}, s.value, s.timestamp, s.exemplar)
        return list(families.values())


def merge_texts(texts: Mapping[str, str]) -> bytes:
    """Prometheus text of several replicas' expositions as one (``replica`` label added)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Merged(texts))
    return generate_latest(registry)


class MetricsPusher:
    """Sends one replica's metrics to the hub every ``interval_s`` (a daemon thread)."""

    def __init__(self, hub: Any, replica: str, metrics: Metrics, interval_s: float):
        self.hub = hub
        self.replica = replica
        self.metrics = metrics
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="metrics-push", daemon=True)

    def start(self) -> None:
        if self.hub is not None:
            self._thread.start()

    def text(self) -> str:
        return self.metrics.render().decode()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.hub.push.remote(self.replica, self.text(), 3 * self.interval_s).result(timeout_s=self.interval_s)
            except Exception as exc:  # noqa: BLE001 - metrics must never take a replica down
                log.debug("metrics push failed: %s", exc)

    def stop(self) -> None:
        self._stop.set()
        if self.hub is None:
            return
        try:
            self.hub.forget.remote(self.replica).result(timeout_s=2.0)
        except Exception as exc:  # noqa: BLE001 - best effort on the way out
            log.debug("metrics forget failed: %s", exc)
