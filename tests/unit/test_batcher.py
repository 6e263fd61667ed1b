"""Batcher decisions, driven by a fake clock (no sleeps)."""

import threading

import pytest

from serving.batching.batcher import Batcher
from serving.batching.estimators import ArrivalEstimator, CostModel
from tests.support.fake_clock import FakeClock


def make(clock, **kw):
    args = dict(max_batch_size=4, max_queue_delay_s=0.010, policy="fixed", clock=clock)
    args.update(kw)
    return Batcher(**args)


def payloads(d):
    return [q.payload for q in d.batch]


def test_waits_until_delay_then_dispatches_what_is_queued():
    clock = FakeClock()
    b = make(clock)
    b.put(["a", "b"])
    d = b.poll()
    assert d.batch == [] and d.wait == pytest.approx(0.010)
    clock.advance(0.004)
    assert b.poll().wait == pytest.approx(0.006)
    clock.advance(0.006)
    d = b.poll()
    assert payloads(d) == ["a", "b"] and d.reason == "max_queue_delay"
    assert b.depth == 0


def test_full_batch_dispatches_immediately_and_rest_waits():
    clock = FakeClock()
    b = make(clock)
    b.put(list("abcdef"))  # one request with more items than max_batch_size is split
    d = b.poll()
    assert payloads(d) == list("abcd") and d.reason == "max_batch_size"
    d = b.poll()
    assert d.batch == [] and d.wait == pytest.approx(0.010)


def test_preferred_batch_size_largest_first():
    clock = FakeClock()
    b = make(clock, max_batch_size=16, preferred_sizes=[2, 8])
    b.put(["x"])
    assert b.poll().batch == []
    b.put(list("abcdefghij"))  # 11 queued -> largest preferred <= 11 is 8
    d = b.poll()
    assert len(d.batch) == 8 and d.reason == "preferred"
    d = b.poll()  # 3 left -> preferred 2
    assert len(d.batch) == 2 and d.reason == "preferred"
    d = b.poll()  # 1 left -> waits for the delay
    assert d.batch == []


def test_fifo_across_requests():
    clock = FakeClock()
    b = make(clock, max_batch_size=3)
    b.put(["a1", "a2"])
    clock.advance(0.001)
    b.put(["b1", "b2"])
    assert payloads(b.poll()) == ["a1", "a2", "b1"]
    clock.advance(0.02)
    assert payloads(b.poll()) == ["b2"]


def test_expired_items_never_dispatched():
    clock = FakeClock()
    b = make(clock)
    b.put(["late"], deadline=clock.t + 0.005)
    b.put(["ok"], deadline=clock.t + 1.0)
    clock.advance(0.011)
    d = b.poll()
    assert payloads(d) == ["ok"]
    assert [q.payload for q in d.expired] == ["late"]


def test_dead_items_dropped_silently():
    clock = FakeClock()
    dead = {"x"}
    b = make(clock, is_dead=lambda p: p in dead)
    b.put(["x", "y"])
    clock.advance(0.02)
    d = b.poll()
    assert payloads(d) == ["y"] and d.expired == []


def test_priorities_high_first_fifo_within_level():
    clock = FakeClock()
    b = make(clock, max_batch_size=3, priority_levels=3, priority_max_wait_s=10)
    b.put(["low1"], priority=0)
    b.put(["high1"], priority=2)
    b.put(["mid1"], priority=1)
    b.put(["high2"], priority=2)
    assert payloads(b.poll()) == ["high1", "high2", "mid1"]


def test_low_priority_not_starved():
    clock = FakeClock()
    b = make(clock, max_batch_size=2, priority_levels=2, priority_max_wait_s=0.5)
    b.put(["low"], priority=0)
    for i in range(3):
        clock.advance(0.2)
        b.put([f"h{i}a", f"h{i}b"], priority=1)
        d = b.poll()
        if "low" in payloads(d):
            break
    else:
        pytest.fail("low-priority item starved")
    assert i == 2  # taken once it waited past priority_max_wait (0.6 s > 0.5 s)
    assert payloads(d)[0] == "low"


