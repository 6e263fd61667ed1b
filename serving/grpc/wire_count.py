"""What parsing a protobuf message would build, counted on its bytes before it is parsed
(as a JSON body's are, :mod:`serving.service.json_budget`): upb builds an object per
sub-message and repeated element, so an 8 MB message of empty inputs cost 1.3 GB before
any count was checked. The walk stops as soon as the count passes its limit (413).

Each counts one: a sub-message (a map entry whose value is a message, two); an element of
a repeated field (a packed run's elements: its length / the width, or for varints its
bytes below 0x80); an unknown field (or a known one sent with another wire type); a
singular field sent again in the same message, so the walk takes at most about
``limit x (fields of a message type + 1)`` steps. Nothing is built: lengths are skipped
and sub-messages walked in place. Groups, field number 0, unknown wire types and truncated
data are malformed (:class:`WireError`, a 400)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import DecodeError

from serving.errors import BadRequest, PayloadTooLarge

VARINT, FIXED64, LEN, START_GROUP, END_GROUP, FIXED32 = range(6)
MAX_VARINT_BYTES = 10
MAX_TAG = (1 << 32) - 1  # a tag is a 32-bit varint: field numbers up to 2^29 - 1
#: sub-messages nest this deep at most (these protocols nest 4; protobuf's own parser stops at 100)
MAX_DEPTH = 32
MAX_WHY_CHARS = 120  # of the parser's reason, quoted in the answer
_LOW_BYTES = bytes(range(0x80))  # deleted by translate: what is left are a varint run's non-final bytes

_FIXED64_TYPES = {FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FIXED64, FieldDescriptor.TYPE_SFIXED64}
_FIXED32_TYPES = {FieldDescriptor.TYPE_FLOAT, FieldDescriptor.TYPE_FIXED32, FieldDescriptor.TYPE_SFIXED32}
_LEN_TYPES = {FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_BYTES, FieldDescriptor.TYPE_MESSAGE}
_WIDTH = {VARINT: 0, FIXED64: 8, FIXED32: 4}  # a packed element's width (0: a varint)


class WireError(ValueError):
    """The bytes are not a protobuf message (the parser would refuse them too)."""


@dataclass
class FieldRule:
    name: str
    wire: int  # the wire type of the field's own encoding
    repeated: bool
    message: MessageRule | None = None  # a sub-message's fields

    @property
    def packable(self) -> bool:
        return self.repeated and self.wire in _WIDTH


@dataclass
class MessageRule:
    name: str
    fields: dict[int, FieldRule] = field(default_factory=dict)
    # a map entry's value field, when it is a message: counted with the entry, sent or not
    prepaid: int | None = None

    @property
    def cost(self) -> int:
        """What one of these counts as a sub-message."""
        return 1 if self.prepaid is None else 2


def _wire_type(fd: FieldDescriptor) -> int:
    if fd.type in _LEN_TYPES:
        return LEN
    if fd.type in _FIXED64_TYPES:
        return FIXED64
    if fd.type in _FIXED32_TYPES:
        return FIXED32
    if fd.type == FieldDescriptor.TYPE_GROUP:
        return START_GROUP
    return VARINT


def _rule(descriptor: Descriptor, rules: dict[str, MessageRule]) -> MessageRule:
    """``descriptor``'s rule, each message type made once (a recursive type refers to itself)."""
    found = rules.get(descriptor.full_name)
    if found is not None:
        return found
    rule = rules[descriptor.full_name] = MessageRule(descriptor.full_name)
    for fd in descriptor.fields:
        sub = (
            _rule(fd.message_type, rules)
            if fd.message_type is not None and fd.type == FieldDescriptor.TYPE_MESSAGE
            else None
        )
        rule.fields[fd.number] = FieldRule(fd.name, _wire_type(fd), fd.is_repeated, sub)
    value = descriptor.fields_by_name.get("value")
    if descriptor.GetOptions().map_entry and value is not None and value.type == FieldDescriptor.TYPE_MESSAGE:
        rule.prepaid = value.number
    return rule


