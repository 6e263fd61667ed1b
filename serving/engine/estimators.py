"""Online estimates the adaptive batcher decides with.

* :class:`CostModel` fits a batch's run time by least squares over the most
  recent batch runs plus the warm-up runs that seeded it (batch 1 and
  ``max_batch_size`` of one item, kept for good: the only runs that are sure
  to vary the item count at a fixed item size)::

      run_time = fixed + per_item * items                         (no extents)
      run_time = fixed + per_item * items + per_unit * padded units  (with extents)

  where a batch's padded units are items x its largest extent
  (:mod:`serving.engine.units`). ``fixed`` is what batching saves per batch,
  ``per_unit`` what padding costs. Both terms are needed with extents: fitted
  on padded units alone, the run time of single items of different widths
  would pass their width-independent per-item cost (on a CPU, most of it)
  off as a per-batch cost that batching saves.
* :class:`ArrivalEstimator` tracks the gap between arrivals (one arrival = one
  request's items put together) as an exponentially weighted mean.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import NamedTuple

import numpy as np

Sample = tuple[int, int, float]  # (items, padded units, seconds)


class CostFit(NamedTuple):
    fixed: float  # seconds per batch, whatever it holds: what batching saves
    per_item: float  # seconds per item
    per_unit: float  # seconds per padded unit (0 where items have no extents)


class CostModel:
    def __init__(self, window: int = 128):
        self._samples: deque[Sample] = deque(maxlen=window)
        self._seeds: list[Sample] = []
        self._lock = threading.Lock()
        self._fitted: CostFit | None = None
        self._stale = False  # the batcher asks on every decision: refit only after a new run

    def observe(self, items: int, seconds: float, units: int | None = None, *, seed: bool = False) -> None:
        """One batch run of ``items`` (``units``: its padded units, where items have
        extents). ``seed``: a warm-up run, kept for good rather than in the window."""
        if items >= 1 and seconds >= 0:
            sample = (items, items if units is None else units, seconds)
            with self._lock:
                if seed:
                    self._seeds.append(sample)
                else:
                    self._samples.append(sample)
                self._stale = True

    def fitted(self) -> CostFit | None:
        """The fitted costs, or None until the runs seen can tell them apart."""
        with self._lock:
            if self._stale:
                self._fitted, self._stale = _fit([*self._seeds, *self._samples]), False
            return self._fitted

    def fit(self) -> tuple[float, float] | None:
        """(fixed, per_item) seconds, or None until two batch sizes were seen."""
        fitted = self.fitted()
        return None if fitted is None else (fitted.fixed, fitted.per_item)

    def fixed_cost(self) -> float | None:
        fitted = self.fitted()
        return None if fitted is None else fitted.fixed


def _fit(samples: list[Sample]) -> CostFit | None:
    if len({n for n, _, _ in samples}) < 2:
        return None
    if any(u != n for n, u, _ in samples):
        design = np.array([(1.0, n, u) for n, u, _ in samples])
        coef = _nonnegative_least_squares(design, np.array([t for _, _, t in samples]))
        if coef is not None:
            return CostFit(*(float(c) for c in coef))
    # no extents, or one size per item throughout (units then move with items and cannot
    # be told apart from them): a line over items, and no padding was seen to price
    fixed, per_item = _line([(n, t) for n, _, t in samples])
    return CostFit(fixed, per_item, 0.0)


def _line(samples: list[tuple[int, float]]) -> tuple[float, float]:
    k = len(samples)
    mean_n = sum(n for n, _ in samples) / k
    mean_t = sum(t for _, t in samples) / k
    var = sum((n - mean_n) ** 2 for n, _ in samples)
    cov = sum((n - mean_n) * (t - mean_t) for n, t in samples)
    per_item = max(0.0, cov / var)
    fixed = max(0.0, mean_t - per_item * mean_n)
    return fixed, per_item


def _nonnegative_least_squares(design: np.ndarray, times: np.ndarray) -> np.ndarray | None:
    """Least squares with every coefficient >= 0: a negative one is pinned at 0
    and the rest refitted (at most three rounds). None where the runs cannot tell
    the terms apart."""
    active = list(range(design.shape[1]))
    coef = np.zeros(design.shape[1])
    while active:
        solution, _, rank, _ = np.linalg.lstsq(design[:, active], times, rcond=None)
        if rank < len(active):
            return None
        coef[:] = 0.0
        coef[active] = solution
        worst = min(active, key=lambda i: coef[i])
        if coef[worst] >= 0:
            break
        active.remove(worst)
        coef[worst] = 0.0
    return coef


class ArrivalEstimator:
    def __init__(self, alpha: float = 0.2):
        self.alpha = alpha
        self.last_arrival: float | None = None
        self._gap: float | None = None

    def observe(self, now: float) -> None:
        """Record one arrival at ``now`` (caller serialises calls)."""
        if self.last_arrival is not None:
            gap = max(0.0, now - self.last_arrival)
            self._gap = gap if self._gap is None else (1 - self.alpha) * self._gap + self.alpha * gap
        self.last_arrival = now

    def expected_gap(self) -> float | None:
        return self._gap
