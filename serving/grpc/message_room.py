"""What gRPC calls may hold of their messages at once: room in the server's body
budget (:mod:`serving.service.body_budget`), the one HTTP bodies take theirs from,
so ``http.max_buffered_mb`` bounds both together.

grpc reads a unary call's message before its handler runs and holds it whole,
so every method is registered stream-unary (the same wire: a unary call is a
stream of one message) with no deserializer: a handler starts before anything
of its message is read. It checks the token, then takes room for reading one
message of the largest size grpc accepts, reads the message, shrinks its claim
to what the message costs, counts and parses it, and gives the room back once
the message is decoded, before it waits for its answer.

A message of n bytes is counted 2n (:data:`READ_FACTOR`), from before it is read
until it is decoded: grpcio copies the core's buffers into a ``bytearray``, then
into ``bytes``, so reading peaks near 3n (measured: a 61 MB message, +182 MB; a
bare grpc server, the same), and parsing holds the bytes and the parsed message
(whose ``bytes`` fields are copies of their own). Counted at 2n, what a message
costs stays within twice what the budget counts, as an HTTP body's does, and the
default budget (4 bodies of the largest size) still reads two maximal messages
at once.

A call that finds no room waits for it up to its deadline or
``http.request_timeout_s``, then gets 503 with Retry-After. While it waits it
holds no budget, and grpc's flow control holds its message to the stream's
window (grpc grows the window toward the message size only once the message is
read, with BDP probing off: :mod:`serving.grpc.grpc_server`). A client that trickles
its message is cut off after ``http.request_timeout_s``
(:class:`~serving.grpc.read_watch.ReadWatch`), as over HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import grpc

from serving.errors import BadRequest, ClientDisconnected
from serving.grpc.call import Call
from serving.grpc.read_watch import ReadWatch
from serving.service.body_budget import BodyBudget, Claim

#: what a message is counted, in its own size, from before it is read until it is decoded (module doc)
READ_FACTOR = 2


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
