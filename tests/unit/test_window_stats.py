"""Per-op windows: each reader (the tracer, a probe, a test) gets every count
recorded since its own previous read; reading never empties another's window."""

from __future__ import annotations

import pytest

from serving.batching.pipeline import Pipeline
from serving.batching.window_stats import WindowStats
from serving.config import parse_config
from tests.support.fake_clock import FakeClock


def test_two_readers_each_see_the_full_counts_of_their_own_window():
    clock = FakeClock()
    stats = WindowStats(clock=clock)
    first, second = stats.reader(), stats.reader()
    stats.record_batch(3, [0.010, 0.020, 0.030])
    stats.record_batch(1, [0.040])
    clock.advance(2.0)

    a = first.read()
    b = second.read()
    assert a["items"] == b["items"] == 4
    assert a["mean_batch"] == b["mean_batch"] == 2.0
    assert a["qps"] == b["qps"] == pytest.approx(2.0)
    assert a["p50_ms"] == b["p50_ms"] == pytest.approx(25.0)

    # each reader's next window holds only what came after its own read
    stats.record_batch(2, [0.100, 0.100])
    clock.advance(1.0)
    later = first.read()
    assert later["items"] == 2 and later["interval_s"] == pytest.approx(1.0)
    assert later["p99_ms"] == pytest.approx(100.0)
    clock.advance(1.0)
    both = second.read()
    assert both["items"] == 2 and both["interval_s"] == pytest.approx(2.0)
    assert first.read()["items"] == 0


def test_a_reader_made_later_starts_its_window_then():
    clock = FakeClock()
    stats = WindowStats(clock=clock)
    stats.record_batch(5, [0.5] * 5)
    late = stats.reader()
    clock.advance(1.0)
    window = late.read()
    assert window["items"] == 0 and window["p99_ms"] == 0.0 and window["mean_batch"] == 0.0


def test_a_window_keeps_the_latest_latencies_when_more_came_than_it_holds():
    stats = WindowStats(max_samples=4, clock=FakeClock())
    reader = stats.reader()
    stats.record_batch(3, [9.0, 9.0, 9.0])
    stats.record_batch(4, [0.001] * 4)
    window = reader.read()
    assert window["items"] == 7 and window["p99_ms"] == pytest.approx(1.0)


def test_the_tracer_does_not_empty_the_window_another_reader_sees():
    clock = FakeClock()
    fake = "tests.support.engine_fakes:SplitOp"
    config = parse_config({"name": "fake", "op": {"split": {"class": fake, "local_service_conf": {}}}})
    pipeline = Pipeline(config, clock=clock)  # not started: the batches are recorded by hand
    (stage,) = pipeline.owned_stages
    other = stage.window.reader()
    stage.window.record_batch(4, [0.010] * 4)
    clock.advance(2.0)

    (_, line) = pipeline._tracer.lines()
    assert line.startswith("tracer op=split qps=2.0 ") and "mean_batch=4.00" in line
    seen = stage.snapshot(other)
    assert seen["items"] == 4 and seen["qps"] == pytest.approx(2.0) and seen["queue_depth"] == 0
    (_, again) = pipeline._tracer.lines()
    assert "qps=0.0 " in again
