"""Waiting for one request's answers, in a thread or on an event loop, while watching its
client: a client gone or one input failed fails them all (nothing more is computed)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from serving.batching.request import RequestState
from serving.errors import ClientDisconnected, ServingError


def wait_for_results(handles: Sequence[RequestState], wait_slice_s: float, disconnected: Callable[[], bool]) -> None:
    """Return when every handle has its result or its deadline passed; raise the first
    failure (prefixed with its input's index when there are several)."""
    for i, handle in enumerate(handles):
        _wait_one(handle, handles, wait_slice_s, disconnected)
        try:
            handle.result(timeout=0)
        except TimeoutError:
            pass
        except ServingError as err:
            failure = err.with_prefix(f"input {i}: ") if len(handles) > 1 else err
            _fail_all(handles, failure)
            raise failure from None


def _wait_one(
    handle: RequestState, handles: Sequence[RequestState], wait_slice_s: float, disconnected: Callable[[], bool]
) -> None:
    # in slices, so a client that closed the connection is noticed while its request waits
    while not handle.wait(min(wait_slice_s, max(0.0, handle.remaining()))):
        if handle.remaining() <= 0:
            return
        if disconnected():
            _fail_all(handles, ClientDisconnected("client closed the connection"))
            return


def _fail_all(handles: Sequence[RequestState], err: ServingError) -> None:
    for h in handles:
        h.fail(err)


async def settled(handles: Sequence[RequestState], wait_slice_s: float, disconnected: Callable[[], bool]) -> None:
    """Return once every handle has its outcome, its deadline passed, or the client is gone
    (then they all fail). One future and one timer per request, looking every ``wait_slice_s``."""
    loop = asyncio.get_running_loop()
    woken: asyncio.Future[None] = loop.create_future()
    pending = [len(handles)]
    timer: asyncio.TimerHandle | None = None

    def wake() -> None:
        if not woken.done():
            woken.set_result(None)

    def one_more() -> None:  # on the loop
        pending[0] -= 1
        if pending[0] == 0:
            wake()

    def from_elsewhere(_handle: RequestState) -> None:
        loop.call_soon_threadsafe(one_more)

    def look() -> None:  # on the loop, every slice until woken
        nonlocal timer
        if woken.done():
            return
        if disconnected():
            for handle in handles:  # as the app's wait does: nothing more is computed for them
                handle.fail(ClientDisconnected("client closed the connection"))
            wake()
        elif max(h.remaining() for h in handles) <= 0:
            wake()
        else:
            timer = loop.call_later(next_look(), look)

    def next_look() -> float:  # a slice, or the last deadline if that comes sooner
        return max(0.0, min(wait_slice_s, max(h.remaining() for h in handles)))

    for handle in handles:
        handle.add_done_callback(from_elsewhere)
    timer = loop.call_later(next_look(), look)
    try:
        await woken
    finally:
        timer.cancel()  # the last one set