def test_priority_out_of_range_is_clamped():
    clock = FakeClock()
    b = make(clock, priority_levels=2)
    b.put(["a"], priority=99)
    b.put(["b"], priority=-5)
    clock.advance(1)
    assert payloads(b.poll()) == ["a", "b"]


def test_close_drains_without_waiting():
    clock = FakeClock()
    b = make(clock)
    b.put(["a"])
    b.close()
    d = b.poll()
    assert payloads(d) == ["a"] and d.reason == "drain"
    assert b.put(["b"]) is False


def seeded_cost(fixed, per_item):
    cost = CostModel()
    cost.observe(1, fixed + per_item)
    cost.observe(32, fixed + 32 * per_item)
    return cost


def test_adaptive_lone_request_dispatches_at_once():
    clock = FakeClock()
    b = make(clock, policy="adaptive", max_queue_delay_s=0.010, cost_model=seeded_cost(0.005, 0.001))
    b.put(["only"])  # first arrival: no rate known -> no reason to wait
    d = b.poll()
    assert payloads(d) == ["only"] and d.reason == "adaptive"


def test_adaptive_sparse_arrivals_dispatch_at_once():
    clock = FakeClock()
    b = make(clock, policy="adaptive", cost_model=seeded_cost(0.005, 0.001))
    for _ in range(5):  # arrivals every 50 ms: far slower than the 5 ms fixed cost
        b.put(["r"])
        assert len(b.poll().batch) == 1
        clock.advance(0.050)


def test_adaptive_dense_arrivals_wait_for_more():
    clock = FakeClock()
    b = make(clock, policy="adaptive", max_batch_size=8, max_queue_delay_s=0.010, cost_model=seeded_cost(0.005, 0.001))
    for _ in range(4):  # arrivals every 1 ms, fixed cost 5 ms: batching pays off
        b.put(["r"])
        clock.advance(0.001)
    b.poll(clock.t)  # history only
    d = b.poll()
    assert d.batch == [] and 0 < d.wait <= 0.010
    clock.advance(0.0021)  # silence for > 2 gaps: the stream stalled -> go now
    d = b.poll()
    assert len(d.batch) == 4 and d.reason == "adaptive"


def test_adaptive_never_waits_past_delay():
    clock = FakeClock()
    b = make(clock, policy="adaptive", max_batch_size=64, max_queue_delay_s=0.004, cost_model=seeded_cost(0.050, 0.001))
    for _ in range(3):  # a dense stream: every 0.5 ms against a 50 ms fixed cost
        b.put(["r"])
        clock.advance(0.0005)
    for _ in range(10):
        d = b.poll()
        if d.batch:
            break
        b.put(["r"])
        clock.advance(0.0005)
    assert d.batch and d.reason == "max_queue_delay"
    assert clock.t - 100.0 == pytest.approx(0.004)


def test_adaptive_without_cost_model_is_greedy():
    clock = FakeClock()
    b = make(clock, policy="adaptive")
    b.put(["a"])
    clock.advance(0.0001)
    b.put(["b"])
    assert len(b.poll().batch) == 2


def test_cost_model_fit():
    cost = CostModel()
    for n in (1, 4, 16, 32):
        cost.observe(n, 0.010 + 0.002 * n)
    fixed, per_item = cost.fit()
    assert fixed == pytest.approx(0.010) and per_item == pytest.approx(0.002)
    assert CostModel().fit() is None


def test_arrival_estimator():
    est = ArrivalEstimator(alpha=0.5)
    est.observe(0.0)
    assert est.expected_gap() is None
    est.observe(1.0)
    est.observe(1.5)
    assert est.expected_gap() == pytest.approx(0.75)


