"""A slow-loris client: one connection that sends its request a byte per
tick and notes when the server closed it (tests and bench/slow_clients.py)."""

from __future__ import annotations

import select
import socket
import time


class Slow:
    """One connection that sends ``data`` a byte per tick; notes when the server closed it."""

    def __init__(self, port: int, data: bytes, first: int = 1):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.sock.setblocking(False)
        self.data, self.sent = data, 0
        self.began = time.monotonic()
        self.closed_after: float | None = None
        self.answered = b""
        self.send(first)

    def send(self, n: int = 1) -> None:
        if self.closed_after is not None or self.sent >= len(self.data):
            return
        try:
            self.sent += self.sock.send(self.data[self.sent : self.sent + n])
        except OSError:
            self.close_seen()

    def poll(self) -> None:
        if self.closed_after is not None:
            return
        if select.select([self.sock], [], [], 0)[0]:
            try:
                chunk = self.sock.recv(4096)
            except OSError:
                chunk = b""
            if chunk:
                self.answered += chunk
            else:
                self.close_seen()

    def close_seen(self) -> None:
        self.closed_after = time.monotonic() - self.began
        self.sock.close()
