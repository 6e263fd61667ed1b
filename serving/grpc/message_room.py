"""What gRPC calls may hold of their messages at once: room in the server's body budget,
the one HTTP bodies take theirs from, so ``http.max_buffered_mb`` bounds both.

grpc would read a unary message whole before its handler runs, so every method is
registered stream-unary (the same wire) with no deserializer: the handler checks the
token, takes room for the largest message, reads it, shrinks the claim to its cost, parses
it, and gives the room back once it is decoded, before waiting for the answer.

A message of n bytes is counted :data:`READ_FACTOR` x n until decoded: grpcio copies it
twice while reading (peaking near 3n), then parsing holds the bytes and the message.
A call that finds no room waits (holding only its stream's flow-control window, BDP
probing being off) up to its deadline or ``http.request_timeout_s``, then gets 503."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import grpc

from serving.errors import BadRequest, ClientDisconnected
from serving.grpc.call import Call
from serving.service.body_budget import BodyBudget, Claim

#: what a message is counted, in its own size, from before it is read until it is decoded (module doc)
READ_FACTOR = 2


class ReadWatch:
    """Cancels calls whose message takes longer than their limit to arrive, as a slow HTTP
    body is cut off. One thread for all reads, looking every ``tick_s`` (a timer per call
    would start a thread per request)."""

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


class MessageRoom:
    """Claims on ``budget`` for messages of at most ``message_limit`` bytes (grpc's
    ``max_receive_message_length``)."""

    def __init__(self, budget: BodyBudget, message_limit: int, read_timeout_s: float):
        self.budget = budget
        self.message_limit = message_limit
        self.read_timeout_s = read_timeout_s
        self._watch = ReadWatch()

    def take(self, call: Call) -> Claim:
        """Room to read the largest message, to give back once the message is decoded; 503
        when none comes free within the call's deadline or ``read_timeout_s``."""
        wait_s = self.read_timeout_s
        remaining = call.context.time_remaining()
        if remaining is not None:
            wait_s = min(wait_s, remaining)
        claim = self.budget.claim()
        # at most the whole budget: a reload may have made it smaller than grpc's start-time limit
        if not claim.grow_within(min(READ_FACTOR * self.message_limit, self.budget.capacity), max(0.0, wait_s)):
            raise self.budget.refusal()
        return claim

    @contextmanager
    def holding(self, call: Call) -> Iterator[Claim]:
        """Room for the time the block reads and decodes one message."""
        claim = self.take(call)
        try:
            yield claim
        finally:
            claim.release()

    def read_one(self, messages: Iterator[bytes], call: Call, claim: Claim) -> bytes:
        """The call's one message, read within ``read_timeout_s`` (else the call is cancelled);
        ``claim`` shrinks to what it costs until it is decoded (:data:`READ_FACTOR` x its size)."""
        with self._watch.reading(call.context, self.read_timeout_s):
            try:
                message = next(messages, None)
            except grpc.RpcError:  # the call was cancelled (by the client, or by the watch)
                raise ClientDisconnected("the call ended before its message arrived") from None
        if message is None:
            raise BadRequest("the call carried no request message")
        claim.shrink_to(READ_FACTOR * len(message))
        return message
