"""The decode budget: bytes of decoded pixels in flight in the whole server, so
N concurrent large requests cost at most the budget, never N maximal requests.
A request reserves, from its image headers before decoding, each image's array,
the op's 8-bit BGR copy and OpenCV's transient copy; one that does not fit waits
briefly (``max_wait_s``, ``wait_share`` of its time limit), then gets 503; one
larger than the whole budget gets 413.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable

from serving.errors import Overloaded, PayloadTooLarge

#: images of ``max_image_pixels`` one request may carry, decoded as 8-bit BGRA
REQUEST_IMAGES = 2
BGRA_BYTES = 4
#: bytes a pixel of the 8-bit BGR copy an image op works on (held as long as the request)
BGR_BYTES = 3
MIB = 1 << 20
BUDGET_KEY = "decode_budget_mb"


def request_bytes_limit(max_image_pixels: int) -> int:
    """The decoded bytes one request may hold: two images of ``max_image_pixels`` as 8-bit BGRA."""
    return REQUEST_IMAGES * max_image_pixels * BGRA_BYTES


def default_budget_bytes(max_image_pixels: Iterable[int]) -> int:
    """One maximal request of the largest limit: its decoded arrays, decoding's transient
    copy (at most as much again) and the ops' 8-bit BGR copies of its pixels."""
    return max(
        (2 * request_bytes_limit(p) + REQUEST_IMAGES * p * BGR_BYTES for p in max_image_pixels),
        default=0,
    )


def budget_bytes(decode_budget_mb: int | None, max_image_pixels: Iterable[int]) -> int:
    """The budget a config sets: ``decode_budget_mb`` MiB, or the default derived from the pipelines."""
    return decode_budget_mb * MIB if decode_budget_mb is not None else default_budget_bytes(max_image_pixels)


class Reservation:
    """Bytes held in a :class:`DecodeBudget`; a context manager, released once."""

    def __init__(self, budget: DecodeBudget, nbytes: int):
        self._budget = budget
        self.nbytes = nbytes

    def shrink(self, nbytes: int) -> None:
        """Keep only ``nbytes`` (e.g. the arrays, once decoding's transient copies are gone)."""
        if nbytes < self.nbytes:
            self._budget._give_back(self.nbytes - nbytes)
            self.nbytes = nbytes

    def release(self) -> None:
        self.shrink(0)

    def __enter__(self) -> Reservation:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()


class DecodeBudget:
    """Bytes of decoded pixels the server holds at once (``capacity``)."""

    def __init__(
        self,
        capacity: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        max_wait_s: float = 2.0,
        wait_share: float = 0.5,
        wait: Callable[[threading.Condition, float], object] | None = None,
    ):
        self._capacity = capacity
        self.clock = clock
        self.max_wait_s = max_wait_s
        self.wait_share = wait_share
        # how a waiter sleeps (tests pass one that moves their fake clock)
        self._wait = wait or (lambda cond, timeout: cond.wait(timeout))
        self._in_use = 0
        self._cond = threading.Condition()

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def in_use(self) -> int:
        return self._in_use

    def resize(self, capacity: int) -> None:
        """A new capacity (a reload); what is held stays held, waiters try again."""
        with self._cond:
            self._capacity = capacity
            self._cond.notify_all()

    def reserve(self, nbytes: int, time_limit_s: float) -> Reservation:
        """Hold ``nbytes``, waiting for them briefly (see the module doc); 413 if they
        exceed the whole budget, 503 + Retry-After if they did not come free in time."""
        if nbytes <= 0:
            return Reservation(self, 0)
        deadline = self.clock() + max(0.0, min(self.max_wait_s, self.wait_share * time_limit_s))
        with self._cond:
            while True:
                if nbytes > self._capacity:
                    raise PayloadTooLarge(
                        f"the request's images need {_mib(nbytes)} MiB to decode, more than the server's "
                        f"whole decode budget ({BUDGET_KEY}: {_mib(self._capacity)} MiB)"
                    )
                if self._in_use + nbytes <= self._capacity:
                    self._in_use += nbytes
                    return Reservation(self, nbytes)
                left = deadline - self.clock()
                if left <= 0:
                    raise Overloaded(
                        f"decode budget busy: {_mib(self._in_use)} of {_mib(self._capacity)} MiB of decoded "
                        f"images in flight, this request needs {_mib(nbytes)} MiB ({BUDGET_KEY})",
                        retry_after=max(1.0, math.ceil(self.max_wait_s)),
                    )
                self._wait(self._cond, left)

    def _give_back(self, nbytes: int) -> None:
        with self._cond:
            self._in_use -= nbytes
            self._cond.notify_all()


def _mib(nbytes: int) -> str:
    return f"{nbytes / MIB:.1f}"