class _Budget:
    """What is left of the count; 413 once it runs out."""

    def __init__(self, limit: int):
        self.limit = limit
        self.left = limit

    def take(self, n: int) -> None:
        self.left -= n
        if self.left < 0:
            raise PayloadTooLarge(
                f"the request message holds over {self.limit} values (sub-messages, repeated elements, "
                "unknown fields); the limit follows max_inputs_per_request, as a JSON body's does"
            )


def _varint(data: bytes, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while pos < end:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
        if shift >= 7 * MAX_VARINT_BYTES:
            raise WireError("a varint longer than 10 bytes")
    raise WireError("truncated varint")


def _packed_count(data: bytes, start: int, end: int, width: int, budget: _Budget) -> int:
    """Elements of a packed run of ``width`` bytes each (0: varints), without reading a long one."""
    length = end - start
    if width:
        if length % width:
            raise WireError(f"a packed run of {length} bytes is not a multiple of {width}")
        return length // width
    if length > MAX_VARINT_BYTES * (budget.left + 1):
        return budget.left + 1  # more elements than are left, whatever the bytes: over the limit
    if length and data[end - 1] >= 0x80:
        raise WireError("truncated varint in a packed run")
    return length - len(data[start:end].translate(None, _LOW_BYTES))


class WireCount:
    """The walk for one message type (its nested types included)."""

    def __init__(self, descriptor: Descriptor):
        self.rule = _rule(descriptor, {})

    def check(self, data: bytes, limit: int) -> int:
        """What parsing ``data`` builds, counted; PayloadTooLarge once over ``limit``, WireError
        for bytes that are not a message."""
        budget = _Budget(limit)
        self._walk(data, 0, len(data), self.rule, budget, 0)
        return limit - budget.left

    def _walk(self, data: bytes, pos: int, end: int, rule: MessageRule, budget: _Budget, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise WireError(f"sub-messages nested over {MAX_DEPTH} deep")
        seen: set[int] = set()  # singular fields met once in this message (free the first time)
        while pos < end:
            tag, pos = _varint(data, pos, end)
            number, wire = tag >> 3, tag & 7
            if number == 0 or tag > MAX_TAG:
                raise WireError(f"field number {number}")
            pos, payload = self._skip(data, pos, end, wire)
            known: FieldRule | None = rule.fields.get(number)
            if known is None or not (wire == known.wire or (wire == LEN and known.packable)):
                budget.take(1)  # unknown (or sent as another type): upb keeps it as unknown bytes
            elif known.message is not None:
                budget.take(0 if number == rule.prepaid and number not in seen else known.message.cost)
                seen.add(number)
                self._walk(data, payload, pos, known.message, budget, depth + 1)
            elif known.repeated:
                packed = wire == LEN and known.wire != LEN
                budget.take(_packed_count(data, payload, pos, _WIDTH[known.wire], budget) if packed else 1)
            elif number in seen:
                budget.take(1)
            else:
                seen.add(number)

    @staticmethod
    def _skip(data: bytes, pos: int, end: int, wire: int) -> tuple[int, int]:
        """(where the field ends, where its payload starts) for a field of ``wire`` type at ``pos``."""
        start = pos
        if wire == VARINT:
            _, pos = _varint(data, pos, end)
        elif wire == FIXED64:
            pos += 8
        elif wire == FIXED32:
            pos += 4
        elif wire == LEN:
            length, start = _varint(data, pos, end)
            pos = start + length
        elif wire in (START_GROUP, END_GROUP):
            raise WireError("a group (wire types 3 and 4 are not used by these protocols)")
        else:
            raise WireError(f"wire type {wire}")
        if pos > end:
            raise WireError("truncated field")
        return pos, start


class RequestMessage:
    """A method's request message: counted on the wire, then parsed (400 for bytes that are not one)."""

    def __init__(self, message_class: Any):
        self.message_class = message_class
        self.name = message_class.DESCRIPTOR.full_name
        self._count = WireCount(message_class.DESCRIPTOR)

    def parse(self, data: bytes, max_values: int) -> Any:
        """The message in ``data``: 413 when it holds over ``max_values`` values, else 400 unless it parses."""
        try:
            self._count.check(data, max_values)
            return self.message_class.FromString(data)
        except (DecodeError, WireError) as exc:
            why = str(exc)[:MAX_WHY_CHARS] or "undecodable"
            raise BadRequest(f"the request is not a valid {self.name} message ({why})") from None
