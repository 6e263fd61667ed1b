"""``max_batch_units``: the batcher's memory budget per batch, driven by a fake
clock (no sleeps), and the padded-size arithmetic it counts with.

Payloads here are ``(name, extent)``; the batcher reads the extent through
``extent_of``, as the stage reads ``Op.pad_extent`` of a preprocessed item."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from serving.batching.batcher import Batcher
from serving.batching.estimators import CostModel
from serving.batching.units import PaddedSize, batch_units, checked_extent, items_within
from serving.errors import InternalError
from tests.support.fake_clock import FakeClock


def make(clock, **kw):
    args = dict(
        max_batch_size=8,
        max_queue_delay_s=0.010,
        policy="fixed",
        clock=clock,
        max_batch_units=100,
        extent_of=lambda p: p[1],
    )
    args.update(kw)
    return Batcher(**args)


def sized(prefix, *units):
    """One request's items, 1-D extents: ``sized("a", 30, 30)`` -> [("a0", (30,)), ("a1", (30,))]."""
    return [(f"{prefix}{i}", (u,)) for i, u in enumerate(units)]


def names(decision):
    return [q.payload[0] for q in decision.batch]


# ---- the arithmetic ---------------------------------------------------------------------
def test_a_batch_counts_as_padded_to_its_largest_extent_in_every_dimension():
    assert batch_units([(10,), (30,), (20,)]) == 3 * 30
    # a tall and a wide image pad each other: 2 x 100 x 100, though each holds 1,000 pixels
    assert batch_units([(100, 10), (10, 100)]) == 2 * 100 * 100
    assert batch_units([]) == 0
    size = PaddedSize()
    size.add((48, 320))
    assert size.with_item((48, 640)) == 2 * 48 * 640 and size.units == 48 * 320


def test_how_many_items_of_one_size_a_budget_holds():
    assert items_within((48, 320), 48 * 320 * 5 + 1, limit=8) == 5
    assert items_within((48, 320), 48 * 320 * 50, limit=8) == 8
    assert items_within((48, 320), 10, limit=8) == 1  # an item over the budget still runs, alone


@pytest.mark.parametrize("value", [(), [3], (0, 4), (2, -1), (True,), (2.5,), None, "12"])
def test_an_extent_must_be_a_tuple_of_positive_ints(value):
    with pytest.raises(InternalError, match=r"op 'rec': pad_extent\(\) must return"):
        checked_extent(value, "rec")


def test_numpy_ints_are_taken_as_ints():
    import numpy as np

    assert checked_extent((np.int64(48), 320), "rec") == (48, 320)


# ---- splitting, never exceeding, oversized items -------------------------------------------
def test_a_budget_splits_a_batch_and_the_rest_waits_for_the_next():
    clock = FakeClock()
    b = make(clock)
    b.put(sized("a", 30, 30, 30, 30, 40, 40))  # one request of 6 items, budget 100
    d = b.poll()
    assert names(d) == ["a0", "a1", "a2"] and d.reason == "max_batch_units"  # 90; a fourth makes 120
    d = b.poll()
    assert names(d) == ["a3", "a4"] and d.reason == "max_batch_units"  # 30 + 40 pad to 80; a third makes 120
    d = b.poll()  # 40 of 100: another item could join, so it waits as without a budget
    assert d.batch == [] and d.wait == pytest.approx(0.010)
    clock.advance(0.010)
    assert names(b.poll()) == ["a5"] and b.depth == 0


def test_a_batch_that_could_still_grow_waits_as_without_a_budget():
    clock = FakeClock()
    b = make(clock)
    b.put(sized("a", 10, 10))  # 20 of 100: more items may come
    d = b.poll()
    assert d.batch == [] and d.wait == pytest.approx(0.010)
    clock.advance(0.010)
    assert names(b.poll()) == ["a0", "a1"]


def test_padding_counts_a_small_item_behind_a_large_one_at_the_large_ones_size():
    clock = FakeClock()
    b = make(clock)
    b.put(sized("a", 60, 5))  # 2 x 60 = 120 > 100, though the units add up to 65
    assert names(b.poll()) == ["a0"]
    clock.advance(0.010)
    assert names(b.poll()) == ["a1"]


