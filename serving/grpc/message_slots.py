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
trickles its message is cut off after ``http.request_timeout_s``, as over HTTP."""

from __future__ import annotations

import threading
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
        timer = threading.Timer(self.read_timeout_s, call.context.cancel)
        timer.daemon = True
        timer.start()
        try:
            message = next(messages, None)
        except grpc.RpcError:  # the call was cancelled (by the client, or by the timer above)
            raise ClientDisconnected("the call ended before its message arrived") from None
        finally:
            timer.cancel()
        if message is None:
            raise BadRequest("the call carried no request message")
        return message
