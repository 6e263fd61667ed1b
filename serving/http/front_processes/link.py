"""The link between a front process and the engine process (``http.front_workers``): one
authenticated Unix-socket connection per front, pickled tuples in frames (:class:`Wire`).
Both ends are this server's own processes, started with a fresh key, so unpickling is no
wider trust than running them.

Front -> engine (``rid``: the front's request number; a front first sends ``(index,)`` and
gets a :class:`FrontHello`):

* ``(SUBMIT, rid, name, values, options)`` (``options``: ``PipelineRepository.submit``'s):
  ``(REFUSED, rid, error)`` if it raises, else (several values only) ``(ADMITTED, rid)``,
  and per value ``(DONE, rid, index, ok, result_or_error, version, (timeline, created,
  finished_at))``, in any order relative to ``ADMITTED``;
* ``(CANCEL, rid, index, error)``: the front gave up on a value (client gone, deadline);
* ``(CALL, rid, method, args, kwargs)``: a repository method (``hub.CALLS``), answered
  ``(REPLY, rid, ok, value_or_error)``.

Engine -> front, unasked: ``(GENERATION, FrontSnapshot)`` after each reload."""

from __future__ import annotations

import os
import pickle
import socket
import struct
import threading
from collections import deque
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from serving.config.file_set import RepositoryConfig

SUBMIT, ADMITTED, REFUSED, DONE, CANCEL = "submit", "admitted", "refused", "done", "cancel"
CALL, REPLY, GENERATION = "call", "reply", "generation"
MAX_FRAME_MESSAGES = 512  # a frame's messages, so one huge backlog is not one huge join
_LENGTH = struct.Struct("<I")  # each message's size in a frame


@dataclass(frozen=True)
class FrontSnapshot:
    """What a front process serves from: the engine's generation number and its parsed config."""

    generation: int
    config: RepositoryConfig


@dataclass(frozen=True)
class FrontHello:
    """The engine's first message to a front process."""

    snapshot: FrontSnapshot
    auth_token: str | None
    admin_token: str | None
    index: int  # this front's number, from 0
    count: int  # front processes in all (each holds its share of the server's byte budgets)


class Wire:
    """One end of a link: whole messages, sent by any thread, received by one.

    A sender pickles its message (what cannot be pickled fails in the sender) and queues
    it; whichever sender finds the link free sends everything queued as one frame. Alone,
    a sender sends at once; under load one system call carries many messages, where a
    lock around each send had the senders queue up behind each other."""

    def __init__(self, conn: Connection):
        self.conn = conn
        self._out: deque[bytes] = deque()
        self._sending = threading.Lock()
        self._closed = False  # no more sends: the other end is gone, or we closed
        self._closing = threading.Lock()
        self._ended = False  # close() ran

    def send(self, message: Any, *, later: bool = False) -> None:
        """Send ``message`` (now, or with the frame another thread is sending; ``later``: with
        the next :meth:`flush` or send); OSError once the link is closed."""
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        if self._closed:
            raise OSError("the link is closed")
        self._out.append(data)
        if not later:
            self.flush()

    def flush(self) -> None:
        """Send what is queued, as one frame (OSError once the link is closed)."""
        out = self._out
        while out and self._sending.acquire(blocking=False):
            try:
                parts: list[bytes] = []  # (size, message) pairs
                while out and len(parts) < 2 * MAX_FRAME_MESSAGES:
                    data = out.popleft()
                    parts += (_LENGTH.pack(len(data)), data)
                self.conn.send_bytes(b"".join(parts))
            except (OSError, ValueError) as exc:  # the other end is gone, or we closed
                self._closed = True
                raise OSError("the link is closed") from exc
            finally:
                self._sending.release()

    def recv(self) -> list[Any]:
        """The messages of the next frame; EOFError or OSError once the other end is gone."""
        frame = memoryview(self.conn.recv_bytes())
        messages: list[Any] = []
        at = 0
        while at < len(frame):
            (size,) = _LENGTH.unpack_from(frame, at)
            at += _LENGTH.size
            messages.append(pickle.loads(frame[at : at + size]))
            at += size
        return messages

    def close(self) -> None:
        """End the link both ways, so both ends' blocked readers see it (closing alone would
        leave them waiting). Once: a second close could close a file that reused the number."""
        with self._closing:
            if self._ended:
                return
            self._ended = True
        self._closed = True
        try:
            with socket.socket(fileno=os.dup(self.conn.fileno())) as sock:
                sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # closed already
        self.conn.close()
