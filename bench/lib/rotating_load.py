"""A closed loop like :func:`bench.lib.http_load.closed_loop`, over many
requests instead of one: each send takes the next request of the list, so
``clients`` connections together go round all the crops of the rec bench
(a server never sees the same crop twice in a row from everyone)."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator, Sequence

from bench.lib.http_load import HttpError, HttpRequest, LoadResult, _Connection, _run


def round_robin(count: int) -> Iterator[int]:
    """0, 1, ..., count - 1, 0, 1, ...: the order requests are sent in."""
    if count <= 0:
        raise ValueError("no requests to send")
    return itertools.cycle(range(count))


async def _rotating(
    host: str, port: int, requests: Sequence[HttpRequest], clients: int, duration_s: float, warmup_s: float
) -> LoadResult:
    wires = [r.wire(host, port) for r in requests]  # built once, before the clock starts
    order = round_robin(len(wires))
    loop = asyncio.get_running_loop()
    began = loop.time()
    window = (began + warmup_s, began + warmup_s + duration_s)
    result = LoadResult(clients, duration_s)

    async def client() -> None:
        conn = _Connection(host, port)
        try:
            while True:
                t0 = loop.time()
                if t0 >= window[1]:
                    return
                try:
                    status, body = await conn.call(wires[next(order)])
                    good = status == 200
                    error = "" if good else f"HTTP {status}: {body[:200]!r}"
                except (OSError, HttpError) as exc:
                    conn.close()
                    good, error = False, repr(exc)
                t1 = loop.time()
                if window[0] <= t0 and t1 <= window[1]:  # counted: sent and answered inside the window
                    if good:
                        result.ok += 1
                        result.latencies_s.append(t1 - t0)
                    else:
                        result.errors += 1
                        result.first_error = result.first_error or error
                if not good:
                    await asyncio.sleep(0.01)  # a refusing server is not hammered in a tight loop
        finally:
            conn.close()

    await asyncio.gather(*(client() for _ in range(clients)))
    return result


def rotating_closed_loop(
    host: str, port: int, requests: Sequence[HttpRequest], clients: int, duration_s: float, warmup_s: float
) -> LoadResult:
    """``clients`` closed-loop connections sending ``requests`` in turn; counts the
    answers of the ``duration_s`` window after ``warmup_s``."""
    return _run(_rotating(host, port, requests, clients, duration_s, warmup_s))
