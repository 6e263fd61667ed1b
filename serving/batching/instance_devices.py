"""``batchline_op_instance_device``: the device each predictor instance of a
running op is on (``cpu`` or ``gpu:N``), as :mod:`serving.runners.placement`
placed it. Read from the live stages at scrape time, not set and removed as
stages come and go: a reload replaces a pipeline by one with the same labels
while the old one drains, and the old one's removal must not erase the new one's series."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

NAME = "batchline_op_instance_device"
DOC = "1 for the device (cpu, gpu:N) each predictor instance of an op runs on"
LABELS = ("pipeline", "version", "op", "instance", "device")

#: one op: its (pipeline, version, op) labels and its instances' devices, by instance index
Placement = tuple[tuple[str, str, str], Sequence[str]]
PlacementSource = Callable[[], Iterable[Placement]]


def _none() -> Iterable[Placement]:
    return ()


class InstanceDevices(Collector):
    """Empty until :meth:`read_from` names where the placements come from (the repository's live stages)."""

    def __init__(self, registry: CollectorRegistry):
        self._source: PlacementSource = _none
        registry.register(self)

    def read_from(self, source: PlacementSource) -> None:
        self._source = source

    def describe(self) -> Iterator[GaugeMetricFamily]:
        yield GaugeMetricFamily(NAME, DOC, labels=LABELS)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(NAME, DOC, labels=LABELS)
        for labels, devices in self._source():
            for index, device in enumerate(devices):
                family.add_metric([*labels, str(index), device], 1)
        yield family
