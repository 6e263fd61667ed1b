"""The HTTP front's limits on slow and idle clients (``http:`` in the config),
and the channel that applies them and :mod:`serving.http.front_gate`'s checks.

waitress reads requests in its event loop and hands a worker thread only a
complete request, so a slow client never holds a thread; it holds one of
``connection_limit`` connections. waitress closes a connection once it has
been idle for ``channel_timeout``, but a slow-loris client that trickles a
byte every few seconds is never idle. So batchline adds two rules: a
request's headers must all arrive within ``header_timeout_s`` of its first
byte, and the whole request (headers and body) within ``request_timeout_s``,
else its connection is closed. All rules are checked every
``cleanup_interval`` seconds, a fraction of the shortest timeout.
"""

from __future__ import annotations

import math
import socket
import time
from typing import Any

from waitress.channel import HTTPChannel
from waitress.server import BaseWSGIServer

from serving.config.schema import HttpConf
from serving.http.front_gate import FrontGate, GatedParser, waitress_body_limit
from serving.service.body_budget import BodyBudget


class TimedChannel(HTTPChannel):
    """A waitress channel that notes when the request it is reading began and
    parses with :class:`GatedParser` (``gate`` and the body ``budget``: set per
    server by :func:`guard_front`).

    A request the gate refused is answered at once, and the connection closed;
    but a client still sending the body would get a reset instead of the
    answer. So after the answer the channel half-closes and keeps reading and
    dropping input ("lingering", as nginx does) until the client closes or the
    request's deadline passes (:func:`overdue`). Nothing of it is buffered."""

    request: Any = None  # waitress's: the request being read (a GatedParser), or None
    request_began = 0.0
    gate = FrontGate()
    budget: BodyBudget | None = None  # None: bodies are not counted
    discarding = False  # a refused request: every later byte of this connection is dropped
    lingering = False  # the answer is out and our side shut: reading only to drop

    def parser_class(self, adj: Any) -> GatedParser:
        # waitress calls self.parser_class(self.adj) for each request: a method, to hand it the gate
        return GatedParser(adj, self.gate, on_refused=self._refused, budget=self.budget)

    def _refused(self) -> None:
        self.discarding = True

    def received(self, data: bytes) -> bool:
        if self.discarding:
            return True
        reading = self.request
        done = bool(super().received(data))
        if self.request is not None and self.request is not reading:
            self.request_began = time.time()  # a new request's first bytes
        return done

    def handle_close(self) -> None:
        answered = not self.requests and not self.total_outbufs_len
        if not self.discarding or self.lingering or not answered or not self.connected:
            super().handle_close()
            return
        try:
            self.socket.shutdown(socket.SHUT_WR)  # the client reads the answer, then end of stream
        except OSError:
            super().handle_close()
            return
        self.lingering = True
        self.will_close = False

    def del_channel(self, map: Any = None) -> None:
        # waitress closes the requests it queued (HTTPChannel.service), never the one it was
        # still reading: a client gone mid-body would keep that body's claim on the budget
        partial = self.request
        if partial is not None:
            partial.close()
            # the parser holds this channel (on_refused): without the cut, the pair and the
            # headers read so far wait for the cycle collector, which an idle server never runs
            self.request = None
        super().del_channel(map)

    def reading_since(self) -> float | None:
        """When the request still being read began (None: none is)."""
        return self.request_began if self.request is not None else None

    def headers_since(self) -> float | None:
        """When the request whose headers are still being read began (None: none is)."""
        request = self.request
        return self.request_began if request is not None and not request.headers_finished else None


def cleanup_interval(http: HttpConf) -> float:
    """How often waitress checks its connections: often enough that a timeout
    is honoured within a quarter of it, at most every 0.5 s."""
    return max(0.5, min(http.channel_timeout_s, http.request_timeout_s, http.header_timeout_s) / 4)


def waitress_options(http: HttpConf, threads: int) -> dict[str, Any]:
    """The ``create_server`` keywords of ``http``."""
    return {
        "channel_timeout": http.channel_timeout_s,
        "cleanup_interval": cleanup_interval(http),
        "connection_limit": http.connection_limit or threads + 128,
    }


def overdue(channel: Any, now: float, request_timeout_s: float, header_timeout_s: float = math.inf) -> bool:
    """Whether ``channel`` is still reading a request begun over ``request_timeout_s``
    ago, or its headers over ``header_timeout_s`` ago (with nothing of its own in
    service, whose answer closing would cut), or lingers after a refusal past
    that request's deadline."""
    if not isinstance(channel, TimedChannel):
        return False
    if channel.lingering:  # a refused request: its body is dropped until the request deadline
        return now - channel.request_began > request_timeout_s
    if channel.requests:
        return False
    began, headers_began = channel.reading_since(), channel.headers_since()
    return (began is not None and now - began > request_timeout_s) or (
        headers_began is not None and now - headers_began > header_timeout_s
    )


def _servers(server: Any) -> list[Any]:
    """The waitress servers behind what ``create_server`` returned (one per listening socket)."""
    if isinstance(server, BaseWSGIServer):
        return [server]
    return [d for d in getattr(server, "map", {}).values() if isinstance(d, BaseWSGIServer)]


def guard_front(server: Any, http: HttpConf, gate: FrontGate, budget: BodyBudget | None = None) -> None:
    """Make ``server`` (what waitress's ``create_server`` returned) read with a
    :class:`TimedChannel` checking ``gate`` and claiming bodies from ``budget``
    (one for all its listening sockets), and close connections whose request
    or headers are overdue."""
    for one in _servers(server):
        one.channel_class = type("GatedChannel", (TimedChannel,), {"gate": gate, "budget": budget})
        idle_rule = one.maintenance

        def maintenance(now: float, one: Any = one, idle_rule: Any = idle_rule) -> None:
            idle_rule(now)
            for channel in list(one.active_channels.values()):
                if overdue(channel, now, http.request_timeout_s, http.header_timeout_s):
                    channel.will_close = True

        one.maintenance = maintenance


def set_body_limit(server: Any, max_body_size: int) -> None:
    """Have waitress refuse bodies over ``max_body_size`` bytes from now on
    (its settings object is shared with every connection, which reads it per request)."""
    for one in _servers(server):
        one.adj.max_request_body_size = waitress_body_limit(max_body_size)