def test_two_dimensional_items_pad_each_other():
    clock = FakeClock()
    b = make(clock, max_batch_units=5000)
    b.put([("tall", (100, 10)), ("wide", (10, 100))])  # 1,000 pixels each, 20,000 padded together
    assert names(b.poll()) == ["tall"]


def test_an_item_over_the_budget_runs_alone_at_once():
    clock = FakeClock()
    b = make(clock)
    b.put(sized("a", 20, 500, 20))
    d = b.poll()
    assert names(d) == ["a0"] and d.reason == "max_batch_units"  # the large one would not fit beside it
    d = b.poll()
    assert names(d) == ["a1"] and d.reason == "max_batch_units (one item over the budget, alone)"
    d = b.poll()  # the next one is not held back by it: 20 of 100, so it waits for company as usual
    assert d.batch == [] and d.wait == pytest.approx(0.010)


def test_a_large_item_at_the_head_is_not_overtaken_by_small_ones():
    clock = FakeClock()
    b = make(clock, max_batch_size=4)
    b.put(sized("big", 90))
    b.put(sized("s", 10, 10, 10, 10, 10))
    taken = [names(b.poll())]
    assert taken == [["big0"]]  # 90 + a 10 would pad to 2 x 90: full, and it goes first
    assert names(b.poll()) == ["s0", "s1", "s2", "s3"]  # max_batch_size still caps


@settings(max_examples=150, deadline=None)
@given(
    requests=st.lists(
        st.tuples(
            st.lists(st.tuples(st.integers(1, 40), st.integers(1, 40)), min_size=1, max_size=6),
            st.integers(0, 2),  # priority
            st.booleans(),  # background
        ),
        min_size=1,
        max_size=12,
    ),
    budget=st.integers(1, 4000),
    max_batch_size=st.integers(1, 8),
    policy=st.sampled_from(["fixed", "adaptive"]),
    preferred=st.lists(st.integers(1, 8), max_size=3),
    idle=st.integers(1, 3),
)
def test_no_batch_ever_exceeds_the_budget_and_every_item_is_taken_once(
    requests, budget, max_batch_size, policy, preferred, idle
):
    clock = FakeClock()
    b = make(
        clock,
        max_batch_size=max_batch_size,
        max_batch_units=budget,
        policy=policy,
        preferred_sizes=preferred,
        priority_levels=3,
        priority_max_wait_s=0.003,
        spread=True,
        cost_model=CostModel(),
    )
    sent = []
    for r, (extents, priority, background) in enumerate(requests):
        items = [(f"r{r}i{i}", e) for i, e in enumerate(extents)]
        sent += [name for name, _ in items]
        b.put(items, priority=priority, background=background)
        clock.advance(0.001)
    taken = []
    for _ in range(10 * len(sent)):  # every poll either takes a batch or the clock moves on
        d = b.poll(idle=idle)
        if not d.batch:
            clock.advance(0.002)
            continue
        assert len(d.batch) <= max_batch_size
        units = batch_units(q.payload[1] for q in d.batch)
        assert units <= budget or len(d.batch) == 1, (d.reason, [q.payload for q in d.batch])
        assert len({q.background for q in d.batch}) == 1  # lanes never mix
        taken += names(d)
        if b.depth == 0:
            break
    assert sorted(taken) == sorted(sent)  # nothing lost, nothing twice, nothing starved


# ---- with the batching rules ------------------------------------------------------------
def test_max_batch_size_still_caps_a_batch_of_small_items():
    clock = FakeClock()
    b = make(clock, max_batch_size=4, max_batch_units=10**6)
    b.put(sized("a", *[1] * 10))
    d = b.poll()
    assert len(d.batch) == 4 and d.reason == "max_batch_size"


def test_preferred_sizes_still_apply_within_the_budget():
    clock = FakeClock()
    b = make(clock, preferred_sizes=[4])
    b.put(sized("a", *[10] * 6))  # 6 x 10 fits, not full: the preferred 4 goes now
    d = b.poll()
    assert len(d.batch) == 4 and d.reason == "preferred"
    b.put(sized("b", *[30] * 6))  # 2 left of 10 + 30s: 2 x 10 + ... pads to 30 each: 3 fit (90)
    d = b.poll()
    assert names(d) == ["a4", "a5", "b0"] and d.reason == "max_batch_units"


