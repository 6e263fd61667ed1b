"""The adaptive policy prices padding: its cost model is fitted with padded units
(``run_time = fixed + per_item x items + per_unit x units``), and a batch ends
before the first item whose padding would cost more than the fixed cost batching
saves. Driven by a fake clock; payloads are ``(name, extent)`` as in
test_batch_units.py."""

import pytest

from serving.batching.batcher import Batcher
from serving.batching.estimators import CostModel
from serving.batching.pipeline import Pipeline
from serving.batching.units import PaddedSize
from serving.config import parse_config
from tests.support.fake_clock import FakeClock

FIXED = 0.002  # seconds a batch costs whatever it holds
PER_UNIT = 0.0001  # seconds per padded unit


def cost_model(fixed=FIXED, per_unit=PER_UNIT):
    cost = CostModel()
    for items, units in ((1, 10), (1, 100), (4, 40)):
        cost.observe(items, fixed + per_unit * units, units)
    return cost


def make(clock, cost, **kw):
    args = dict(
        max_batch_size=8,
        max_queue_delay_s=0.010,
        policy="adaptive",
        clock=clock,
        cost_model=cost,
        extent_of=lambda p: p[1],
    )
    args.update(kw)
    return Batcher(**args)


def widths(prefix, *units):
    return [(f"{prefix}{i}", (u,)) for i, u in enumerate(units)]


def names(decision):
    return [q.payload[0] for q in decision.batch]


# ---- the model and the arithmetic ---------------------------------------------------------
def run_time(items, units, fixed=0.003, per_item=0.010, per_unit=2e-6):
    return fixed + per_item * items + per_unit * units


def test_cost_model_fits_items_and_padded_units():
    cost = CostModel()
    for items, width in ((1, 320), (1, 960), (8, 320), (8, 960)):
        cost.observe(items, run_time(items, items * 48 * width), items * 48 * width)
    assert cost.fitted() == pytest.approx((0.003, 0.010, 2e-6))
    assert cost.fit() == pytest.approx((0.003, 0.010))  # (fixed, per_item), as without extents
    cost.observe(1, run_time(1, 48 * 320) + 0.3, 48 * 320)  # a new run refits
    assert cost.fixed_cost() > 0.003


def test_a_per_item_cost_is_not_taken_for_a_fixed_one():
    # single crops of many widths, as under load once batches are cut, and the warm-up seeds
    # (1 and 32 of one width): fitted on padded units alone, the 15 ms every crop costs
    # whatever its width would look like a per-batch cost that batching saves
    cost = CostModel(window=8)
    for items in (1, 32):
        cost.observe(items, run_time(items, items * 48 * 320, 0.0, 0.015, 1e-6), items * 48 * 320, seed=True)
    for width in range(320, 1920, 80):  # 20 runs: the window keeps 8, the seeds stay
        cost.observe(1, run_time(1, 48 * width, 0.0, 0.015, 1e-6), 48 * width)
    assert cost.fitted() == pytest.approx((0.0, 0.015, 1e-6), abs=1e-9)


def test_costs_are_never_negative_and_one_size_per_item_is_a_line_over_items():
    cost = CostModel()
    for items, units, seconds in ((1, 100, 0.010), (32, 3200, 0.400), (1, 300, 0.012)):
        cost.observe(items, seconds, units)  # 32 costs more per item than 1: no fixed cost
    fixed, per_item, per_unit = cost.fitted()
    assert fixed == 0.0 and per_item >= 0 and per_unit >= 0
    same = CostModel()
    same.observe(1, 0.012, 100)
    same.observe(4, 0.030, 400)  # units move with items: padding never seen, nothing to price
    assert same.fitted() == pytest.approx((0.006, 0.006, 0.0))


def test_padding_added_counts_the_newcomer_and_the_others():
    size = PaddedSize()
    size.add((48, 320))
    assert size.padding_added((48, 320)) == 0
    assert size.padding_added((48, 960)) == 48 * (960 - 320)  # the first re-pads to 960
    size.add((48, 960))
    assert size.padding_added((48, 320)) == 48 * (960 - 320)  # the newcomer pads to 960


