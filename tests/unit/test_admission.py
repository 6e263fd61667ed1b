"""Admission rules with a fake clock."""

import pytest

from serving.batching.admission import Admission
from serving.errors import Overloaded
from tests.support.fake_clock import FakeClock


def test_in_flight_limit():
    a = Admission(max_in_flight=3, clock=FakeClock(0.0))
    a.check(2, 30.0)
    with pytest.raises(Overloaded) as info:
        a.check(3, 30.0)
    assert "max_queue_size" in info.value.message and info.value.retry_after >= 1


def test_expected_wait_rule_needs_history_and_a_queue():
    clock = FakeClock(0.0)
    a = Admission(max_in_flight=1000, clock=clock, min_samples=16, min_in_flight=4)
    a.check(500, 1.0)  # no completions measured yet: only the in-flight limit applies
    for _ in range(20):  # 10 completions per second
        clock.advance(0.1)
        a.record_completion()
    assert a.completion_rate() == pytest.approx(10.5, rel=0.1)
    a.check(3, 0.1)  # below min_in_flight: never shed
    a.check(4, 1.0)  # 4 / 10 per s = 0.4 s <= half of 1 s
    with pytest.raises(Overloaded) as info:
        a.check(20, 1.0)  # 2 s expected > 0.5 s
    assert "expected wait" in info.value.message and info.value.retry_after == 2
    a.check(20, 30.0)  # a patient request is still admitted


def test_rate_forgets_old_completions():
    clock = FakeClock(0.0)
    a = Admission(max_in_flight=1000, clock=clock, window_s=10, min_samples=16)
    for _ in range(20):
        a.record_completion()
    clock.advance(11)
    assert a.completion_rate() is None