def test_adaptive_waits_for_company_until_the_budget_is_full():
    clock = FakeClock()
    cost = CostModel()
    cost.observe(1, 0.006)
    cost.observe(8, 0.013)  # fixed cost 5 ms: a dense stream is worth waiting for
    b = make(clock, policy="adaptive", cost_model=cost)
    for i in range(3):  # arrivals every 1 ms
        b.put(sized(f"r{i}-", 20))
        clock.advance(0.001)
    d = b.poll()
    assert d.batch == [] and d.wait > 0  # 60 of 100: adaptive keeps waiting
    b.put(sized("r3-", 20))
    b.put(sized("r4-", 20))
    d = b.poll()  # 100 of 100: full, whatever the policy would wait for
    assert len(d.batch) == 5 and d.reason == "max_batch_units"


def test_adaptive_lone_request_runs_at_once_with_a_budget():
    clock = FakeClock()
    b = make(clock, policy="adaptive")
    b.put(sized("only", 10))
    d = b.poll()
    assert names(d) == ["only0"] and d.reason == "adaptive"


def test_priorities_decide_the_order_the_budget_counts_in():
    clock = FakeClock()
    b = make(clock, priority_levels=2, priority_max_wait_s=10)
    b.put(sized("low", 10, 10), priority=0)
    b.put(sized("high", 80), priority=1)
    d = b.poll()  # high first: 80, then a low pads to 2 x 80 -> full
    assert names(d) == ["high0"] and d.reason == "max_batch_units"


def test_a_starving_item_goes_first_and_counts_first():
    clock = FakeClock()
    b = make(clock, priority_levels=2, priority_max_wait_s=0.5)
    b.put(sized("low", 60), priority=0)
    clock.advance(0.6)  # waited past priority_max_wait
    b.put(sized("high", 10, 10), priority=1)
    d = b.poll()
    assert names(d) == ["low0"] and d.reason == "max_batch_units"  # 60 + a 10 padded to 60 > 100


def test_expired_and_dead_items_do_not_count_against_the_budget():
    clock = FakeClock()
    dead = {"a1"}
    b = make(clock, is_dead=lambda p: p[0] in dead)
    b.put(sized("a", 30, 30), deadline=clock.t + 1)  # a1 dies
    b.put(sized("late", 30), deadline=clock.t + 0.005)
    b.put(sized("b", 30, 30), deadline=clock.t + 1)
    clock.advance(0.006)  # "late" expired, a1 is dead: a0, b0, b1 make 90
    d = b.poll()
    assert names(d) == ["a0", "b0", "b1"] and d.reason == "max_batch_units"
    assert [q.payload[0] for q in d.expired] == ["late0"] and b.depth == 0


def test_spread_parts_stay_within_the_budget():
    clock = FakeClock()
    b = make(clock, spread=True)
    b.put(sized("a", *[20] * 8))  # 8 x 20: 5 fit; 2 idle instances get 4 each
    d = b.poll(idle=2)
    assert len(d.batch) == 4 and d.reason == "max_batch_units, spread over 2 idle instances"
    assert b.poll(idle=1).batch == []  # 4 x 20 left, room for a fifth: due after the delay, as without a budget
    clock.advance(0.010)
    assert len(b.poll(idle=1).batch) == 4


def test_background_batches_keep_the_budget():
    clock = FakeClock()
    b = make(clock)
    b.put(sized("bg", 40, 40, 40), background=True)
    d = b.poll()
    assert names(d) == ["bg0", "bg1"] and d.reason == "max_batch_units (background)"


def test_drain_keeps_the_budget():
    clock = FakeClock()
    b = make(clock)
    b.put(sized("a", 60, 60))
    b.close()
    assert names(b.poll()) == ["a0"]
    d = b.poll()
    assert names(d) == ["a1"] and d.reason == "max_batch_units"  # one 60: no second could join anyway


def test_a_size_that_cannot_be_read_fails_the_put_and_queues_nothing():
    def extent_of(payload):
        if payload == "bad":
            raise ValueError("no size")
        return (1,)

    b = make(FakeClock(), extent_of=extent_of)
    with pytest.raises(ValueError, match="no size"):
        b.put(["good", "bad"])
    assert b.depth == 0


def test_a_budget_needs_sizes():
    with pytest.raises(ValueError, match="extent_of"):
        Batcher(max_batch_size=4, max_queue_delay_s=0, max_batch_units=10)
