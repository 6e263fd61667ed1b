"""The binary form of tensors (HTTP's binary tensor extension, gRPC's raw contents): BYTES
as each element's 4-byte little-endian length then its bytes, numbers (FP32, ...) little-endian."""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Any

import numpy as np

from serving.errors import BadRequest

_LENGTH = struct.Struct("<I")


def serialize_bytes(elements: Iterable[bytes]) -> bytes:
    return b"".join(_LENGTH.pack(len(e)) + e for e in elements)


def deserialize_bytes(data: bytes | memoryview, count: int, where: str) -> list[bytes]:
    """Exactly ``count`` elements filling ``data``, else 400; costs ``count`` steps whatever
    the lengths say (each one is checked against what is left before it is used)."""
    items: list[bytes] = []
    pos, end = 0, len(data)
    for i in range(count):
        if end - pos < _LENGTH.size:
            raise BadRequest(f"{where}: binary data ends at element {i} of {count} (shape)")
        (size,) = _LENGTH.unpack_from(data, pos)
        pos += _LENGTH.size
        if size > end - pos:
            raise BadRequest(f"{where}: element {i} claims {size} bytes, {end - pos} are left")
        items.append(bytes(data[pos : pos + size]))
        pos += size
    if pos != end:
        raise BadRequest(f"{where}: {end - pos} bytes of binary data left after the {count} elements of its shape")
    return items


def deserialize_numbers(data: bytes | memoryview, count: int, dtype: str, where: str) -> list[Any]:
    """Exactly ``count`` numbers of ``dtype`` (a numpy dtype string, little-endian) filling ``data``, else 400."""
    size = count * np.dtype(dtype).itemsize
    if len(data) != size:
        raise BadRequest(f"{where}: {len(data)} bytes of binary data for {count} elements ({size} bytes)")
    return np.frombuffer(data, dtype=dtype).tolist()


def serialize_fp32(values: Iterable[float]) -> bytes:
    return np.asarray(list(values), dtype="<f4").tobytes()
