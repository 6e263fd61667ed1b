"""serving/grpc/message_room.py: a message is read only under a claim on the body
budget, taken for reading the largest message (twice its size: grpcio's copies) and
shrunk to twice the one read (its bytes and the message parsed of them); a call waits for
room at most its deadline, holding nothing while it waits; a message that does not
arrive in time cancels its call."""

import threading

import grpc
import pytest

from serving.errors import BadRequest, ClientDisconnected, Overloaded
from serving.grpc.call import Call, CallHeaders
from serving.grpc.message_room import MessageRoom
from serving.service.body_budget import BodyBudget


class FakeContext:
    def __init__(self, remaining: float | None = None):
        self.remaining = remaining
        self.cancelled = threading.Event()

    def time_remaining(self):
        return self.remaining

    def cancel(self):
        self.cancelled.set()


def call(remaining: float | None = None) -> Call:
    return Call(FakeContext(remaining), CallHeaders(()))


class Cancelled(grpc.RpcError):
    pass


def blocking_messages(ctx: FakeContext):
    """An iterator whose message never comes; it ends as grpc's does when the call is cancelled."""
    ctx.cancelled.wait(10)
    raise Cancelled()
    yield  # pragma: no cover


def test_a_claim_is_taken_for_reading_the_largest_message_and_shrinks_to_the_one_read():
    budget = BodyBudget(40)
    room = MessageRoom(budget, message_limit=10, read_timeout_s=30)
    claim = room.take(call())
    assert budget.held == 2 * 10  # READ_FACTOR: what grpcio holds while it reads
    assert room.read_one(iter([b"abc"]), call(), claim) == b"abc"
    assert budget.held == 2 * 3  # the bytes, and the message parsed of them
    claim.release()
    assert budget.held == 0


def test_a_call_without_room_waits_at_most_its_deadline_holding_nothing_then_gets_503():
    budget = BodyBudget(20)
    room = MessageRoom(budget, message_limit=10, read_timeout_s=30)
    first = room.take(call())
    with pytest.raises(Overloaded, match="http.max_buffered_mb") as caught:
        room.take(call(remaining=0.05))
    assert caught.value.retry_after is not None and budget.held == 20
    first.release()
    room.take(call(remaining=0.05)).release()
    assert budget.held == 0


def test_a_waiting_call_gets_the_room_given_back():
    budget = BodyBudget(20)
    room = MessageRoom(budget, message_limit=10, read_timeout_s=30)
    first = room.take(call())
    got = []
    waiter = threading.Thread(target=lambda: got.append(room.take(call(remaining=30))))
    waiter.start()
    first.release()
    waiter.join(30)
    assert len(got) == 1 and budget.held == 20


def test_the_claim_is_at_most_the_budget_a_reload_shrank():
    budget = BodyBudget(64)
    room = MessageRoom(budget, message_limit=64, read_timeout_s=30)
    budget.resize(16)
    claim = room.take(call(remaining=0.05))
    assert claim.nbytes == 16
    claim.release()


def test_the_room_is_given_back_when_the_block_fails():
    budget = BodyBudget(10)
    room = MessageRoom(budget, message_limit=10, read_timeout_s=30)
    with pytest.raises(BadRequest), room.holding(call()) as claim:
        room.read_one(iter(()), call(), claim)  # a call with no message
    assert budget.held == 0


def test_a_message_that_does_not_arrive_in_time_cancels_the_call():
    room = MessageRoom(BodyBudget(10), message_limit=10, read_timeout_s=0.05)
    ctx = FakeContext()
    with pytest.raises(ClientDisconnected), room.holding(call()) as claim:
        room.read_one(blocking_messages(ctx), Call(ctx, CallHeaders(())), claim)
    assert ctx.cancelled.is_set()