def test_the_batcher_observes_padded_units_where_items_have_extents():
    cost = CostModel()
    b = make(FakeClock(), cost)
    b.record_run(1, 0.005, units=100, seed=True)
    b.record_run(2, 0.010, units=250)
    assert cost._seeds == [(1, 100, 0.005)] and list(cost._samples) == [(2, 250, 0.010)]
    with pytest.raises(ValueError, match="units"):
        b.record_run(2, 0.010)
    plain = CostModel()
    Batcher(max_batch_size=8, max_queue_delay_s=0, cost_model=plain).record_run(3, 0.010, units=999)
    assert list(plain._samples) == [(3, 3, 0.010)]  # no extents: counted in items


# ---- cutting ---------------------------------------------------------------------------------
def test_mixed_widths_where_padding_does_not_pay_are_cut():
    clock = FakeClock()
    b = make(clock, cost_model(), max_queue_delay_s=1.0)
    b.put(widths("a", 10, 10, 50, 50))  # the first 50 pads the two 10s: 80 units, 8 ms > 2 ms fixed
    d = b.poll()
    assert names(d) == ["a0", "a1"] and d.reason == "adaptive (padding)"
    d = b.poll()
    assert names(d) == ["a2", "a3"] and d.reason == "adaptive"


def test_mixed_widths_where_padding_pays_are_taken_whole():
    clock = FakeClock()
    b = make(clock, cost_model(fixed=0.020))  # 8 ms of padding against a 20 ms batch
    b.put(widths("a", 10, 10, 50, 50))
    d = b.poll()
    assert names(d) == ["a0", "a1", "a2", "a3"] and d.reason == "adaptive"


def test_a_narrow_item_behind_a_wide_one_is_cut_too():
    clock = FakeClock()
    b = make(clock, cost_model())
    b.put(widths("a", 50, 10, 10))  # 10 padded to 50: 40 units, 4 ms > 2 ms
    assert names(b.poll()) == ["a0"]
    assert names(b.poll()) == ["a1", "a2"]


def test_equal_widths_are_taken_whole_where_batching_saves():
    clock = FakeClock()
    b = make(clock, cost_model())
    for i in range(3):  # arriving slower than the 2 ms batching saves: no reason to wait
        b.put(widths(f"r{i}-", 30, 30))
        clock.advance(0.003)
    d = b.poll()
    assert len(d.batch) == 6 and d.reason == "adaptive"


@pytest.mark.parametrize("groups", [False, True])
@pytest.mark.parametrize("fixed", [0.0, 0.0002])
def test_where_batching_saves_too_little_items_run_one_at_a_time(groups, fixed):
    # on a CPU a batch of rec crops costs each crop as much as running alone, or more (the two
    # instances' larger working sets): the fit finds no fixed cost, or one within its noise
    # (0.2 ms against 3.2 ms a 30-unit item costs alone), and batches hold one item
    clock = FakeClock()
    b = make(clock, cost_model(fixed=fixed), groups_by_extent=groups)
    for i in range(3):
        b.put(widths(f"r{i}-", 30, 30))
        clock.advance(0.0001)
    sizes = [len(b.poll().batch) for _ in range(6)]
    assert sizes == [1] * 6 and b.depth == 0


def test_the_saving_is_weighed_against_the_oldest_items_own_cost():
    b = make(FakeClock(), cost_model(fixed=0.002))  # 10% of a 20-unit item (2 + 2 ms), not of a 200
    b.put(widths("a", 20, 20))
    assert len(b.poll().batch) == 2
    b = make(FakeClock(), cost_model(fixed=0.002))
    b.put(widths("a", 200, 200))
    assert len(b.poll().batch) == 1


def test_a_cut_batch_leaves_at_once_where_the_stream_would_be_waited_for():
    clock = FakeClock()
    b = make(clock, cost_model(fixed=0.005, per_unit=0.001))
    for i in range(3):  # arrivals every 1 ms against a 5 ms fixed cost: worth waiting for
        b.put(widths(f"r{i}-", 1))
        clock.advance(0.001)
    d = b.poll()
    assert d.batch == [] and d.wait > 0
    b.put(widths("wide", 20))  # pads three 1s to 20: 57 ms of padding against 5 ms
    d = b.poll()
    assert names(d) == ["r0-0", "r1-0", "r2-0"] and d.reason == "adaptive (padding)"


