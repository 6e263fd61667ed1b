"""Load-test statistics: latency percentiles, error counts, Prometheus diffs.

Pure functions and small value classes, no I/O, so they are unit-tested on
known data:

* :func:`percentile` / :func:`latency_summary` — percentiles with linear
  interpolation between closest ranks (``numpy.percentile``).
* :class:`ErrorCounts` — failures counted per HTTP status (``0`` = the request
  never got an HTTP answer: connection refused, reset, client timeout).
* :func:`parse_prometheus` / :class:`MetricsSnapshot` — parse the text
  exposition format of ``GET /metrics``.
* :func:`op_stats` — per-op mean batch size, mean queue wait and padding ratio
  over an interval, from a snapshot taken before and one taken after.
"""

from __future__ import annotations

import math
import re
import threading
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

PERCENTILES = (50.0, 90.0, 99.0)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) of ``values`` (``numpy.percentile``'s
    linear interpolation, as the server's tracer uses); NaN when empty."""
    if not 0.0 <= q <= 100.0:
        raise ValueError(f"percentile must be within [0, 100], got {q}")
    if not values:
        return float("nan")
    return float(np.percentile(values, q))


def latency_summary(latencies_s: Sequence[float], percentiles: Iterable[float] = PERCENTILES) -> dict[str, float]:
    """Latency percentiles, mean and max in milliseconds: ``{"p50": .., "mean": .., "max": ..}``."""
    ms = [x * 1000.0 for x in latencies_s]
    out: dict[str, float] = {}
    for q in percentiles:
        out[_pct_key(q)] = percentile(ms, q)
    out["mean"] = sum(ms) / len(ms) if ms else float("nan")
    out["max"] = max(ms) if ms else float("nan")
    return out


def _pct_key(q: float) -> str:
    return f"p{q:g}".replace(".", "_")


class ErrorCounts:
    """Thread-safe count of failed requests keyed by HTTP status (0 = no answer)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter = Counter()

    def add(self, status: int, n: int = 1) -> None:
        with self._lock:
            self._counts[int(status)] += n

    @property
    def total(self) -> int:
        with self._lock:
            return sum(self._counts.values())

    def as_dict(self) -> dict[str, int]:
        """``{"503": 4, "0": 1}`` sorted by status (string keys, JSON friendly)."""
        with self._lock:
            return {str(k): v for k, v in sorted(self._counts.items())}

    def __getitem__(self, status: int) -> int:
        with self._lock:
            return self._counts.get(int(status), 0)


def format_errors(errors: Mapping[str, int], dropped: int = 0) -> str:
    """``"503:4 0(conn):1 drop:2"`` or ``"-"`` when there were none."""
    parts = []
    for status, n in errors.items():
        name = "0(conn)" if str(status) == "0" else str(status)
        parts.append(f"{name}:{n}")
    if dropped:
        parts.append(f"drop:{dropped}")
    return " ".join(parts) if parts else "-"


# --------------------------------------------------------------------------- Prometheus

SampleKey = tuple[str, tuple[tuple[str, str], ...]]

_SAMPLE_RE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+\S+)?\s*$")
_LABEL_RE = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), value)


def _parse_labels(text: str) -> tuple[tuple[str, str], ...]:
    labels = []
    pos = 0
    while pos < len(text):
        m = _LABEL_RE.match(text, pos)
        if not m:
            if text[pos:].strip() in ("", ","):
                break
            raise ValueError(f"bad label set: {{{text}}}")
        labels.append((m.group(1), _unescape(m.group(2))))
        pos = m.end()
    return tuple(sorted(labels))


def _parse_value(text: str) -> float:
    low = text.lower()
    if low in ("+inf", "inf"):
        return math.inf
    if low == "-inf":
        return -math.inf
    return float(text)  # handles "NaN" too


def parse_prometheus(text: str) -> dict[SampleKey, float]:
    """Parse Prometheus text exposition into ``{(name, sorted label pairs): value}``.

    Comment and blank lines are skipped, timestamps ignored. Malformed lines
    raise ``ValueError`` naming the line.
    """
    samples: dict[SampleKey, float] = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE_RE.match(line)
        if not m:
            raise ValueError(f"line {lineno}: not a Prometheus sample: {raw!r}")
        name, _, label_text, value, _ts = m.groups()
        labels = _parse_labels(label_text) if label_text else ()
        samples[(name, labels)] = _parse_value(value)
    return samples


class MetricsSnapshot:
    """Samples from one scrape of ``/metrics`` with label-filtered lookups."""

    def __init__(self, samples: Mapping[SampleKey, float]):
        self.samples = dict(samples)

    @classmethod
    def from_text(cls, text: str) -> MetricsSnapshot:
        return cls(parse_prometheus(text))

    @classmethod
    def empty(cls) -> MetricsSnapshot:
        return cls({})

    def _matches(self, name: str, labels: Mapping[str, str]):
        for (n, pairs), value in self.samples.items():
            if n != name:
                continue
            d = dict(pairs)
            if all(d.get(k) == v for k, v in labels.items()):
                yield d, value

    def value(self, name: str, **labels: str) -> float:
        """Sum of every sample called ``name`` whose labels include ``labels`` (0 if none)."""
        return sum(v for _, v in self._matches(name, labels))

    def label_values(self, name: str, label: str) -> list[str]:
        """Distinct values of ``label`` across samples called ``name``, sorted."""
        return sorted({d[label] for d, _ in self._matches(name, {}) if label in d})

    def delta(self, before: MetricsSnapshot, name: str, **labels: str) -> float:
        """``self.value(...) - before.value(...)``."""
        return self.value(name, **labels) - before.value(name, **labels)


def _ratio(num: float, den: float) -> float | None:
    return num / den if den > 0 else None


def op_stats(
    before: MetricsSnapshot, after: MetricsSnapshot, prefix: str = "batchline_op"
) -> dict[str, dict[str, float | None]]:
    """Per-op statistics over the interval between two scrapes.

    For each op seen in ``after``: ``batches`` (Δ count of the batch-size
    histogram: dispatches to an instance), ``items`` (Δ items_total),
    ``mean_batch_size`` (items per dispatch), ``calls`` (predictor calls:
    a dispatch runs as one call per shape group), ``mean_call_rows`` (rows per
    call), ``shared_calls`` (calls holding items of more than one request),
    ``mean_queue_wait_ms`` and ``mean_run_ms`` (Δsum/Δcount of those
    histograms, in ms) and ``padding_ratio`` (``1 - Δreal/Δpadded``). A value
    is ``None`` when its denominator did not move.
    """
    ops = set()
    for suffix in ("batch_size_count", "items_total", "queue_wait_seconds_count", "padded_units_total"):
        ops.update(after.label_values(f"{prefix}_{suffix}", "op"))
    out: dict[str, dict[str, float | None]] = {}
    for op in sorted(ops):

        def d(suffix: str, op: str = op) -> float:
            return after.delta(before, f"{prefix}_{suffix}", op=op)

        batches = d("batch_size_count")
        waits = d("queue_wait_seconds_count")
        runs = d("run_seconds_count")
        real, padded = d("real_units_total"), d("padded_units_total")
        wait_s = _ratio(d("queue_wait_seconds_sum"), waits)
        run_s = _ratio(d("run_seconds_sum"), runs)
        pad = _ratio(real, padded)
        calls = d("call_rows_count")
        single = after.delta(before, f"{prefix}_call_requests_bucket", op=op, le="1.0")
        out[op] = {
            "batches": batches,
            "items": d("items_total"),
            "mean_batch_size": _ratio(d("batch_size_sum"), batches),
            "calls": calls,
            "mean_call_rows": _ratio(d("call_rows_sum"), calls),
            "shared_calls": d("call_requests_count") - single,
            "mean_queue_wait_ms": None if wait_s is None else wait_s * 1000.0,
            "mean_run_ms": None if run_s is None else run_s * 1000.0,
            "padding_ratio": None if pad is None else 1.0 - pad,
        }
    return out
