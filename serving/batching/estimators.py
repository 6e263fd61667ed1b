"""Online estimates the adaptive batcher decides with: :class:`CostModel` fits
``run_time = fixed + per_item * items + per_unit * padded units`` by least
squares over recent batch runs plus the warm-up seeds, kept for good (``fixed``:
what batching saves; ``per_unit``: what padding costs; why three terms:
docs/DESIGN_NOTES.md, "Adaptive dispatch"). :class:`ArrivalEstimator` tracks the
gap between arrivals as an exponentially weighted mean.
"""

from __future__ import annotations

import math
import threading
from collections import Counter, deque
from typing import NamedTuple

SINGULAR = 1e-9  # a pivot of the unit-diagonal normal equations this small: terms not told apart
Sample = tuple[int, int, float]  # (items, padded units, seconds)


class CostFit(NamedTuple):
    fixed: float  # seconds per batch, whatever it holds: what batching saves
    per_item: float  # seconds per item
    per_unit: float  # seconds per padded unit (0 where items have no extents)

    def alone(self, units: int) -> float:
        """Seconds one item of ``units`` padded units takes as a batch of its own."""
        return self.fixed + self.per_item + self.per_unit * units


class CostModel:
    def __init__(self, window: int = 128):
        self._window = window
        self._samples: deque[Sample] = deque()
        self._seeds: list[Sample] = []
        self._sums = _Sums()  # of the window and the seeds: a fit costs the same at any count
        self._lock = threading.Lock()
        self._fitted: CostFit | None = None
        self._stale = False  # the batcher asks on every decision: refit only after a new run

    def observe(self, items: int, seconds: float, units: int | None = None, *, seed: bool = False) -> None:
        """One batch run of ``items`` (``units``: its padded units, where items have
        extents). ``seed``: a warm-up run, kept for good rather than in the window."""
        if items >= 1 and seconds >= 0:
            sample = (items, items if units is None else units, seconds)
            with self._lock:
                self._sums.add(sample)
                if seed:
                    self._seeds.append(sample)
                else:
                    self._samples.append(sample)
                    if len(self._samples) > self._window:
                        self._sums.add(self._samples.popleft(), -1.0)
                self._stale = True

    def fitted(self) -> CostFit | None:
        """The fitted costs, or None until the runs seen can tell them apart."""
        with self._lock:
            if self._stale:
                self._fitted, self._stale = self._sums.fit(), False
            return self._fitted

    def fit(self) -> tuple[float, float] | None:
        """(fixed, per_item) seconds, or None until two batch sizes were seen."""
        fitted = self.fitted()
        return None if fitted is None else (fitted.fixed, fitted.per_item)

    def fixed_cost(self) -> float | None:
        fitted = self.fitted()
        return None if fitted is None else fitted.fixed


class _Sums:
    """The sums least squares needs, kept as runs come and go: the normal equations
    of ``t = c0 + c1*items + c2*units`` (``x = (1, items, units)``: ``X'X`` and ``X't``).
    The batcher refits after every run, on the path of a lone request, so a fit is a
    3 x 3 solve from these, not a pass over the window."""

    def __init__(self) -> None:
        self.xx = [[0.0] * 3 for _ in range(3)]
        self.xt = [0.0] * 3
        self.sizes: Counter[int] = Counter()  # runs per item count: two counts are needed
        self.padded = 0  # runs whose units differ from their items (items with extents)

    def add(self, sample: Sample, sign: float = 1.0) -> None:
        n, u, t = sample
        x = (1.0, float(n), float(u))
        for i in range(3):
            self.xt[i] += sign * x[i] * t
            for j in range(3):
                self.xx[i][j] += sign * x[i] * x[j]
        self.sizes[n] += int(sign)
        if self.sizes[n] <= 0:
            del self.sizes[n]
        self.padded += int(sign) * (u != n)

    def fit(self) -> CostFit | None:
        if len(self.sizes) < 2:
            return None
        if self.padded:
            coef = self._nonnegative([0, 1, 2])
            if coef is not None:
                return CostFit(*coef)
        # no extents, or one size per item throughout (units then move with items and cannot
        # be told apart from them): a line over items, and no padding was seen to price
        k, sn, st = self.xx[0][0], self.xx[0][1], self.xt[0]
        var = self.xx[1][1] - sn * sn / k
        cov = self.xt[1] - sn * st / k
        per_item = max(0.0, cov / var) if var > 0 else 0.0
        fixed = max(0.0, (st - per_item * sn) / k)
        return CostFit(fixed, per_item, 0.0)

    def _nonnegative(self, active: list[int]) -> list[float] | None:
        """Least squares with every coefficient >= 0: a negative one is pinned at 0 and
        the rest refitted. None where the runs cannot tell the terms apart."""
        active = list(active)
        coef = [0.0, 0.0, 0.0]
        while active:
            solution = _solve([[self.xx[i][j] for j in active] for i in active], [self.xt[i] for i in active])
            if solution is None:
                return None
            coef = [0.0, 0.0, 0.0]
            for i, c in zip(active, solution):
                coef[i] = c
            worst = min(active, key=lambda i: coef[i])
            if coef[worst] >= 0:
                break
            active.remove(worst)
            coef[worst] = 0.0
        return coef


def _solve(a: list[list[float]], b: list[float]) -> list[float] | None:
    """``a x = b`` for a small symmetric positive semi-definite ``a`` (Gaussian
    elimination with partial pivoting, on ``a`` scaled to a unit diagonal: items and
    padded units differ by orders of magnitude); None when ``a`` is singular to
    working precision (the runs do not tell the terms apart)."""
    size = len(b)
    norm = [math.sqrt(a[i][i]) for i in range(size)]
    if not all(norm):
        return None
    m = [[a[i][j] / (norm[i] * norm[j]) for j in range(size)] + [b[i] / norm[i]] for i in range(size)]
    for col in range(size):
        pivot = max(range(col, size), key=lambda r: abs(m[r][col]))
        if abs(m[pivot][col]) <= SINGULAR:
            return None
        m[col], m[pivot] = m[pivot], m[col]
        for r in range(col + 1, size):
            f = m[r][col] / m[col][col]
            for c in range(col, size + 1):
                m[r][c] -= f * m[col][c]
    x = [0.0] * size
    for r in range(size - 1, -1, -1):
        x[r] = (m[r][size] - sum(m[r][c] * x[c] for c in range(r + 1, size))) / m[r][r]
    return [x[i] / norm[i] for i in range(size)]


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
