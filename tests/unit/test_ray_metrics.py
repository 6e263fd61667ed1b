"""One ``/metrics`` for a Ray application (serving/rayserve/metrics_hub.py):
every replica's exposition merged with a ``replica`` label, the hub that keeps
each replica's latest text until it expires, and the pusher that feeds it.
No Ray: the hub's methods are called directly (with a fake clock), and the
pusher talks to a fake handle."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from serving.batching.metrics import Metrics
from serving.rayserve.metrics_hub import REPLICA_LABEL, MetricsHub, MetricsPusher, merge_texts
from tests.support.fake_clock import FakeClock

HANG_GUARD_S = 60.0


def two_replicas() -> dict[str, str]:
    ingress, op = Metrics(), Metrics()
    ingress.requests.labels("p", "1", "200").inc(3)
    ingress.requests.labels("p", "1", "503").inc()
    op.requests.labels("p", "1", "200").inc(5)
    op.batch_size.labels("p", "1", "split").observe(3)
    op.batch_size.labels("p", "1", "split").observe(8)
    ingress.generation.set(1)
    return {"ingress-11": ingress.render().decode(), "p-split-12": op.render().decode()}


def test_each_family_is_described_once():
    text = merge_texts(two_replicas()).decode()
    for kind in ("# HELP ", "# TYPE "):
        names = [line.split()[2] for line in text.splitlines() if line.startswith(kind)]
        assert names and len(names) == len(set(names)), f"{kind.strip()} repeated"
    assert text.count("# TYPE batchline_requests_total counter") == 1


def test_samples_keep_their_labels_and_values_and_say_which_replica_they_came_from():
    families = {f.name: f for f in text_string_to_metric_families(merge_texts(two_replicas()).decode())}
    requests = {
        (s.labels[REPLICA_LABEL], s.labels["status"]): s.value
        for s in families["batchline_requests"].samples
        if s.name == "batchline_requests_total"
    }
    assert requests == {("ingress-11", "200"): 3.0, ("ingress-11", "503"): 1.0, ("p-split-12", "200"): 5.0}
    assert families["batchline_requests"].type == "counter"
    batch = families["batchline_op_batch_size"]
    assert batch.type == "histogram"
    count = [s for s in batch.samples if s.name == "batchline_op_batch_size_count"]
    assert [(s.labels, s.value) for s in count] == [
        ({"pipeline": "p", "version": "1", "op": "split", REPLICA_LABEL: "p-split-12"}, 2.0)
    ]
    for family in families.values():
        for sample in family.samples:
            assert REPLICA_LABEL in sample.labels, sample


def test_a_replica_alone_and_no_replica_merge_too():
    alone = {"only": Metrics().render().decode()}
    assert list(text_string_to_metric_families(merge_texts(alone).decode()))
    assert merge_texts({}) == b""


# ----------------------------------------------------------------------------- the hub


def test_the_hub_keeps_each_replicas_latest_text_until_it_expires():
    clock = FakeClock()
    hub = MetricsHub(clock=clock)

    async def scenario() -> list[dict[str, str]]:
        seen = []
        await hub.push("a", "a1", 6.0)
        clock.advance(4)
        await hub.push("b", "b1", 6.0)
        await hub.push("a", "a2", 6.0)  # a newer text replaces the older and renews it
        seen.append(await hub.collect())
        clock.advance(7)  # b's and a's last pushes were 7 s ago: both expired
        seen.append(await hub.collect())
        await hub.push("c", "c1", 6.0)
        await hub.push("d", "d1", 6.0)
        await hub.forget("c")  # a replica that stops cleanly leaves at once
        await hub.forget("never-pushed")
        seen.append(await hub.collect())
        return seen

    assert asyncio.run(scenario()) == [{"a": "a2", "b": "b1"}, {}, {"d": "d1"}]


# ----------------------------------------------------------------------------- the pusher


class _Result:
    def __init__(self, value: Any = None):
        self.value = value

    def result(self, timeout_s: float | None = None) -> Any:
        # as Ray's DeploymentResponse.result: refused on a thread running an event loop
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return self.value
        raise RuntimeError("Sync methods should not be called from within an `asyncio` event loop.")


class _Remote:
    def __init__(self, calls: list[tuple[str, tuple]], name: str):
        self._calls, self._name = calls, name

    def remote(self, *args: Any) -> _Result:
        self._calls.append((self._name, args))
        return _Result()


class FakeHub:
    """A handle of the hub deployment, recording what replicas send it."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple]] = []
        self.push = _Remote(self.calls, "push")
        self.forget = _Remote(self.calls, "forget")
        self.collect = _Remote(self.calls, "collect")


def test_the_pusher_sends_its_replicas_text_with_a_ttl_of_three_intervals():
    hub = FakeHub()
    metrics = Metrics()
    metrics.generation.set(7)
    pusher = MetricsPusher(hub, "p-split-12", metrics, interval_s=0.01)
    pusher.start()
    try:
        end = time.monotonic() + HANG_GUARD_S
        while not any(name == "push" for name, _ in hub.calls):
            assert time.monotonic() < end, "the pusher never pushed"
            time.sleep(0.01)
    finally:
        pusher.stop()
    name, (replica, text, ttl) = next(c for c in hub.calls if c[0] == "push")
    assert (replica, ttl) == ("p-split-12", 0.03)
    assert "batchline_generation 7.0" in text
    assert hub.calls[-1] == ("forget", ("p-split-12",))


def test_a_replica_leaves_the_hub_when_stopped_on_its_event_loop():
    """Ray Serve runs a replica's ``__del__`` (which stops the pusher) on the replica's
    event loop, where a handle's sync ``result()`` is refused: the call is still sent
    (``remote()`` is what sends it), and stopping neither raises nor hangs."""
    hub = FakeHub()
    pusher = MetricsPusher(hub, "p-split-12", Metrics(), interval_s=3600.0)
    pusher.start()

    async def shutdown_on_the_loop() -> None:
        pusher.stop()

    asyncio.run(asyncio.wait_for(shutdown_on_the_loop(), HANG_GUARD_S))
    assert ("forget", ("p-split-12",)) in hub.calls


def test_a_replica_without_a_hub_sends_nothing():
    pusher = MetricsPusher(None, "x", Metrics(), interval_s=0.01)
    pusher.start()
    pusher.stop()
    assert "batchline_generation" in pusher.text()
