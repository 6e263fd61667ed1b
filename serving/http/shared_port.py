"""The port front processes share: each front listens on its own ``SO_REUSEPORT`` socket,
so the kernel spreads connections over them (one inherited socket let whichever front woke
first take a whole burst). The engine holds a bound, never listening, socket: it keeps
the port while fronts come and go and takes no connections itself."""

from __future__ import annotations

import socket

BACKLOG = 2048


def reserve(host: str, port: int, *, shared: bool = True) -> socket.socket:
    """A socket bound to ``host:port``, not listening (``getsockname()`` says which port)."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if shared:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(address)
    except BaseException:
        sock.close()
        raise
    return sock


def listen_on(host: str, port: int) -> socket.socket:
    """One front's listening socket on the shared ``host:port``."""
    sock = reserve(host, port)
    sock.listen(BACKLOG)
    return sock


def listen_alone(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` that no other socket may share (one front in the
    server's own process): a second server started on the same port fails instead of taking half."""
    sock = reserve(host, port, shared=False)
    sock.listen(BACKLOG)
    return sock