def test_the_cut_applies_to_a_full_batch_but_not_to_a_preferred_size():
    clock = FakeClock()
    b = make(clock, cost_model(), max_batch_size=4)
    b.put(widths("a", 10, 10, 50, 50, 50, 50))  # 6 queued, max 4: still cut before the first 50
    d = b.poll()
    assert names(d) == ["a0", "a1"] and d.reason == "adaptive (padding)"
    b = make(FakeClock(), cost_model(), max_batch_size=8, preferred_sizes=[4])
    b.put(widths("a", 10, 10, 50, 50, 50))
    d = b.poll()  # a preferred size is a contract with the engine: taken as it is
    assert names(d) == ["a0", "a1", "a2", "a3"] and d.reason == "preferred"


def test_a_budget_and_the_price_of_padding_both_end_a_batch():
    clock = FakeClock()
    b = make(clock, cost_model(), max_batch_units=100)
    b.put(widths("a", 30, 30, 30, 30, 5))
    d = b.poll()  # a fourth 30 makes 120 > 100
    assert names(d) == ["a0", "a1", "a2"] and d.reason == "max_batch_units"
    d = b.poll()  # 5 padded to 30: 25 units, 2.5 ms > 2 ms
    assert names(d) == ["a3"] and d.reason == "adaptive (padding)"


# ---- ops that run one extent per call (groups_by_extent: rec, ERNIE) -------------------------
def grouped(clock=None, cost=None, **kw):
    return make(clock or FakeClock(), cost or cost_model(), groups_by_extent=True, **kw)


def test_a_grouping_op_is_batched_one_extent_at_a_time_gathered_from_behind():
    b = grouped()
    b.put(widths("a", 10, 50, 10, 50, 10))  # two requests' crops of two widths, interleaved
    d = b.poll()  # the 50s stay queued, in their order; the 10s behind them join the oldest
    assert names(d) == ["a0", "a2", "a4"] and d.reason == "adaptive (one extent)"
    d = b.poll()
    assert names(d) == ["a1", "a3"] and d.reason == "adaptive"
    assert b.depth == 0


def test_extents_a_priced_batch_would_pad_together_are_apart_where_the_op_groups():
    b = grouped(cost=cost_model(fixed=0.020))  # padding pays: one batch without grouping
    b.put(widths("a", 10, 10, 12))
    assert names(b.poll()) == ["a0", "a1"]  # 12 would be a call of its own anyway
    b = grouped(cost=CostModel())  # and it needs no fit: nothing to price
    b.put(widths("a", 10, 12, 10))
    assert names(b.poll()) == ["a0", "a2"]


def test_gathering_looks_max_batch_size_items_past_the_cut():
    b = grouped(max_batch_size=2)
    b.put(widths("a", 10, 50, 50, 50, 10))  # the last 10 is three items past the cut
    assert names(b.poll()) == ["a0"]
    b = grouped(max_batch_size=3)
    b.put(widths("a", 10, 50, 50, 50, 10))
    assert names(b.poll()) == ["a0", "a4"]


def test_gathering_never_takes_an_item_of_a_lower_priority_past_a_higher_one():
    b = grouped(priority_levels=2)
    b.put(widths("low", 10), priority=0)
    b.put(widths("high", 10, 50), priority=1)
    assert names(b.poll()) == ["high0"]  # low0 would overtake high1
    assert names(b.poll()) == ["high1"]
    assert names(b.poll()) == ["low0"]


def test_gathering_keeps_the_budget():
    b = grouped(max_batch_units=60)
    b.put(widths("a", 30, 5, 30, 30))  # a third 30 makes 90 > 60
    d = b.poll()
    assert names(d) == ["a0", "a2"] and d.reason == "max_batch_units"
    assert names(b.poll()) == ["a1"]
    assert names(b.poll()) == ["a3"]


def test_gathering_drops_the_dead_and_expired_it_meets_and_counts_what_is_left():
    clock = FakeClock()
    dead = {"a3"}
    b = grouped(clock, is_dead=lambda p: p[0] in dead)
    b.put(widths("a", 10, 50, 10, 10))
    b.put([("late", (10,))], deadline=clock() + 0.001)
    clock.advance(0.002)
    d = b.poll()
    assert names(d) == ["a0", "a2"] and [q.payload[0] for q in d.expired] == ["late"]
    assert b.depth == 1 and names(b.poll()) == ["a1"]


