"""Per-op dynamic batcher: a bounded, priority-aware queue of items that hands
an idle predictor instance the batch it should run next.

Only idle instances ask for work (:meth:`Batcher.next_batch`), so "an instance
is idle" is implicit in every decision. The rules (when a batch leaves, padding
priced by :mod:`serving.batching.estimators`, one extent at a time, ``spread``,
priorities, the background lane) are docs/batching.md's. Under a
``max_batch_units`` budget an item that alone exceeds it still runs, alone
(refusing or holding it would fail or starve it), and the budget never reorders
items to pack a batch tighter. Background items are never spread and do not feed
the arrival estimate: foreground batches must not wait for them.

All decisions go through :meth:`poll` with an explicit ``now``; tests drive it
with a fake clock instead of sleeping.
"""

from __future__ import annotations

import itertools
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from serving.batching.estimators import ArrivalEstimator, CostFit, CostModel
from serving.batching.units import Extent, PaddedSize

Clock = Callable[[], float]

# Batching an item must spare at least this share of what it costs alone, or items run one
# at a time: below it, the fit's noise on a busy CPU and what the model does not see (a
# batch's larger working set, with other instances running beside it) outweigh the saving.
MIN_BATCHING_SAVING = 0.1


@dataclass
class QueuedItem:
    payload: Any
    enqueued: float
    deadline: float | None
    priority: int
    seq: int
    background: bool = False
    extent: Extent = ()  # padded size per dimension (only with max_batch_units)


@dataclass
class Decision:
    """Outcome of one :meth:`Batcher.poll`."""

    batch: list[QueuedItem] = field(default_factory=list)
    expired: list[QueuedItem] = field(default_factory=list)
    wait: float | None = None  # seconds until the next decision is due; None = until an event
    reason: str = ""


@dataclass
class _Plan:
    """The next batch as it would be taken now, not taken yet."""

    # in take order: each item met, with its queue and what happens to it
    steps: list[tuple[deque[QueuedItem], QueuedItem, str]] = field(default_factory=list)
    items: int = 0  # items that join the batch
    units: int = 0  # their padded units
    full: bool = False  # by max_batch_units: no further item can join
    cut: bool = False  # an item does not join: its padding costs more than batching saves, or (groups) its extent
    skipped: bool = False  # some item stays queued while a later one joins (gathered by extent)
    alone: bool = False  # cut after its first item: batching saves too little (MIN_BATCHING_SAVING)


JOINS, DROPPED, STAYS = "joins", "dropped", "stays"  # a plan step: into the batch; dead or expired; left queued


