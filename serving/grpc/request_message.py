"""One method's request message made of the bytes a call carried: counted on the
wire first (:mod:`serving.grpc.wire_count`), so a message that would make the
parser build more than a request may hold is refused (413) before any object is
built for it, then parsed. Bytes that are not such a message are bad input (400),
not a server fault."""

from __future__ import annotations

from typing import Any

from google.protobuf.message import DecodeError

from serving.errors import BadRequest
from serving.grpc.wire_count import WireCount, WireError

MAX_WHY_CHARS = 120  # of the parser's reason, quoted in the answer


class RequestMessage:
    """``refuse``: repeated fields refused when they hold an element (RefusedField, for the caller to answer)."""

    def __init__(self, message_class: Any, refuse: frozenset[str] = frozenset()):
        self.message_class = message_class
        self.name = message_class.DESCRIPTOR.full_name
        self._count = WireCount(message_class.DESCRIPTOR, refuse)

    def parse(self, data: bytes, max_values: int) -> Any:
        """The message in ``data``: 413 when it holds over ``max_values`` values, else 400 unless it parses."""
        try:
            self._count.check(data, max_values)
            return self.message_class.FromString(data)
        except (DecodeError, WireError) as exc:
            why = str(exc)[:MAX_WHY_CHARS] or "undecodable"
            raise BadRequest(f"the request is not a valid {self.name} message ({why})") from None
