"""serving.batching.decode_budget: bytes of decoded images in flight, server-wide.
A fake clock that the budget's wait moves keeps the waiting tests instant."""

from __future__ import annotations

import threading

import pytest

from serving.batching.decode_budget import (
    MIB,
    DecodeBudget,
    budget_bytes,
    default_budget_bytes,
    request_bytes_limit,
)
from serving.errors import Overloaded, PayloadTooLarge


class FakeClock:
    """Time that passes only when the budget waits (every wait times out)."""

    def __init__(self) -> None:
        self.now = 100.0
        self.waits: list[float] = []

    def __call__(self) -> float:
        return self.now

    def wait(self, cond: threading.Condition, timeout: float) -> bool:
        self.waits.append(timeout)
        self.now += timeout
        return False


def fake_budget(capacity: int, **kwargs) -> tuple[DecodeBudget, FakeClock]:
    clock = FakeClock()
    return DecodeBudget(capacity, clock=clock, wait=clock.wait, **kwargs), clock


def test_reservations_that_fit_are_held_and_given_back():
    budget, clock = fake_budget(100)
    a = budget.reserve(60, time_limit_s=10)
    b = budget.reserve(40, time_limit_s=10)
    assert budget.in_use == 100 and not clock.waits
    a.release()
    a.release()  # once only
    assert budget.in_use == 40
    with b:
        pass
    assert budget.in_use == 0


def test_a_request_that_does_not_fit_waits_briefly_then_gets_503():
    budget, clock = fake_budget(100, max_wait_s=2.0, wait_share=0.5)
    budget.reserve(80, time_limit_s=10)
    with pytest.raises(Overloaded, match="decode_budget_mb") as info:
        budget.reserve(30, time_limit_s=10)
    assert info.value.status == 503 and info.value.retry_after is not None and info.value.retry_after >= 1
    assert sum(clock.waits) == pytest.approx(2.0)  # max_wait_s
    assert budget.in_use == 80  # nothing held by the refused request


def test_the_wait_is_at_most_a_share_of_the_requests_time_limit():
    budget, clock = fake_budget(100, max_wait_s=2.0, wait_share=0.5)
    budget.reserve(80, time_limit_s=10)
    with pytest.raises(Overloaded):
        budget.reserve(30, time_limit_s=0.4)
    assert sum(clock.waits) == pytest.approx(0.2)


def test_a_request_larger_than_the_whole_budget_gets_413_naming_the_key():
    budget, clock = fake_budget(10 * MIB)
    with pytest.raises(PayloadTooLarge, match=r"decode_budget_mb: 10\.0 MiB"):
        budget.reserve(10 * MIB + 1, time_limit_s=10)
    assert not clock.waits and budget.in_use == 0


def test_nothing_to_decode_needs_no_budget():
    budget, _ = fake_budget(0)
    with budget.reserve(0, time_limit_s=1):
        assert budget.in_use == 0


def test_shrink_gives_back_the_transient_part():
    budget, _ = fake_budget(100)
    held = budget.reserve(90, time_limit_s=10)
    held.shrink(50)
    assert budget.in_use == 50
    held.shrink(70)  # never grows
    assert budget.in_use == 50 and held.nbytes == 50
    budget.reserve(50, time_limit_s=10)
    held.release()
    assert budget.in_use == 50


def test_a_release_wakes_a_waiting_request():
    waiting = threading.Event()

    def wait(cond: threading.Condition, timeout: float) -> bool:
        waiting.set()
        return cond.wait(timeout)

    # real clock: the release, not the timeout, ends the wait
    budget = DecodeBudget(100, max_wait_s=30.0, wait=wait)
    first = budget.reserve(80, time_limit_s=60)
    waiter = threading.Thread(target=lambda: budget.reserve(50, time_limit_s=60))
    waiter.start()
    assert waiting.wait(timeout=20)
    first.release()
    waiter.join(timeout=20)
    assert not waiter.is_alive() and budget.in_use == 50


def test_resize_follows_a_reload_and_keeps_what_is_held():
    budget, _ = fake_budget(100)
    held = budget.reserve(90, time_limit_s=10)
    budget.resize(50)
    assert budget.capacity == 50 and budget.in_use == 90
    with pytest.raises(Overloaded):
        budget.reserve(10, time_limit_s=10)
    held.release()
    budget.reserve(50, time_limit_s=10)
    with pytest.raises(PayloadTooLarge):
        budget.reserve(51, time_limit_s=10)


def test_the_default_budget_is_one_maximal_request_its_working_copies_and_its_transient_copy():
    assert request_bytes_limit(40_000_000) == 2 * 40_000_000 * 4
    # decoded arrays + the ops' BGR copies of two images + decoding's copy of the largest
    assert default_budget_bytes([1000, 40_000_000]) == 2 * request_bytes_limit(40_000_000) + 2 * 40_000_000 * 3
    assert budget_bytes(None, [40_000_000]) == 880_000_000
    assert budget_bytes(256, [40_000_000]) == 256 * MIB
