"""serving/grpc/message_slots.py: messages are read only under a slot, slots are as
many as the buffered-bytes budget holds largest messages, a call waits for one at
most its deadline, and a message that does not arrive in time cancels its call."""

import threading

import grpc
import pytest

from serving.config import parse_config
from serving.config.repository_files import repository_of
from serving.errors import BadRequest, ClientDisconnected, Overloaded
from serving.grpc.call import Call, CallHeaders
from serving.grpc.message_slots import MessageSlots
from tests.support.client_fakes import text_config


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


@pytest.mark.parametrize("buffered_mb, body, slots", [(None, 1 << 20, 4), (10, 1 << 20, 10), (1, 4 << 20, 1)])
def test_slots_are_the_largest_messages_the_buffered_budget_holds(buffered_mb, body, slots):
    config = text_config(max_body_size=body)
    if buffered_mb is not None:
        config["http"] = {"max_buffered_mb": max(buffered_mb, body >> 20)}
    assert MessageSlots.for_config(repository_of(parse_config(config))).count == slots


def test_a_call_without_a_free_slot_waits_at_most_its_deadline_then_gets_503():
    slots = MessageSlots(1, read_timeout_s=30)
    first = slots.take(call())
    with pytest.raises(Overloaded, match="message slot"):
        slots.take(call(remaining=0.05))
    first.release()
    first.release()  # once only: the semaphore would refuse a second
    slots.take(call(remaining=0.05)).release()


def test_the_slot_is_given_back_when_the_block_fails():
    slots = MessageSlots(1, read_timeout_s=30)
    with pytest.raises(BadRequest), slots.holding(call()):
        slots.read_one(iter(()), call())  # a call with no message
    slots.take(call(remaining=0.05)).release()


def test_a_message_that_does_not_arrive_in_time_cancels_the_call():
    slots = MessageSlots(1, read_timeout_s=0.05)
    ctx = FakeContext()
    with pytest.raises(ClientDisconnected):
        slots.read_one(blocking_messages(ctx), Call(ctx, CallHeaders(())))
    assert ctx.cancelled.is_set()


def test_the_message_is_read_whole():
    assert MessageSlots(1, read_timeout_s=1).read_one(iter(["m"]), call()) == "m"
