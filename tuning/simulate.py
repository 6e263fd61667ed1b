"""A discrete-event simulation of one op: requests arrive, the real batcher
(:class:`serving.batching.batcher.Batcher`, driven through its injectable clock
and :meth:`~serving.batching.batcher.Batcher.poll`) forms batches, and ``N``
instances run them at the cost a cost curve gives.

It answers "what p50/p99 and batch sizes would these settings give at this
arrival rate", for hardware measured here (a cost curve measured on this
machine's predictors) or not available here (a GPU-like curve with a large
fixed share). ``batchline tune`` predicts p99 with it; ``bench/simulate.py``
sweeps arrival rates and plots the policies.

What it leaves out, on purpose: HTTP, pre/post-processing and the other ops
of a pipeline (their time is not the batcher's business), and contention
between instances beyond what the cost curve was measured with.
"""

from __future__ import annotations

import heapq
import math
import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from serving.batching.batcher import Batcher

#: run time in seconds of one batch of ``n`` items
CostCurve = Callable[[int], float]


@dataclass(frozen=True)
class Settings:
    """The batching settings of one op, as in ``local_service_conf``."""

    max_batch_size: int = 1
    max_queue_delay_ms: float = 0.0
    preferred_batch_size: tuple[int, ...] = ()
    policy: str = "adaptive"
    instances: int = 1
    spread: bool = False

    @classmethod
    def no_batching(cls, instances: int = 1) -> Settings:
        return cls(max_batch_size=1, instances=instances)


@dataclass
class Result:
    """What one simulated run gave (latencies are per request, arrival to its last item done)."""

    offered_rps: float
    throughput_rps: float
    p50_ms: float
    p99_ms: float
    mean_ms: float
    mean_batch: float
    utilisation: float  # busy instance-seconds / (instances x span)
    requests: int
    expired: int = 0
    batch_sizes: Counter[int] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, object]:
        out = {k: v for k, v in self.__dict__.items() if k != "batch_sizes"}
        out["batch_sizes"] = dict(sorted(self.batch_sizes.items()))
        return out


# ---- arrival processes --------------------------------------------------------------------------
def poisson_arrivals(rate: float, count: int, seed: int = 0) -> list[float]:
    """``count`` arrival times (s) of a Poisson process at ``rate`` per second."""
    return scaled(unit_gaps(count, seed), rate)


def unit_gaps(count: int, seed: int = 0) -> list[float]:
    """Exponential gaps of mean 1: scaled by 1/rate they give Poisson arrivals at any
    rate from the same random numbers (so results vary smoothly with the rate)."""
    rng = random.Random(seed)
    return [rng.expovariate(1.0) for _ in range(count)]


def scaled(gaps: Sequence[float], rate: float) -> list[float]:
    """Arrival times from unit gaps at ``rate`` per second."""
    t, out = 0.0, []
    for gap in gaps:
        t += gap / rate
        out.append(t)
    return out