def test_a_grouping_op_with_the_fixed_policy_pads_as_before():
    b = make(FakeClock(), cost_model(), policy="fixed", max_queue_delay_s=0.0, groups_by_extent=True)
    b.put(widths("a", 10, 50, 10))
    assert names(b.poll()) == ["a0", "a1", "a2"]


@pytest.mark.parametrize("seed", range(5))
def test_every_item_leaves_within_as_many_batches_as_items_were_before_it(seed):
    import random

    rng = random.Random(seed)
    b = grouped(max_batch_size=4, priority_levels=2)
    items = [(f"i{n}", (rng.choice((10, 20, 40, 80)),)) for n in range(60)]
    b.put(items)
    left_in = {}
    for batch_no in range(len(items)):
        batch = b.poll().batch
        assert len({q.extent for q in batch}) <= 1
        for q in batch:
            left_in[q.payload[0]] = batch_no
    assert len(left_in) == len(items)  # nothing lost, nothing twice
    for position, (name, _) in enumerate(items):
        assert left_in[name] <= position


def test_background_batches_are_cut_the_same_way():
    b = make(FakeClock(), cost_model())
    b.put(widths("bg", 10, 50), background=True)
    d = b.poll()
    assert names(d) == ["bg0"] and d.reason == "adaptive (padding) (background)"


def test_without_a_fit_nothing_is_cut():
    b = make(FakeClock(), CostModel())
    b.put(widths("a", 10, 50, 10))
    assert len(b.poll().batch) == 3


# ---- the fixed policy is unchanged ---------------------------------------------------------
def test_the_fixed_policy_pads_as_before():
    clock = FakeClock()
    b = make(clock, cost_model(), policy="fixed")
    b.put(widths("a", 10, 10, 50, 50))
    assert b.poll().batch == []  # waits for its delay, as without extents
    clock.advance(0.010)
    d = b.poll()
    assert names(d) == ["a0", "a1", "a2", "a3"] and d.reason == "max_queue_delay"


# ---- the stage: which batchers count units, and warm-up seeds them in units ------------------
def pipeline(op_class="SizedSplitOp", **svc):
    conf = {"max_batch_size": 8, "max_queue_delay": 2, "concurrency": 1, "instance_num": 1, **svc}
    ops = {"split": {"class": f"tests.support.engine_fakes:{op_class}", "input_ops": [], "local_service_conf": conf}}
    return Pipeline(parse_config({"name": "fake", "dag": {"request_timeout_ms": 20000}, "op": ops}))


@pytest.mark.parametrize(
    "svc, counts",
    [({}, True), ({"batching_policy": "fixed"}, False), ({"batching_policy": "fixed", "max_batch_units": 40}, True)],
)
def test_a_stage_counts_units_for_the_adaptive_policy_or_a_budget(svc, counts):
    p = pipeline(**svc)
    p.start()
    try:
        stage = p.stages["split"]
        assert stage.counts_units is counts
        # warm-up seeded the model at batch 1 and 8 of a 4-unit item: with units, kept as seeds
        cost = stage.batcher.cost
        assert [(n, u) for n, u, _ in cost._seeds] == ([(1, 4), (8, 32)] if counts else [])
        assert [(n, u) for n, u, _ in cost._samples] == ([] if counts else [(1, 1), (8, 8)])
        assert p.submit({"id": 1, "n": 3, "units": 4}).result()["values"] == [200, 202, 204]
    finally:
        p.shutdown(timeout=10)


@pytest.mark.parametrize(
    "op_class, svc, groups",
    [
        ("GroupedSizedSplitOp", {}, True),
        ("GroupedSizedSplitOp", {"batching_policy": "fixed"}, False),
        ("SizedSplitOp", {}, False),
    ],
)
def test_a_stage_batches_one_extent_at_a_time_where_its_op_groups_by_extent(op_class, svc, groups):
    p = pipeline(op_class, **svc)
    p.start()
    try:
        assert p.stages["split"].batcher.groups_by_extent is groups
        futures = [p.submit({"id": i, "n": 2, "units": 4 + i % 2}) for i in range(1, 5)]
        assert [f.result()["values"] for f in futures] == [[2 * (i * 100 + j) for j in range(2)] for i in range(1, 5)]
    finally:
        p.shutdown(timeout=10)
