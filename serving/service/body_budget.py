"""The body budget: bytes of request bodies the server holds at once, in memory
(``http.max_buffered_mb``; docs/DESIGN_NOTES.md). A request takes its body's bytes the
moment its headers are complete, before any is read, and gives them back once answered;
one that does not fit is refused at once, 503 + Retry-After. A chunked body takes its bytes
as they arrive, not the body limit up front (which would let a few small chunked uploads
lock out everyone). gRPC messages take room from the same budget but wait for it
(:meth:`Claim.grow_within`): grpc's flow control keeps a waiting call to a window's worth."""

from __future__ import annotations

import threading
import time

from serving.errors import Overloaded
from serving.service.limits import share_of

MIB = 1 << 20
BUDGET_KEY = "http.max_buffered_mb"
#: maximal bodies the default budget holds at once
DEFAULT_BODIES = 4
#: seconds a refused client is told to wait: bodies are given back as requests are answered
RETRY_AFTER_S = 1.0


def default_buffered_bytes(max_body_size: int) -> int:
    """Four bodies of the largest ``max_body_size``: 256 MiB at the 64 MiB default.
    A few maximal uploads at once, and many of the usual, far smaller, ones."""
    return DEFAULT_BODIES * max_body_size


def buffered_bytes(max_buffered_mb: int | None, max_body_size: int) -> int:
    """The budget a config sets: ``max_buffered_mb`` MiB, or the default derived from the body limit."""
    return max_buffered_mb * MIB if max_buffered_mb is not None else default_buffered_bytes(max_body_size)


def front_buffered_bytes(max_buffered_mb: int | None, max_body_size: int, share: float) -> int:
    """One HTTP front's budget: its ``share`` of the server's (a front process's), never
    less than one body of ``max_body_size``."""
    return share_of(buffered_bytes(max_buffered_mb, max_body_size), share, max_body_size)


class BodyBudget:
    """Bytes of request bodies held at once (``capacity``). Thread-safe: bodies
    are taken in the front's event loop, given back in a worker thread."""

    def __init__(self, capacity: int):
        self._lock = threading.Lock()
        self._room = threading.Condition(self._lock)  # notified whenever bytes are given back
        self._capacity = capacity
        self._held = 0

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def held(self) -> int:
        with self._lock:
            return self._held

    def resize(self, capacity: int) -> None:
        """A new capacity (a reload); what is held stays held."""
        with self._lock:
            self._capacity = capacity
            self._room.notify_all()

    def claim(self) -> Claim:
        """An empty claim on this budget, for one request body."""
        return Claim(self)

    def refusal(self) -> Overloaded:
        """What a request whose body does not fit is answered."""
        return Overloaded(
            f"request bodies held by the server are at {BUDGET_KEY} ({self._capacity} bytes), retry later",
            retry_after=RETRY_AFTER_S,
        )

    def _grow(self, claim: Claim, nbytes: int) -> bool:
        with self._lock:
            return self._grow_locked(claim, nbytes)

    def _grow_locked(self, claim: Claim, nbytes: int) -> bool:
        more = nbytes - claim.nbytes
        if more <= 0:
            return True
        if self._held + more > self._capacity:
            return False
        self._held += more
        claim.nbytes = nbytes
        return True

    def _grow_within(self, claim: Claim, nbytes: int, timeout_s: float) -> bool:
        end = time.monotonic() + timeout_s
        with self._lock:
            while not self._grow_locked(claim, nbytes):
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self._room.wait(left)
            return True

    def _shrink(self, claim: Claim, nbytes: int) -> None:
        with self._lock:
            less = claim.nbytes - max(0, nbytes)
            if less > 0:
                self._held -= less
                claim.nbytes -= less
                self._room.notify_all()

    def _release(self, claim: Claim) -> None:
        # under the lock: a claim may be released from two threads (the worker that
        # answered, the event loop that closes the connection), and gives back once
        with self._lock:
            if claim.nbytes:
                self._held -= claim.nbytes
                claim.nbytes = 0
                self._room.notify_all()


class Claim:
    """The bytes one request body holds in a :class:`BodyBudget`: it grows
    with the body and is released once (releasing again gives back nothing)."""

    def __init__(self, budget: BodyBudget):
        self.budget = budget
        self.nbytes = 0

    def grow_to(self, nbytes: int) -> bool:
        """Hold ``nbytes`` in all, if the budget has room for the difference (all or nothing)."""
        return self.budget._grow(self, nbytes)

    def grow_within(self, nbytes: int, timeout_s: float) -> bool:
        """:meth:`grow_to`, waiting up to ``timeout_s`` for the room to be given back (a gRPC call,
        whose waiting costs no buffer); False if it never came."""
        return self.budget._grow_within(self, nbytes, timeout_s)

    def shrink_to(self, nbytes: int) -> None:
        """Hold at most ``nbytes`` (what was taken for a message of unknown size, once its size is known)."""
        self.budget._shrink(self, nbytes)

    def release(self) -> None:
        self.budget._release(self)
