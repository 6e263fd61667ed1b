"""One batch through an op's hooks (collate -> run -> uncollate), checked so a
faulty op cannot mix up results, and retried item by item so one bad item cannot
fail its batch-mates. Calls are split into ``run_batch_sizes`` (13: 8 + 4 + 1)."""

from __future__ import annotations

import logging
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from serving.errors import DeadlineExceeded, InternalError, Overloaded, as_serving_error
from serving.op import Op, Runner, SubBatch

log = logging.getLogger(__name__)


@dataclass
class CallStats:
    """What the predictor calls of one batch held."""

    rows: list[int] = field(default_factory=list)  # items per call
    requests: list[int] = field(default_factory=list)  # distinct requests per call
    groups: list[int] = field(default_factory=list)  # distinct pipelines per call (when groups are given)
    real_units: int = 0
    padded_units: int = 0

    def add(self, other: CallStats) -> None:
        self.rows += other.rows
        self.requests += other.requests
        self.groups += other.groups
        self.real_units += other.real_units
        self.padded_units += other.padded_units


def split_sizes(n: int, sizes: Sequence[int]) -> list[int]:
    """Greedy split of ``n`` items into allowed sizes, largest first (``sizes`` holds 1)."""
    out = []
    for size in sorted(sizes, reverse=True):
        while n >= size:
            out.append(size)
            n -= size
    return out


def _checked_subs(op: Op, items: Sequence[Any]) -> list[SubBatch]:
    subs = op.collate(items)
    seen = sorted(i for sub in subs for i in sub.indices)
    if seen != list(range(len(items))):
        raise InternalError(
            f"op {op.name!r}: collate() must place each of the {len(items)} items in exactly "
            f"one sub-batch; it placed {len(seen)} (indices {seen[:16]})"
        )
    return subs


def predictor_calls(op: Op, items: Sequence[Any], run_sizes: Sequence[int]) -> Iterator[SubBatch]:
    """The op's sub-batches, each split into ``run_sizes`` chunks (largest
    first) and re-collated, so predictor shapes repeat; ``[]`` = any size."""
    for sub in _checked_subs(op, items):
        n = len(sub.indices)
        if not run_sizes or n in run_sizes:
            yield sub
            continue
        start = 0
        for size in split_sizes(n, run_sizes):
            chunk = sub.indices[start : start + size]
            start += size
            for part in _checked_subs(op, [items[i] for i in chunk]):
                yield SubBatch(
                    indices=[chunk[j] for j in part.indices],
                    feed=part.feed,
                    real_units=part.real_units,
                    padded_units=part.padded_units,
                    meta=part.meta,
                )


def run_batch(
    op: Op,
    runner: Runner,
    items: Sequence[Any],
    run_sizes: Sequence[int],
    owners: Sequence[Hashable] | None = None,
    groups: Sequence[Hashable] | None = None,
) -> tuple[list[Any], CallStats]:
    """Per-item raw outputs of one batch and what its calls held (``owners[i]``: item i's
    request, ``groups[i]``: its pipeline, counted per call); raises on failure."""
    outputs: list[Any] = [None] * len(items)
    stats = CallStats()
    for sub in predictor_calls(op, items, run_sizes):
        results = op.uncollate(sub, op.run(runner, sub.feed))
        if len(results) != len(sub.indices):
            raise InternalError(
                f"op {op.name!r}: uncollate() returned {len(results)} results "
                f"for a predictor call of {len(sub.indices)} items"
            )
        for idx, out in zip(sub.indices, results):
            outputs[idx] = out
        stats.rows.append(len(sub.indices))
        stats.requests.append(len({owners[i] for i in sub.indices}) if owners is not None else 1)
        if groups is not None:
            stats.groups.append(len({groups[i] for i in sub.indices}))
        stats.real_units += sub.real_units
        stats.padded_units += sub.padded_units
    return outputs, stats


def run_with_retry(
    op: Op,
    runner: Runner,
    items: Sequence[Any],
    run_sizes: Sequence[int],
    retry: int,
    owners: Sequence[Hashable] | None = None,
    groups: Sequence[Hashable] | None = None,
) -> tuple[list[Any], CallStats]:
    """Per-item raw outputs, or a ServingError for items that failed; a failed batch
    is retried item by item ``retry`` times."""
    try:
        return run_batch(op, runner, items, run_sizes, owners, groups)
    except (DeadlineExceeded, Overloaded) as exc:
        # the instance's fault (hung, died, restarting), not an item's: retrying would fail again
        log.warning("op %s: batch of %d failed: %s", op.name, len(items), exc)
        return [exc] * len(items), CallStats()
    except Exception as exc:  # noqa: BLE001 - any fault of the batch: find out which items fail alone
        if retry <= 0:
            log.warning("op %s: batch of %d failed: %s", op.name, len(items), exc)
            return [as_serving_error(exc)] * len(items), CallStats()
        log.warning("op %s: batch of %d failed (%s); retrying item by item", op.name, len(items), exc)
    outcomes: list[Any] = []
    stats = CallStats()
    for item in items:
        outcome, one = _run_alone(op, runner, item, run_sizes, retry)
        outcomes.append(outcome)
        stats.add(one)
    return outcomes, stats


def _run_alone(op: Op, runner: Runner, item: Any, run_sizes: Sequence[int], attempts: int) -> tuple[Any, CallStats]:
    error: Exception = InternalError(f"op {op.name!r}: no attempt made")
    for _ in range(attempts):
        try:
            (output,), stats = run_batch(op, runner, [item], run_sizes)
            return output, stats
        except Exception as exc:  # noqa: BLE001 - the item's own fault, reported as its outcome
            error = exc
    log.warning("op %s: item failed after %d retries: %s", op.name, attempts, error)
    return as_serving_error(error), CallStats()
