"""The wire between a front process and the engine: whole messages, in order,
many to a frame under load, and a clear end when either side goes."""

from __future__ import annotations

import threading
from multiprocessing import Pipe

import pytest

from serving.http.front_processes.link import MAX_FRAME_MESSAGES, Wire


def wires() -> tuple[Wire, Wire]:
    a, b = Pipe()
    return Wire(a), Wire(b)


def received(wire: Wire, count: int) -> list:
    got: list = []
    while len(got) < count:
        got += wire.recv()
    return got


def test_messages_arrive_whole_and_in_order():
    front, engine = wires()
    sent = [("submit", i, "x" * i, {"n": [i, None]}) for i in range(50)]
    for message in sent:
        front.send(message)
    assert received(engine, len(sent)) == sent


def test_a_backlog_travels_in_frames_of_many_messages():
    front, engine = wires()
    count = 3 * MAX_FRAME_MESSAGES
    hold = threading.Lock()
    hold.acquire()
    # the writer is blocked while everything is queued: it must then send it in few frames
    original = front.conn.send_bytes
    frames: list[int] = []

    def counting_send(data: bytes) -> None:
        with hold:
            frames.append(len(data))
            original(data)

    front.conn.send_bytes = counting_send  # type: ignore[method-assign]
    # a thread's send is under way (held in the system call); the others' messages queue meanwhile
    first = threading.Thread(target=front.send, args=(("first",),))
    first.start()
    while not frames and front._sending.acquire(blocking=False):  # until the first send holds the link
        front._sending.release()
    for i in range(count):
        front.send(("m", i))  # returns at once: the link is busy
    hold.release()
    first.join(5)
    got = received(engine, count + 1)
    assert got[0] == ("first",) and [m[1] for m in got[1:]] == list(range(count))
    # the sending thread took everything queued: frames of MAX_FRAME_MESSAGES, not one per message
    assert len(frames) == 1 + count // MAX_FRAME_MESSAGES, frames


def test_a_lone_sender_sends_at_once_on_its_own_thread():
    front, engine = wires()
    senders: list[str] = []
    original = front.conn.send_bytes

    def noting_send(data: bytes) -> None:
        senders.append(threading.current_thread().name)
        original(data)

    front.conn.send_bytes = noting_send  # type: ignore[method-assign]
    front.send(("alone",))
    assert senders == [threading.current_thread().name]
    assert engine.recv() == [("alone",)]


def test_what_cannot_be_pickled_fails_in_the_sender():
    front, engine = wires()
    with pytest.raises(Exception):  # noqa: B017 - pickle raises several types (PicklingError, TypeError, AttributeError)
        front.send(("done", lambda: None))
    front.send(("after",))
    assert engine.recv() == [("after",)]


def test_the_other_end_closing_ends_recv_and_send():
    front, engine = wires()
    engine.close()
    with pytest.raises((EOFError, OSError)):
        front.recv()
    front.close()
    with pytest.raises(OSError):
        front.send(("late",))


def test_closing_from_two_threads_closes_once():
    front, engine = wires()
    closes: list[int] = []
    original = front.conn.close

    def counting_close() -> None:
        closes.append(1)
        original()

    front.conn.close = counting_close  # type: ignore[method-assign]
    threads = [threading.Thread(target=front.close) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    front.close()
    assert closes == [1]
    with pytest.raises((EOFError, OSError)):
        engine.recv()
