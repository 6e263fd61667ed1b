"""What gRPC calls may hold of their messages at once, bounded as the HTTP front
bounds its bodies (``http.max_buffered_mb``).

grpc reads a unary call's message before its handler runs, and holds it whole
(up to the largest ``max_body_size``), so with a thread per call the calls could
hold threads x that. The services are therefore registered as stream-unary (the
wire is the same: a unary call is a stream of one message): a handler starts
before anything of the message is read, takes a slot, reads the one message,
parses, checks and decodes it, and gives the slot back before it waits for the
answer. A message is read only under a slot, and slots are as many as the
buffered-bytes budget holds messages of the largest size; grpc's flow control
keeps a call waiting for a slot to a window's worth of bytes. A client that
trickles its message is cut off after ``http.request_timeout_s`` (give or take
:class:`ReadWatch`'s tick), as over HTTP."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import grpc

from serving.config.repository_files import RepositoryConfig
from serving.errors import BadRequest, ClientDisconnected, Overloaded
from serving.grpc.call import Call
from serving.http.body_budget import buffered_bytes
from serving.http.limits import largest_body_size

RETRY_AFTER_S = 1.0  # slots come back as fast as messages are decoded


class Slot:
    """One taken slot; :meth:`release` gives it back once, however often it is called."""

    def __init__(self, slots: threading.BoundedSemaphore):
        self._slots: threading.BoundedSemaphore | None = slots

    def release(self) -> None:
        slots, self._slots = self._slots, None
        if slots is not None:
            slots.release()


class MessageSlots:
    def __init__(self, count: int, read_timeout_s: float):
        self.count = count
        self.read_timeout_s = read_timeout_s
        self._slots = threading.BoundedSemaphore(count)
        self._watch = ReadWatch()

    @classmethod
    def for_config(cls, config: RepositoryConfig) -> MessageSlots:
        largest = largest_body_size(config)
        return cls(
            max(1, buffered_bytes(config.http.max_buffered_mb, largest) // largest), config.http.request_timeout_s
        )

    def take(self, call: Call) -> Slot:
        """A slot, to give back once the message is decoded; 503 when none comes free within
        the call's deadline or ``read_timeout_s``."""
        wait_s = self.read_timeout_s
        remaining = call.context.time_remaining()
        if remaining is not None:
            wait_s = min(wait_s, remaining)
        if not self._slots.acquire(timeout=wait_s):
            raise Overloaded(
                f"every gRPC message slot ({self.count}, http.max_buffered_mb) is in use", retry_after=RETRY_AFTER_S
            )
        return Slot(self._slots)

    @contextmanager
    def holding(self, call: Call) -> Iterator[None]:
        """A slot for the time the block reads and decodes one message."""
        slot = self.take(call)
        try:
            yield
        finally:
            slot.release()

    def read_one(self, messages: Iterator[Any], call: Call) -> Any:
        """The call's one message, read within ``read_timeout_s`` (else the call is cancelled)."""
        with self._watch.reading(call.context, self.read_timeout_s):
            try:
                message = next(messages, None)
            except grpc.RpcError:  # the call was cancelled (by the client, or by the watch)
                raise ClientDisconnected("the call ended before its message arrived") from None
        if message is None:
            raise BadRequest("the call carried no request message")
        return message


class ReadWatch:
    """Cancels calls whose message takes longer than their limit to arrive: one thread for
    all of them, started with the first read, that looks every ``tick_s`` (a timer per
    call would start a thread per request)."""

    def __init__(self, tick_s: float = 0.5):
        self.tick_s = tick_s
        self._reading: dict[int, tuple[float, Any]] = {}  # id(context) -> (cancel at, context)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @contextmanager
    def reading(self, context: Any, limit_s: float) -> Iterator[None]:
        key = id(context)
        with self._lock:
            self._reading[key] = (time.monotonic() + limit_s, context)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="grpc-read-watch", daemon=True)
                self._thread.start()
        try:
            yield
        finally:
            with self._lock:
                self._reading.pop(key, None)

    def _run(self) -> None:
        while True:
            time.sleep(self.tick_s)
            now = time.monotonic()
            with self._lock:
                late = [ctx for at, ctx in self._reading.values() if at <= now]
            for context in late:
                context.cancel()