def test_put_blocks_when_full_until_consumed():
    b = Batcher(max_batch_size=2, max_queue_delay_s=0, policy="fixed", capacity=2)
    b.put(["a", "b"])
    done = threading.Event()

    def producer():
        b.put(["c"])
        done.set()

    t = threading.Thread(target=producer)
    t.start()
    assert not done.wait(0.1)  # backpressure: full
    assert [q.payload for q in b.next_batch(timeout=5)] == ["a", "b"]
    assert done.wait(5)
    t.join()
    assert [q.payload for q in b.next_batch(timeout=5)] == ["c"]


def test_put_timeout_when_full():
    b = Batcher(max_batch_size=2, max_queue_delay_s=0, policy="fixed", capacity=1)
    b.put(["a"])
    assert b.put(["b"], timeout=0.01) is False


def test_group_larger_than_capacity_admitted_when_empty():
    b = Batcher(max_batch_size=2, max_queue_delay_s=0, policy="fixed", capacity=2)
    assert b.put(list("abcde"), timeout=0.1)
    assert b.depth == 5


def test_next_batch_wakes_on_put_and_returns_none_when_closed():
    b = Batcher(max_batch_size=2, max_queue_delay_s=0, policy="fixed")
    got = []

    def consumer():
        while (batch := b.next_batch()) is not None:
            got.append([q.payload for q in batch])

    t = threading.Thread(target=consumer)
    t.start()
    b.put(["a", "b"])
    b.close()
    t.join(5)
    assert not t.is_alive()
    assert got == [["a", "b"]]


def test_next_batch_reports_expired():
    clock = FakeClock()
    b = make(clock)
    b.put(["x"], deadline=clock.t - 1)
    b.put(["y"])
    b.close()
    expired = []
    batch = b.next_batch(timeout=1, on_expired=lambda items: expired.extend(q.payload for q in items))
    assert [q.payload for q in batch] == ["y"] and expired == ["x"]


# ---- spreading a due batch over idle instances --------------------------------------
def test_spread_cuts_a_due_batch_into_one_part_per_idle_instance():
    clock = FakeClock()
    b = make(clock, max_batch_size=8, spread=True)
    b.put(list("abcde"))  # one OCR page: 5 text lines
    assert b.poll(idle=2).batch == []  # spreading never makes a batch due earlier
    clock.advance(0.010)
    d = b.poll(idle=2)
    assert payloads(d) == list("abc") and d.reason == "max_queue_delay, spread over 2 idle instances"
    d = b.poll(idle=1)  # the other instance takes the rest
    assert payloads(d) == list("de")


def test_spread_also_splits_a_full_batch_and_respects_max_batch_size():
    clock = FakeClock()
    b = make(clock, max_batch_size=8, spread=True)
    b.put(list("abcdefghij"))  # 10 queued, 2 idle: 5 + 5 rather than 8 + 2
    assert len(b.poll(idle=2).batch) == 5
    assert b.poll(idle=1).batch == []  # the rest is not full: due after the delay, as without spreading
    clock.advance(0.010)
    assert len(b.poll(idle=1).batch) == 5
    b.put([str(i) for i in range(40)])  # plenty queued: parts are capped at max_batch_size
    assert len(b.poll(idle=3).batch) == 8


def test_without_spread_or_with_one_idle_instance_nothing_changes():
    for spread, idle in ((False, 4), (True, 1)):
        clock = FakeClock()
        b = make(clock, max_batch_size=8, spread=spread)
        b.put(list("abcde"))
        clock.advance(0.010)
        assert payloads(b.poll(idle=idle)) == list("abcde")


@pytest.mark.parametrize("attempt", range(20))
def test_idle_instances_are_counted_while_they_wait_in_next_batch(attempt):
    # 20 attempts: an instance that already took its part must not be counted
    # as idle by the next one, whatever the thread interleaving
    b = Batcher(max_batch_size=8, max_queue_delay_s=0.0, policy="fixed", spread=True)
    got: list = []
    lock = threading.Lock()
    started = threading.Barrier(3)

    def instance():
        started.wait()
        batch = b.next_batch(timeout=10)
        with lock:
            got.append(len(batch or []))

    threads = [threading.Thread(target=instance) for _ in range(2)]
    for t in threads:
        t.start()
    started.wait()
    deadline = threading.Event()
    while b._idle < 2 and not deadline.wait(0.01):  # both instances are waiting
        pass
    b.put(list("abcdef"))
    for t in threads:
        t.join(10)
    assert sorted(got) == [3, 3]


