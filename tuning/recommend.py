"""The recommendation of ``batchline tune``: for each candidate (a measured
layout and batching settings), the highest arrival rate at which the
simulated p99 (:mod:`tuning.simulate`: the real batcher on the measured cost
curve) stays within the budget; the candidate with the highest such rate wins.

Candidates are not a blind grid: ``max_batch_size`` runs over the batch
sizes whose cost was measured and fit in the budget, ``max_queue_delay``
over a few values below a quarter of the budget, and the rate for each is
found by bisection on one set of arrival times (common random numbers, so
that rates compare smoothly). Near-ties (within ``TIE``) go to the smaller
batch, then the shorter delay: same throughput, less latency and memory.
A winner that is not ``KEEP`` better than the current settings, or not
better by more than the measurements' own noise could make it (twice
their spread), is not worth a change: the current settings are kept.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tuning.simulate import CostCurve, Result, Settings, scaled, simulate, unit_gaps

TIE = 0.02  # candidates within 2% of the best rate are equals
KEEP = 0.05  # a change must promise 5% more throughput


@dataclass(frozen=True)
class Option:
    """One candidate: a layout's cost curve (named by ``layout``) with batching settings."""

    layout: str
    settings: Settings
    cost: CostCurve
    jitter: float = 0.0


@dataclass
class Prediction:
    option: Option
    max_rps: float  # highest request rate with the simulated p99 within budget (0: none)
    at_max: Result | None  # the simulation at that rate


def delays_for(budget_ms: float, current_ms: float) -> list[float]:
    """``max_queue_delay`` candidates (ms): 0 and a few short waits, under a quarter of the budget."""
    picks = {0.0, float(current_ms)} | {d for d in (1.0, 2.0, 5.0, 10.0, 20.0, 50.0) if d <= budget_ms / 4}
    return sorted(picks)


def options(
    curves: Sequence[tuple[str, CostCurve, Sequence[int], int, float]],
    *,
    budget_ms: float,
    current_delay_ms: float,
    policy: str = "adaptive",
    spread: Callable[[str, int], bool] = lambda _layout, instances: instances > 1,
) -> list[Option]:
    """Candidates over ``(layout name, cost, measured sizes, instances, jitter)``:
    every measured size whose single run fits half the budget, with each delay.
    ``spread(layout name, instances)``: whether the server spreads batches there."""
    out = []
    for name, cost, sizes, instances, jitter in curves:
        fits = [n for n in sorted(sizes) if cost(n) * 1000 <= budget_ms / 2] or [min(sizes)]
        for size in fits:
            for delay in delays_for(budget_ms, current_delay_ms):
                settings = Settings(
                    max_batch_size=size,
                    max_queue_delay_ms=delay,
                    policy=policy,
                    instances=instances,
                    spread=spread(name, instances),
                )
                out.append(Option(name, settings, cost, jitter))
    return out


def max_rate(
    option: Option,
    per_request: Sequence[int],
    budget_ms: float,
    *,
    requests: int = 1500,
    steps: int = 9,
    seed: int = 0,
) -> Prediction:
    """Bisection for the highest request rate whose simulated p99 is within
    ``budget_ms`` and that the instances keep up with."""
    s = option.settings
    items_per_request = sum(per_request) / len(per_request) if per_request else 1.0
    capacity_items = s.instances * s.max_batch_size / max(option.cost(s.max_batch_size), 1e-9)
    hi = 1.1 * capacity_items / items_per_request
    lo, best = 0.0, None
    gaps = unit_gaps(requests, seed)
    for _ in range(steps):
        rate = (lo + hi) / 2
        result = simulate(s, option.cost, scaled(gaps, rate), items=per_request, jitter=option.jitter, seed=seed)
        if result.p99_ms <= budget_ms and result.throughput_rps >= 0.9 * result.offered_rps:
            lo, best = rate, result
        else:
            hi = rate
    return Prediction(option, lo, best)


def rank(predictions: Sequence[Prediction]) -> list[Prediction]:
    """Best first: highest rate; near-ties to the smaller batch, then the shorter delay."""
    top = max((p.max_rps for p in predictions), default=0.0)

    def key(p: Prediction) -> tuple[bool, float, int, float]:
        tied = p.max_rps >= (1 - TIE) * top
        s = p.option.settings
        return (not tied, 0.0 if tied else -p.max_rps, s.max_batch_size, s.max_queue_delay_ms)

    return sorted(predictions, key=key)


def recommend(
    candidates: Sequence[Option],
    current: Option,
    per_request: Sequence[int],
    budget_ms: float,
    *,
    requests: int = 1500,
    on_step: Callable[[int, int], None] = lambda done, total: None,
) -> tuple[Prediction, Prediction]:
    """(the recommendation, the current settings' prediction). The current
    settings stay unless the best candidate promises ``KEEP`` more, and more
    than twice the relative spread of the run times measured for either."""
    now = max_rate(current, per_request, budget_ms, requests=requests)
    predictions = []
    for i, option in enumerate(candidates):
        predictions.append(max_rate(option, per_request, budget_ms, requests=requests))
        on_step(i + 1, len(candidates))
    best = rank(predictions)[0] if predictions else now
    margin = max(KEEP, 2 * max(best.option.jitter, current.jitter))
    if best.max_rps < (1 + margin) * now.max_rps:
        return now, now
    return best, now
