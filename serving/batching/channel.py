"""Bounded channels between ops (a full one blocks its producer), and the
fan-in join in front of an op with several inputs, whose partial inputs are
bounded by the pipeline's admission limit and dropped with failed requests.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Sequence
from typing import Any, Protocol

from serving.batching.request import RequestState
from serving.errors import DeadlineExceeded, ShuttingDown


class ChannelClosed(ShuttingDown):
    """Raised by :meth:`Channel.put` after :meth:`Channel.close`: the server is draining (503)."""

    def __init__(self, channel: str):
        super().__init__(f"server is shutting down (channel {channel!r} is closed)")


class Channel:
    """A bounded FIFO of ``(request, inputs)`` with close-aware blocking put/get."""

    _CLOSE = object()

    def __init__(self, name: str, capacity: int):
        self.name = name
        self.capacity = capacity
        self._queue: queue.Queue = queue.Queue(maxsize=capacity)
        self._closed = threading.Event()

    def put(self, request: RequestState, inputs: dict[str, Any], poll_s: float = 0.1) -> None:
        """Block until there is room (backpressure), unless the request finishes meanwhile."""
        while not request.done:
            if self._closed.is_set():
                raise ChannelClosed(self.name)
            if request.remaining() <= 0:
                request.fail(DeadlineExceeded(f"deadline passed while waiting for room in channel {self.name!r}"))
                return
            try:
                self._queue.put((request, inputs), timeout=poll_s)
                return
            except queue.Full:
                continue

    def get(self) -> tuple[RequestState, dict[str, Any]] | None:
        """Next entry, or None once closed (every consumer gets one None)."""
        entry = self._queue.get()
        if entry is Channel._CLOSE:
            self._queue.put(Channel._CLOSE)  # let the next consumer see it too
            return None
        return entry

    def close(self) -> None:
        """Consumers drain what is queued, then receive None."""
        self._closed.set()
        self._queue.put(Channel._CLOSE)  # consumers are alive and draining

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def qsize(self) -> int:
        return self._queue.qsize()


class Inbox(Protocol):
    """Where a join sends complete inputs: a :class:`Channel`, or a remote stage's dispatch."""

    def put(self, request: RequestState, inputs: dict[str, Any]) -> None: ...


class Join:
    """Collects one output per input op for each request, then forwards ``{input_op: output}``."""

    def __init__(self, channel: Inbox, input_ops: Sequence[str]):
        self.channel = channel
        self.input_ops = tuple(input_ops)
        self._partial: dict[int, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def deliver(self, source_op: str, request: RequestState, output: Any) -> None:
        if len(self.input_ops) == 1:
            self.channel.put(request, {source_op: output})
            return
        with self._lock:
            if request.done:
                self._partial.pop(request.id, None)
                return
            entry = self._partial.setdefault(request.id, {})
            first = not entry
            entry[source_op] = output
            complete = len(entry) == len(self.input_ops)
            if complete:
                del self._partial[request.id]
        if first:
            request.add_done_callback(self._forget)
        if complete:
            self.channel.put(request, {op: entry[op] for op in self.input_ops})

    def _forget(self, request: RequestState) -> None:
        with self._lock:
            self._partial.pop(request.id, None)

    def pending(self) -> int:
        with self._lock:
            return len(self._partial)
