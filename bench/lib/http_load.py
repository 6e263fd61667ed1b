"""One asyncio HTTP/1.1 client that measures every null-op server alike:
keep-alive connections, one request in flight on each, the request's bytes
built once, a response read by its Content-Length (or chunks).

Why not aiohttp (installed): measured here, aiohttp's client tops out at a few
thousand requests/s on one core, below what the fastest peer serves; this
client spends far less per request, so the servers, not the client, set the
rate. It runs on uvloop where installed.

* :func:`closed_loop`: ``clients`` connections, each sending its next request
  when the answer to the previous one arrived; warm-up, then a fixed window.
* :func:`lone_latencies`: one request at a time, the latency of each.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from bench.lib.script import BenchError


@dataclass(frozen=True)
class HttpRequest:
    """A POST of ``body`` to ``path``; ``check`` says whether an answer body is right."""

    path: str
    body: bytes
    content_type: str = "application/json"
    check: Callable[[bytes], bool] = field(default=lambda body: True, compare=False)

    def wire(self, host: str, port: int) -> bytes:
        head = (
            f"POST {self.path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: {self.content_type}\r\n"
            f"Content-Length: {len(self.body)}\r\nConnection: keep-alive\r\n\r\n"
        )
        return head.encode("ascii") + self.body


class HttpError(Exception):
    """The server answered something this client cannot read, or closed the connection."""


def parse_response(buf: bytes | bytearray) -> tuple[int, bytes, int, bool] | None:
    """(status, body, bytes used, server closes) of the first whole response in
    ``buf``, or None while it is incomplete."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return None
    head = bytes(buf[:end]).decode("latin-1").split("\r\n")
    try:
        status = int(head[0].split(" ", 2)[1])
    except (IndexError, ValueError):
        raise HttpError(f"bad status line {head[0]!r}") from None
    headers = {}
    for line in head[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    closes = headers.get("connection", "").lower() == "close"
    start = end + 4
    if "content-length" in headers:
        stop = start + int(headers["content-length"])
        return (status, bytes(buf[start:stop]), stop, closes) if len(buf) >= stop else None
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body, pos = bytearray(), start
        while True:
            line_end = buf.find(b"\r\n", pos)
            if line_end < 0:
                return None
            size = int(bytes(buf[pos:line_end]).split(b";")[0], 16)
            chunk_end = line_end + 2 + size
            if len(buf) < chunk_end + 2:
                return None
            if size == 0:
                # no trailers expected: the empty chunk's CRLF ends the message
                return status, bytes(body), chunk_end + 2, closes
            body += buf[line_end + 2 : chunk_end]
            pos = chunk_end + 2
    raise HttpError("response without Content-Length or chunked encoding")


class _Connection:
    """One keep-alive connection; reconnects when the server closes it."""

    def __init__(self, host: str, port: int):
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.buf = bytearray()

    async def call(self, wire: bytes) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port, limit=1 << 20)
            self.buf.clear()
        assert self.reader is not None
        self.writer.write(wire)
        while True:
            parsed = parse_response(self.buf)
            if parsed is not None:
                status, body, used, closes = parsed
                del self.buf[:used]
                if closes:
                    self.close()
                return status, body
            data = await self.reader.read(65536)
            if not data:
                self.close()
                raise HttpError("connection closed by the server")
            self.buf += data

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


@dataclass
class LoadResult:
    """What a closed loop counted inside its window."""

    clients: int
    seconds: float
    ok: int = 0
    errors: int = 0
    first_error: str = ""
    latencies_s: list[float] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.ok / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict:
        return {
            "clients": self.clients,
            "seconds": round(self.seconds, 3),
            "ok": self.ok,
            "errors": self.errors,
            "first_error": self.first_error,
            "req_per_s": round(self.rate, 1),
            "latency_ms": latency_summary_ms(self.latencies_s),
        }


def percentile(sorted_values: list[float], q: float) -> float:
    """The ``q``-quantile (0..1) of ascending values, nearest rank; NaN when empty."""
    if not sorted_values:
        return float("nan")
    rank = min(len(sorted_values) - 1, max(0, math.ceil(q * len(sorted_values)) - 1))
    return sorted_values[rank]


def latency_summary_ms(latencies_s: list[float]) -> dict:
    """n, p50, p99, max of latencies in seconds, as milliseconds."""
    values = sorted(latencies_s)
    return {
        "n": len(values),
        "p50": round(percentile(values, 0.50) * 1000, 3),
        "p99": round(percentile(values, 0.99) * 1000, 3),
        "max": round(values[-1] * 1000, 3) if values else float("nan"),
    }


def round_robin(count: int) -> Iterator[int]:
    """0, 1, ..., count - 1, 0, 1, ...: the order a closed loop sends its requests in."""
    if count <= 0:
        raise ValueError("no requests to send")
    return itertools.cycle(range(count))


async def _closed_loop(
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


async def _lone(host: str, port: int, request: HttpRequest, n: int, warmup: int) -> list[float]:
    wire = request.wire(host, port)
    conn = _Connection(host, port)
    out: list[float] = []
    try:
        for i in range(warmup + n):
            t0 = time.perf_counter()
            status, body = await conn.call(wire)
            dt = time.perf_counter() - t0
            if status != 200:
                raise BenchError(f"lone request answered HTTP {status}: {body[:200]!r}")
            if i >= warmup:
                out.append(dt)
    finally:
        conn.close()
    return out


async def _probe(host: str, port: int, request: HttpRequest) -> tuple[int, bytes]:
    conn = _Connection(host, port)
    try:
        return await conn.call(request.wire(host, port))
    finally:
        conn.close()


def _run(coro):  # type: ignore[no-untyped-def]
    try:
        import uvloop

        return uvloop.run(coro)
    except ImportError:
        return asyncio.run(coro)


def closed_loop(
    host: str, port: int, request: HttpRequest, clients: int, duration_s: float, warmup_s: float
) -> LoadResult:
    """``clients`` closed-loop connections; counts the answers of the ``duration_s`` window after ``warmup_s``."""
    return _run(_closed_loop(host, port, [request], clients, duration_s, warmup_s))


def rotating_closed_loop(
    host: str, port: int, requests: Sequence[HttpRequest], clients: int, duration_s: float, warmup_s: float
) -> LoadResult:
    """:func:`closed_loop` over many requests: each send takes the next of ``requests``, so the
    connections together go round all of them (no server sees one input from everyone at once)."""
    return _run(_closed_loop(host, port, requests, clients, duration_s, warmup_s))


def lone_latencies(host: str, port: int, request: HttpRequest, n: int, warmup: int = 50) -> list[float]:
    """Seconds of each of ``n`` requests sent one at a time on one connection, after ``warmup``."""
    return _run(_lone(host, port, request, n, warmup))


def probe(host: str, port: int, request: HttpRequest) -> tuple[int, bytes]:
    """(status, body) of one request on a fresh connection; raises OSError/HttpError when none comes."""
    return _run(_probe(host, port, request))
