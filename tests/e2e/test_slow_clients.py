"""Slow and idle clients against the real server: 200 slow-loris connections
(headers or body trickled a byte at a time) and idle ones are closed by the
configured timeouts, while well-behaved clients keep being answered.

The p99 comparison (loaded against unloaded) is a bench:
``python -m bench.slow_clients``; here only behaviour is asserted."""

from __future__ import annotations

import json
import textwrap
import threading
import time

import pytest
import requests

from tests.support.server_process import ServerProcess
from tests.support.slow_client import Slow

REQUEST_TIMEOUT_S = 2.0
CHANNEL_TIMEOUT_S = 4.0

CONFIG = textwrap.dedent(f"""
    name: echo
    worker_num: 8
    http: {{request_timeout_s: {REQUEST_TIMEOUT_S}, channel_timeout_s: {CHANNEL_TIMEOUT_S}}}
    op:
      echo:
        class: tests.support.engine_fakes:EchoTextOp
        local_service_conf: {{max_batch_size: 8, max_queue_delay: 1, concurrency: 2}}
""")

BODY = json.dumps({"key": ["text"], "value": ["slow"]}).encode()
HEAD = b"POST /echo/prediction HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"


def echo(url: str, text: str) -> int:
    body = {"key": ["text"], "value": [text]}
    return requests.post(url + "/echo/prediction", json=body, timeout=30).status_code


@pytest.fixture
def server(tmp_path):
    path = tmp_path / "echo.yml"
    path.write_text(CONFIG)
    srv = ServerProcess(str(path))
    yield srv
    srv.stop()


def test_slow_loris_and_idle_connections_are_closed_while_others_are_served(server):
    assert echo(server.url, "warm") == 200
    headers = [Slow(server.port, HEAD + b"X-Slow: " + b"a" * 400 + b"\r\n\r\n") for _ in range(100)]
    length = b"Content-Length: %d\r\n\r\n" % len(BODY)
    bodies = [Slow(server.port, HEAD + length + BODY, first=len(HEAD) + len(length)) for _ in range(100)]
    idle = [Slow(server.port, b"", first=0) for _ in range(20)]
    slow = headers + bodies

    statuses: list[int] = []
    done = threading.Event()

    def client(i: int) -> None:
        n = 0
        while not done.is_set():
            statuses.append(echo(server.url, f"c{i}-{n}"))
            n += 1

    clients = [threading.Thread(target=client, args=(i,)) for i in range(4)]
    for c in clients:
        c.start()
    end = time.monotonic() + CHANNEL_TIMEOUT_S + 6
    while time.monotonic() < end and any(s.closed_after is None for s in slow + idle):
        for s in slow + idle:
            s.send()
            s.poll()
        time.sleep(0.2)
    done.set()
    for c in clients:
        c.join(30)

    assert statuses and set(statuses) == {200}, statuses
    never = [s for s in slow + idle if s.closed_after is None]
    assert not never, f"{len(never)} connections still open"
    # closed by the request timeout, not before it, and none got an answer
    assert all(REQUEST_TIMEOUT_S <= s.closed_after <= REQUEST_TIMEOUT_S + 4 for s in slow), sorted(
        round(s.closed_after, 2) for s in slow
    )
    assert all(s.sent < len(s.data) for s in slow) and not any(s.answered for s in slow)
    assert all(CHANNEL_TIMEOUT_S <= s.closed_after <= CHANNEL_TIMEOUT_S + 4 for s in idle)
    assert echo(server.url, "after") == 200
