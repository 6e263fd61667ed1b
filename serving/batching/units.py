"""A batch's size in padded input units (pixels, tokens), which ``max_batch_units``
bounds: ``items x prod(largest extent per dimension)`` (:meth:`serving.op.Op.pad_extent`),
as if it ran as one call padded to its largest item. Every shape group ``collate``
makes, and all together, stay within it, at the price of overestimating a batch of
mixed shapes that collate splits.
"""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Iterable

from serving.errors import InternalError

Extent = tuple[int, ...]


class PaddedSize:
    """The padded units of a batch that grows one item at a time."""

    __slots__ = ("count", "extent")

    def __init__(self) -> None:
        self.count = 0
        self.extent: Extent = ()

    def _joined(self, extent: Extent) -> Extent:
        # a dimension one item lacks counts 1 for it: a mix stays defined and never raises
        return tuple(max(a, b) for a, b in itertools.zip_longest(self.extent, extent, fillvalue=1))

    def with_item(self, extent: Extent) -> int:
        """The padded units if an item of ``extent`` joined."""
        return (self.count + 1) * math.prod(self._joined(extent))

    def padding_added(self, extent: Extent) -> int:
        """The padding units an item of ``extent`` would add if it joined: its own
        padding up to the batch's extent and the others' up to its own."""
        return self.with_item(extent) - self.units - math.prod(extent)

    def add(self, extent: Extent) -> None:
        self.extent = self._joined(extent)
        self.count += 1

    @property
    def units(self) -> int:
        return self.count * math.prod(self.extent) if self.count else 0


def batch_units(extents: Iterable[Extent]) -> int:
    """Padded units of a batch of items of these extents."""
    size = PaddedSize()
    for extent in extents:
        size.add(extent)
    return size.units


def items_within(extent: Extent, budget: int, limit: int) -> int:
    """How many items of ``extent`` one batch may hold under ``budget`` (1 to ``limit``)."""
    return max(1, min(limit, budget // max(1, math.prod(extent))))


def checked_extent(value: object, op_name: str) -> Extent:
    """``value`` as an extent of ints; InternalError naming the op unless it is a non-empty
    tuple of positive integers (numpy's too: ops often read them off array shapes)."""
    if isinstance(value, tuple) and value and not any(isinstance(v, bool) for v in value):
        try:
            extent = tuple(operator.index(v) for v in value)
        except TypeError:
            extent = ()
        if extent and min(extent) >= 1:
            return extent
    raise InternalError(f"op {op_name!r}: pad_extent() must return a non-empty tuple of positive ints, got {value!r}")