class Batcher:
    def __init__(
        self,
        *,
        max_batch_size: int,
        max_queue_delay_s: float,
        preferred_sizes: Sequence[int] = (),
        policy: str = "adaptive",
        priority_levels: int = 1,
        priority_max_wait_s: float = 1.0,
        capacity: int = 1024,
        clock: Clock = time.monotonic,
        cost_model: CostModel | None = None,
        arrivals: ArrivalEstimator | None = None,
        is_dead: Callable[[Any], bool] = lambda payload: False,
        spread: bool = False,
        on_evicted: Callable[[list[QueuedItem]], None] = lambda items: None,
        max_batch_units: int | None = None,
        extent_of: Callable[[Any], Extent] | None = None,
        groups_by_extent: bool = False,
    ):
        if max_batch_size < 1:
            raise ValueError("max_batch_size must be >= 1")
        if max_batch_units is not None and (max_batch_units < 1 or extent_of is None):
            raise ValueError("max_batch_units must be >= 1 and comes with extent_of (a payload's padded extent)")
        if policy not in ("adaptive", "fixed"):
            raise ValueError(f"unknown batching policy {policy!r}")
        self.max_batch_size = max_batch_size
        self.max_queue_delay_s = max(0.0, max_queue_delay_s)
        self.preferred_sizes = sorted({p for p in preferred_sizes if 1 <= p <= max_batch_size}, reverse=True)
        self.policy = policy
        self.priority_levels = max(1, priority_levels)
        self.priority_max_wait_s = priority_max_wait_s
        self.capacity = max(1, capacity)
        self.clock = clock
        self.cost = cost_model or CostModel()
        self.arrivals = arrivals or ArrivalEstimator()
        self._is_dead = is_dead
        self.spread = spread
        self._on_evicted = on_evicted
        self.max_batch_units = max_batch_units
        self._extent_of = extent_of
        # the adaptive policy prices padding where items have extents (runs are then observed with their units)
        self._prices_padding = policy == "adaptive" and extent_of is not None
        # ...and where the op runs one extent per call, batches one extent at a time
        self.groups_by_extent = self._prices_padding and groups_by_extent
        self._idle = 0  # instances inside next_batch (asking for work)
        self._levels: list[deque[QueuedItem]] = [deque() for _ in range(self.priority_levels)]
        self._background: deque[QueuedItem] = deque()
        self._count = 0  # foreground and background items
        self._seq = itertools.count()
        self._closed = False
        self._cond = threading.Condition()

    # ---- producer side -----------------------------------------------------
    def put(
        self,
        payloads: Sequence[Any],
        *,
        priority: int = 0,
        deadline: float | None = None,
        timeout: float | None = None,
        background: bool = False,
    ) -> bool:
        """Queue one request's items as one arrival. Blocks while the queue is full
        (backpressure; a group larger than ``capacity`` waits for an empty queue), but a
        foreground put first evicts background items, newest first. Returns False if
        closed or timed out (``timeout=0``: at once)."""
        if not payloads:
            return True
        # sizes outside the lock: the op's hook is Python work, and may raise (failing this put only)
        extents = [self._extent_of(p) for p in payloads] if self._extent_of is not None else None
        evicted: list[QueuedItem] = []
        try:
            with self._cond:
                return self._admit(payloads, extents, priority, deadline, timeout, background, evicted)
        finally:
            if evicted:  # outside the lock: the callback may fail requests, which takes other locks
                self._on_evicted(evicted)

    def _admit(
        self,
        payloads: Sequence[Any],
        extents: list[Extent] | None,
        priority: int,
        deadline: float | None,
        timeout: float | None,
        background: bool,
        evicted: list[QueuedItem],
    ) -> bool:
        level = min(max(int(priority), 0), self.priority_levels - 1)
        end = None if timeout is None else time.monotonic() + timeout
        while not self._closed and self._count and self._count + len(payloads) > self.capacity:
            if not background and self._background:
                self._evict(self._count + len(payloads) - self.capacity, evicted)
                continue
            remaining = None if end is None else end - time.monotonic()
            if remaining is not None and remaining <= 0:
                return False
            self._cond.wait(remaining)
        if self._closed:
            return False
        now = self.clock()
        queue = self._background if background else self._levels[level]
        for i, payload in enumerate(payloads):
            extent = extents[i] if extents is not None else ()
            queue.append(QueuedItem(payload, now, deadline, level, next(self._seq), background, extent))
        self._count += len(payloads)
        if not background:
            self.arrivals.observe(now)
        self._cond.notify_all()
        return True

    def _evict(self, k: int, out: list[QueuedItem]) -> None:
        """Remove up to ``k`` of the newest background items; the live ones go to ``out`` in queue order."""
        removed = [self._background.pop() for _ in range(min(k, len(self._background)))]
        self._count -= len(removed)
        out.extend(item for item in reversed(removed) if not self._is_dead(item.payload))

    def close(self) -> None:
        """Stop accepting; queued items are still handed out (drain)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    @property
    def depth(self) -> int:
        """Queued items, foreground and background."""
        return self._count

    @property
    def background_depth(self) -> int:
        return len(self._background)

    @property
    def closed(self) -> bool:
        return self._closed

    # ---- consumer side -------------------------------------------------------
    def next_batch(
        self, timeout: float | None = None, on_expired: Callable[[list[QueuedItem]], None] | None = None
    ) -> list[QueuedItem] | None:
        """Block until a batch is due and return it; None when closed and empty, or when
        ``timeout`` passes. While inside, the caller counts as an idle instance (``spread``)
        until the locked step that hands it a batch, so the next one sees the right number."""
        end = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            self._idle += 1
        counted = True
        try:
            while True:
                with self._cond:
                    decision = self.poll(idle=self._idle)
                    if not decision.batch and not decision.expired:
                        if self._closed and self._count == 0:
                            return None
                        wait = decision.wait
                        if end is not None:
                            remaining = end - time.monotonic()
                            if remaining <= 0:
                                return None
                            wait = remaining if wait is None else min(wait, remaining)
                        self._cond.wait(wait)
                        continue
                    if decision.batch:
                        self._idle -= 1
                        counted = False
                    self._cond.notify_all()  # room for blocked producers, news for idle instances
                if decision.expired and on_expired is not None:
                    on_expired(decision.expired)
                if decision.batch:
                    return decision.batch
        finally:
            if counted:
                with self._cond:
                    self._idle -= 1

    def expire_due(self, on_expired: Callable[[list[QueuedItem]], None]) -> int:
        """Drop the dead or expired queue heads without taking a batch (deadlines are kept
        while every instance is restarting); returns how many expired."""
        decision = Decision()
        with self._cond:
            self._drop_dead_heads(self.clock(), decision)
            if decision.expired:
                self._cond.notify_all()
        if decision.expired:
            on_expired(decision.expired)
        return len(decision.expired)

    def record_run(self, batch_size: int, seconds: float, units: int | None = None, *, seed: bool = False) -> None:
        """Feed the cost model with a measured batch run, with its padded ``units``
        where items have extents (then required); ``seed``: a warm-up run, kept."""
        if self._extent_of is not None and units is None:
            raise ValueError("this batcher counts padded units: record_run needs the batch's units")
        self.cost.observe(batch_size, seconds, units if self._extent_of is not None else None, seed=seed)

    def poll(self, now: float | None = None, idle: int = 1) -> Decision:
        """Decide, without blocking, whether a batch is due at ``now`` for one of ``idle``
        instances asking for work. Lock held, or a single thread (tests)."""
        now = self.clock() if now is None else now
        decision = Decision()
        self._drop_dead_heads(now, decision)
        foreground = self._count - len(self._background)
        if foreground:
            n, oldest = foreground, min(q[0].enqueued for q in self._levels if q)
        elif self._background:
            n, oldest = len(self._background), self._background[0].enqueued
        else:
            return decision
        background = not foreground
        # with a budget or priced padding the batch's padded size decides when it ends, so it is planned first
        fit = self.cost.fitted() if self._prices_padding else None
        plan = None
        if self.max_batch_units is not None or fit is not None or self.groups_by_extent:
            plan = self._plan(now, background, self.max_batch_size, fit)
        take, reason, wait = self._how_many(n, now, oldest, plan)
        if take and foreground and self.spread and idle > 1:
            share = -(-n // idle)  # ceil: every idle instance gets a part
            if share < take:
                take, reason = share, f"{reason}, spread over {idle} idle instances"
        if take:
            if plan is None or (plan.cut and take > plan.items):  # a preferred size is taken uncut
                plan = self._plan(now, background, take)
            decision.batch = self._take(plan, take, decision)
            decision.reason = reason if foreground else f"{reason} (background)"
        else:
            decision.wait = wait
        return decision

    # ---- internals ---------------------------------------------------------------
    def _how_many(self, n: int, now: float, oldest: float, plan: _Plan | None) -> tuple[int, str, float | None]:
        cap = self.max_batch_size
        if plan is not None and plan.full and plan.items < cap:
            alone = plan.items == 1 and self.max_batch_units is not None and plan.units > self.max_batch_units
            return plan.items, "max_batch_units" + (" (one item over the budget, alone)" if alone else ""), None
        cut = plan.items if plan is not None and plan.cut else 0  # a cut batch holds >= 1 item
        if n >= cap and not cut:
            return cap, "max_batch_size", None
        for size in self.preferred_sizes:
            if size <= n:
                return size, "preferred", None
        if cut:
            alone = plan is not None and plan.alone
            kind = "one item" if alone else "one extent" if self.groups_by_extent else "padding"
            return cut, f"adaptive ({kind})", None
        if self._closed:
            return n, "drain", None
        due = oldest + self.max_queue_delay_s
        if now >= due:
            return n, "max_queue_delay", None
        if self.policy == "adaptive":
            keep_until = self._adaptive_wait_until(now)
            if keep_until is None or now >= keep_until:
                return n, "adaptive", None
            return 0, "", max(0.0, min(due, keep_until) - now)
        return 0, "", max(0.0, due - now)

    def _adaptive_wait_until(self, now: float) -> float | None:
        """Until when waiting for more items is expected to pay off (None: not at all): while
        the next arrival is expected sooner than the fixed cost batching it saves, and the
        stream has not been silent for twice its usual gap."""
        gap = self.arrivals.expected_gap()
        fixed = self.cost.fixed_cost()
        last = self.arrivals.last_arrival
        if gap is None or fixed is None or last is None or gap >= fixed:
            return None
        return last + 2.0 * gap

    def _drop_dead_heads(self, now: float, decision: Decision) -> None:
        for q in (*self._levels, self._background):
            while q and (self._is_dead(q[0].payload) or _expired(q[0], now)):
                item = q.popleft()
                self._count -= 1
                if not self._is_dead(item.payload):
                    decision.expired.append(item)

    def _in_take_order(self, now: float, background: bool) -> Iterator[tuple[deque[QueuedItem], QueuedItem]]:
        """Queued items in the order batches take them, each with its queue, removing none:
        the head of the highest non-empty level, unless some head has waited past
        ``priority_max_wait`` (then the oldest such head); the background lane is FIFO."""
        if background:
            for item in self._background:
                yield self._background, item
            return
        levels = self._levels
        pos = [0] * len(levels)  # how far the walk got in each level
        while True:
            heads = [(lvl, levels[lvl][pos[lvl]]) for lvl in range(len(levels)) if pos[lvl] < len(levels[lvl])]
            if not heads:
                return
            starving = [h for h in heads if now - h[1].enqueued > self.priority_max_wait_s]
            lvl, item = min(starving, key=lambda h: h[1].seq) if starving else heads[-1]
            pos[lvl] += 1
            yield levels[lvl], item

    def _plan(self, now: float, background: bool, limit: int, fit: CostFit | None = None) -> _Plan:
        """The batch of at most ``limit`` items the batcher would take now: in take order,
        dead and expired ones dropped, up to the first that would exceed ``max_batch_units``
        or does not join (:meth:`_apart`: the batch is cut). Grouping by extent, the walk goes
        on over the next ``max_batch_size`` items of its level for more of the batch's
        extent. The first item always joins."""
        plan = _Plan()
        budget = self.max_batch_units
        size = PaddedSize()
        cut_level, lookahead = 0, 0
        for q, item in self._in_take_order(now, background):
            if plan.items >= limit:
                break
            if self._is_dead(item.payload) or _expired(item, now):
                plan.steps.append((q, item, DROPPED))
                continue
            if plan.cut:  # one extent at a time: looking past what stays for more of the batch's
                lookahead -= 1
                if lookahead < 0 or item.priority != cut_level:
                    break
                if item.extent != size.extent:
                    plan.steps.append((q, item, STAYS))
                    continue
            if budget is not None and plan.items and size.with_item(item.extent) > budget:
                plan.full = True
                break
            if not plan.cut and plan.items and self._apart(item.extent, size, fit):
                plan.cut = True
                if not self.groups_by_extent:
                    break
                cut_level, lookahead, plan.skipped = item.priority, self.max_batch_size, True
                plan.steps.append((q, item, STAYS))
                continue
            size.add(item.extent)
            plan.steps.append((q, item, JOINS))
            plan.items += 1
            if plan.items == 1 and not _batching_saves(fit, size):
                plan.cut = plan.alone = True  # nothing would pay to join it, nor to be waited for
                break
        plan.units = size.units
        if budget is not None and plan.items and size.with_item(size.extent) > budget:
            plan.full = True  # even the smallest item would pad to the batch's extent and not fit
        return plan

    def _apart(self, extent: Extent, size: PaddedSize, fit: CostFit | None) -> bool:
        """Whether an item of ``extent`` stays out of the batch so far: another extent where
        the op groups by extent, else padding dearer than the fixed cost batching it saves."""
        if self.groups_by_extent:
            return extent != size.extent
        return fit is not None and fit.per_unit * size.padding_added(extent) > fit.fixed

    def _take(self, plan: _Plan, k: int, decision: Decision) -> list[QueuedItem]:
        """Remove the first ``k`` joining items of ``plan`` (a prefix stays within the
        budget) and the dropped items met before them; expired ones go to ``decision``."""
        batch: list[QueuedItem] = []
        leaving: list[tuple[deque[QueuedItem], QueuedItem]] = []
        for q, item, step in plan.steps:
            if step == STAYS:
                continue
            if step == JOINS:
                if len(batch) == k:
                    break
                batch.append(item)
            elif not self._is_dead(item.payload):
                decision.expired.append(item)
            leaving.append((q, item))
        self._count -= len(leaving)
        if not plan.skipped:  # the walk met each queue's items from its head, in order
            for q, _ in leaving:
                q.popleft()
            return batch
        gone = {id(item) for _, item in leaving}
        for q in {id(q): q for q, _ in leaving}.values():
            kept = [item for item in q if id(item) not in gone]
            q.clear()
            q.extend(kept)
        return batch


def _batching_saves(fit: CostFit | None, size: PaddedSize) -> bool:
    """Whether batching is worth it for a batch whose first item is ``size``: the fixed cost
    it spares is at least :data:`MIN_BATCHING_SAVING` of that item alone (True without a fit)."""
    if fit is None:
        return True
    return fit.fixed > 0 and fit.fixed >= MIN_BATCHING_SAVING * fit.alone(math.prod(size.extent))


def _expired(item: QueuedItem, now: float) -> bool:
    return item.deadline is not None and now >= item.deadline