def test_an_instance_stops_counting_as_idle_when_it_is_handed_a_batch():
    # on_expired runs after the batch is handed over and before next_batch
    # returns: by then this instance must no longer count as idle, or a second
    # idle instance would take only a share of what is left
    clock = FakeClock()
    b = make(clock, max_batch_size=4, max_queue_delay_s=0.0, spread=True)
    b.put(["x"], deadline=clock.t - 1)
    b.put(["y"])
    idle_seen = []
    batch = b.next_batch(timeout=1, on_expired=lambda items: idle_seen.append(b._idle))
    assert [q.payload for q in batch] == ["y"] and idle_seen == [0] and b._idle == 0


# ---- the background lane (shadow copies) ---------------------------------------------
def test_foreground_is_always_taken_first_and_never_batched_with_background():
    clock = FakeClock()
    b = make(clock, priority_levels=2)
    b.put(["bg1", "bg2"], background=True)
    clock.advance(0.001)
    b.put(["fg"], priority=0)
    assert b.depth == 3 and b.background_depth == 2
    clock.advance(0.010)  # every item is due
    d = b.poll()
    assert payloads(d) == ["fg"] and d.reason == "max_queue_delay"  # room for 3 more, but not for background
    d = b.poll()
    assert payloads(d) == ["bg1", "bg2"] and d.reason == "max_queue_delay (background)"
    assert all(q.background for q in d.batch) and b.depth == 0


def test_background_is_never_promoted_by_waiting():
    clock = FakeClock()
    b = make(clock, max_batch_size=2, priority_levels=2, priority_max_wait_s=0.5)
    b.put(["bg"], background=True)
    b.put(["low"], priority=0)
    taken = []
    for i in range(10):  # 2 s of a steady high-priority stream: bg waits 4x priority_max_wait
        clock.advance(0.2)
        b.put([f"h{i}a", f"h{i}b"], priority=1)
        taken += payloads(b.poll())
    assert "low" in taken  # the foreground's own starvation rule still holds
    assert "bg" not in taken and b.background_depth == 1
    clock.advance(0.010)
    assert payloads(b.poll()) == ["h9b"]  # the one foreground item "low" displaced
    assert payloads(b.poll()) == ["bg"]  # the foreground is empty now


def test_background_items_form_batches_of_their_own():
    clock = FakeClock()
    b = make(clock, max_batch_size=4, preferred_sizes=[2])
    b.put(list("abcde"), background=True)
    d = b.poll()
    assert payloads(d) == list("abcd") and d.reason == "max_batch_size (background)"
    assert b.poll().batch == [] and b.poll().wait == pytest.approx(0.010)  # 1 left: waits for the delay
    clock.advance(0.010)
    assert payloads(b.poll()) == ["e"]


def test_background_items_wait_for_the_delay_from_their_own_arrival():
    clock = FakeClock()
    b = make(clock)
    b.put(["bg"], background=True)
    clock.advance(0.006)
    b.put(["fg"])
    clock.advance(0.004)  # bg waited 10 ms: due, but the foreground is not empty and not due
    d = b.poll()
    assert d.batch == [] and d.wait == pytest.approx(0.006)
    clock.advance(0.006)
    assert payloads(b.poll()) == ["fg"]
    assert payloads(b.poll()) == ["bg"]


