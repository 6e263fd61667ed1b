"""The HTTP front's limits on slow and idle clients (``http:`` in the config).

waitress reads requests in its event loop and hands a worker thread only a
complete request, so a slow client never holds a thread; it holds one of
``connection_limit`` connections. waitress closes a connection once it has
been idle for ``channel_timeout``, but a slow-loris client that trickles a
byte every few seconds is never idle. So batchline adds a second rule: a
request must arrive whole (headers and body) within ``request_timeout_s`` of
its first byte, else its connection is closed. Both rules are checked every
``cleanup_interval`` seconds, a fraction of the shorter timeout.
"""

from __future__ import annotations

import time
from typing import Any

from waitress.channel import HTTPChannel
from waitress.server import BaseWSGIServer

from serving.config.schema import HttpConf


class TimedChannel(HTTPChannel):
    """A waitress channel that notes when the request it is reading began."""

    request_began = 0.0

    def received(self, data: bytes) -> bool:
        if data and self.request is None:
            self.request_began = time.time()
        return bool(super().received(data))

    def reading_since(self) -> float | None:
        """When the request still being read began (None: none is)."""
        return self.request_began if self.request is not None else None


def cleanup_interval(http: HttpConf) -> float:
    """How often waitress checks its connections: often enough that a timeout
    is honoured within a quarter of it, at most every 0.5 s."""
    return max(0.5, min(http.channel_timeout_s, http.request_timeout_s) / 4)


def waitress_options(http: HttpConf, threads: int) -> dict[str, Any]:
    """The ``create_server`` keywords of ``http``."""
    return {
        "channel_timeout": http.channel_timeout_s,
        "cleanup_interval": cleanup_interval(http),
        "connection_limit": http.connection_limit or threads + 128,
    }


def overdue(channel: Any, now: float, request_timeout_s: float) -> bool:
    """Whether ``channel`` is still reading a request begun over ``request_timeout_s`` ago
    (with nothing of its own in service, whose answer closing would cut)."""
    began = channel.reading_since() if isinstance(channel, TimedChannel) else None
    return began is not None and not channel.requests and now - began > request_timeout_s


def limit_slow_requests(server: Any, request_timeout_s: float) -> None:
    """Make ``server`` (what waitress's ``create_server`` returned) read with
    :class:`TimedChannel` and close connections whose request is overdue."""
    servers = (
        [server]
        if isinstance(server, BaseWSGIServer)
        else [d for d in getattr(server, "map", {}).values() if isinstance(d, BaseWSGIServer)]
    )
    for one in servers:
        one.channel_class = TimedChannel
        idle_rule = one.maintenance

        def maintenance(now: float, one: Any = one, idle_rule: Any = idle_rule) -> None:
            idle_rule(now)
            for channel in list(one.active_channels.values()):
                if overdue(channel, now, request_timeout_s):
                    channel.will_close = True

        one.maintenance = maintenance