def burst_arrivals(rate: float, count: int, burst: int, seed: int = 0) -> list[float]:
    """Bursts of ``burst`` requests at once, the bursts a Poisson process, ``rate`` requests/s on average."""
    starts = poisson_arrivals(rate / burst, -(-count // burst), seed)
    return [t for t in starts for _ in range(burst)][:count]


# ---- cost curves ---------------------------------------------------------------------------------
def linear_cost(fixed_s: float, per_item_s: float) -> CostCurve:
    """``fixed + per_item * n``: GPU-like when the fixed share is large."""
    return lambda n: fixed_s + per_item_s * n


def measured_cost(points: dict[int, float]) -> CostCurve:
    """Piecewise linear through measured ``{batch size: seconds}``, extended
    linearly past the last point (and down to 0 items before the first)."""
    sizes = sorted(points)
    if not sizes:
        raise ValueError("a measured cost curve needs at least one point")
    if len(sizes) == 1:
        only = points[sizes[0]] / sizes[0]
        return lambda n: only * n

    def cost(n: int) -> float:
        i = 1
        while i < len(sizes) - 1 and sizes[i] < n:
            i += 1
        a, b = sizes[i - 1], sizes[i]
        slope = (points[b] - points[a]) / (b - a)
        return max(1e-9, points[a] + slope * (n - a))

    return cost


# ---- the simulation ------------------------------------------------------------------------------
class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def simulate(
    settings: Settings,
    cost: CostCurve,
    arrivals: Sequence[float],
    *,
    items: Callable[[int], int] | Sequence[int] = (1,),
    deadline_s: float | None = None,
    jitter: float = 0.0,
    seed: int = 0,
) -> Result:
    """Run ``arrivals`` (request times, s, ascending) through a batcher with
    ``settings`` and ``settings.instances`` instances of cost ``cost``.

    ``items``: each request's item count, cycled over if a sequence (e.g. the
    text lines per page of the user's images), or a function of the request
    index. ``jitter``: the sigma of a log-normal factor on each run's cost
    (mean 1), for the spread measured run times have. ``deadline_s``: requests
    whose items wait past it expire (counted, not in the latencies)."""
    count_of = items if callable(items) else (lambda i, seq=list(items) or [1]: seq[i % len(seq)])
    clock = _Clock()
    batcher = Batcher(
        max_batch_size=settings.max_batch_size,
        max_queue_delay_s=settings.max_queue_delay_ms / 1000.0,
        preferred_sizes=settings.preferred_batch_size,
        policy=settings.policy,
        capacity=1 << 30,
        clock=clock,
        spread=settings.spread,
    )
    # the engine's warm-up seeds the cost model at batch 1 and max_batch_size
    for size in sorted({1, settings.max_batch_size}):
        batcher.record_run(size, cost(size))
    rng = random.Random(seed)
    noise = (lambda: math.exp(rng.gauss(0.0, jitter) - jitter * jitter / 2)) if jitter > 0 else (lambda: 1.0)

    pending: dict[int, int] = {}  # request -> items not yet done
    arrived: dict[int, float] = {}
    latencies: list[float] = []
    expired_requests: set[int] = set()
    sizes: Counter[int] = Counter()
    busy: list[tuple[float, int, list[int]]] = []  # (finish time, sequence, request of each item)
    idle, busy_s, runs = settings.instances, 0.0, 0
    wake: float | None = None
    i, n = 0, len(arrivals)
    first = arrivals[0] if n else 0.0
    last_done = first
    while i < n or busy or batcher.depth:
        candidates = [t for t in (arrivals[i] if i < n else None, busy[0][0] if busy else None, wake) if t is not None]
        if not candidates:  # items queued, no instance busy and nothing due: cannot happen with a live batcher
            raise RuntimeError("simulation stalled with items queued")
        clock.now = max(clock.now, min(candidates))
        while busy and busy[0][0] <= clock.now:
            _, _, owners = heapq.heappop(busy)
            idle += 1
            for rid in owners:
                pending[rid] -= 1
                if pending[rid] == 0 and rid not in expired_requests:
                    latencies.append(clock.now - arrived[rid])
            last_done = clock.now
        while i < n and arrivals[i] <= clock.now:
            k = max(1, int(count_of(i)))
            pending[i], arrived[i] = k, arrivals[i]
            deadline = None if deadline_s is None else arrivals[i] + deadline_s
            batcher.put([i] * k, deadline=deadline)
            i += 1
        wake = None
        while idle:
            decision = batcher.poll(clock.now, idle=idle)
            for item in decision.expired:
                expired_requests.add(item.payload)
                pending[item.payload] -= 1
            if not decision.batch:
                if decision.wait is not None:
                    wake = clock.now + max(decision.wait, 1e-9)
                break
            size = len(decision.batch)
            run_s = cost(size) * noise()
            batcher.record_run(size, run_s)
            sizes[size] += 1
            runs += 1
            busy_s += run_s
            idle -= 1
            heapq.heappush(busy, (clock.now + run_s, runs, [q.payload for q in decision.batch]))
    span = max(last_done - first, 1e-9)
    offered = (n - 1) / (arrivals[-1] - first) if n > 1 and arrivals[-1] > first else 0.0
    ordered = sorted(latencies)
    return Result(
        offered_rps=offered,
        throughput_rps=len(latencies) / span,
        p50_ms=_quantile(ordered, 0.50) * 1000,
        p99_ms=_quantile(ordered, 0.99) * 1000,
        mean_ms=(sum(ordered) / len(ordered) * 1000) if ordered else math.nan,
        mean_batch=(sum(k * v for k, v in sizes.items()) / runs) if runs else 0.0,
        utilisation=busy_s / (settings.instances * span),
        requests=n,
        expired=len(expired_requests),
        batch_sizes=sizes,
    )


def _quantile(ordered: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    if not ordered:
        return math.nan
    pos = q * (len(ordered) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)