def test_background_items_expire_and_dead_ones_are_dropped():
    clock = FakeClock()
    dead = {"dead"}
    b = make(clock, is_dead=lambda p: p in dead)
    b.put(["late"], deadline=clock.t + 0.005, background=True)
    b.put(["dead", "ok", "late2"], deadline=clock.t + 1.0, background=True)
    clock.advance(0.010)
    d = b.poll()
    assert payloads(d) == ["ok", "late2"] and [q.payload for q in d.expired] == ["late"]
    b.put(["gone"], deadline=clock.t + 0.001, background=True)
    clock.advance(0.002)
    d = b.poll()
    assert d.batch == [] and [q.payload for q in d.expired] == ["gone"] and b.depth == 0


def test_background_puts_do_not_feed_the_arrival_estimate():
    clock = FakeClock()
    b = make(clock, policy="adaptive")
    b.put(["bg"], background=True)
    assert b.arrivals.last_arrival is None
    b.put(["fg"])
    assert b.arrivals.last_arrival == clock.t


def test_background_batches_are_not_spread():
    clock = FakeClock()
    b = make(clock, max_batch_size=8, spread=True)
    b.put(list("abcde"), background=True)
    clock.advance(0.010)
    assert payloads(b.poll(idle=2)) == list("abcde")  # one instance; the other stays free for the foreground


def test_close_drains_the_foreground_then_the_background():
    clock = FakeClock()
    b = make(clock)
    b.put(["bg"], background=True)
    b.put(["fg"])
    b.close()
    assert payloads(b.poll()) == ["fg"]
    d = b.poll()
    assert payloads(d) == ["bg"] and d.reason == "drain (background)"


def test_a_foreground_put_on_a_full_queue_evicts_the_newest_background_items():
    clock = FakeClock()
    evicted = []
    b = make(clock, capacity=5, on_evicted=lambda items: evicted.append(items))
    b.put(["fg1"])
    b.put(["bg1", "bg2"], background=True)
    b.put(["bg3", "bg4"], background=True)
    assert b.put(["fg2", "fg3"], timeout=0)  # full: room is made instead of waiting
    assert [[q.payload for q in items] for items in evicted] == [["bg3", "bg4"]]  # one call, in queue order
    assert all(q.background for q in evicted[0])
    assert b.depth == 5 and b.background_depth == 2
    clock.advance(0.010)
    assert payloads(b.poll()) == ["fg1", "fg2", "fg3"]
    assert payloads(b.poll()) == ["bg1", "bg2"]


def test_eviction_takes_all_background_items_then_the_foreground_put_waits():
    clock = FakeClock()
    evicted = []
    b = make(clock, capacity=3, on_evicted=evicted.extend)
    b.put(["fg1", "fg2"])
    b.put(["bg"], background=True)
    assert b.put(["fg3", "fg4"], timeout=0.01) is False  # evicting bg is not enough: times out as before
    assert [q.payload for q in evicted] == ["bg"] and b.depth == 2


def test_background_puts_never_evict_and_wait_like_any_put():
    clock = FakeClock()
    evicted = []
    b = make(clock, capacity=2, on_evicted=evicted.extend)
    b.put(["bg1", "bg2"], background=True)
    assert b.put(["bg3"], background=True, timeout=0) is False
    assert evicted == [] and b.background_depth == 2


def test_evicted_dead_items_are_dropped_silently():
    clock = FakeClock()
    evicted = []
    b = make(clock, capacity=2, is_dead=lambda p: p == "dead", on_evicted=evicted.extend)
    b.put(["ok", "dead"], background=True)
    assert b.put(["fg1", "fg2"], timeout=0)
    assert [q.payload for q in evicted] == ["ok"] and b.depth == 2


def test_on_evicted_runs_outside_the_lock():
    clock = FakeClock()
    free = []

    def on_evicted(items):
        # another thread must be able to take the lock meanwhile (the callback fails requests)
        probe = threading.Thread(target=lambda: free.append(b._cond.acquire(timeout=1) and b._cond.release() is None))
        probe.start()
        probe.join(5)

    b = make(clock, capacity=1, on_evicted=on_evicted)
    b.put(["bg"], background=True)
    assert b.put(["fg"], timeout=0)
    assert free == [True]
