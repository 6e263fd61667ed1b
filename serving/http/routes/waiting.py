"""Waiting for the answers of one HTTP request's inputs while watching its
client: a client gone or one input failed fails them all (nothing more is
computed for a request that cannot be answered)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from serving.engine.request import RequestState
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
