"""The Open Inference Protocol's side of a request, shared by ``v2`` (HTTP) and
``v2-grpc``: one ``BYTES`` input tensor of shape ``[N]`` named after the inputs'
kind (``"image"``: each element an encoded image file, no base64; ``"text"``:
UTF-8), the ``"result"`` output (element i: input i's result as JSON text), and
the request ``parameters`` Triton defines (``priority``, ``timeout``).

BYTES elements travel as Triton lays them out in binary data: each one a 4-byte
little-endian length, then its bytes."""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from typing import Any

RESULT = "result"
DATATYPE = "BYTES"
_LENGTH = struct.Struct("<I")


def input_tensor(inputs: Sequence[tuple]) -> tuple[str, list[bytes]]:
    """The input tensor's name and elements; ValueError for mixed or no inputs (one tensor, one kind)."""
    kinds = {kind for kind, _ in inputs}
    if len(kinds) != 1:
        raise ValueError("a v2 request carries inputs of one kind (a pipeline takes images or texts)")
    (kind,) = kinds
    if kind == "image":
        return kind, [bytes(value) for _, value in inputs]
    return kind, [str(value).encode("utf-8") for _, value in inputs]


def pack_bytes(elements: Sequence[bytes]) -> bytes:
    """BYTES elements as binary data: a 4-byte little-endian length before each."""
    return b"".join(_LENGTH.pack(len(e)) + e for e in elements)


def unpack_bytes(data: bytes) -> list[bytes]:
    """The BYTES elements of binary data; ValueError when a length runs past its end."""
    out, pos, view = [], 0, memoryview(data)
    while pos < len(data):
        if pos + _LENGTH.size > len(data):
            raise ValueError(f"BYTES data cut inside an element's length at byte {pos}")
        (size,) = _LENGTH.unpack_from(data, pos)
        pos += _LENGTH.size
        if pos + size > len(data):
            raise ValueError(f"BYTES element of {size} bytes runs past the data's end ({len(data)} bytes)")
        out.append(bytes(view[pos : pos + size]))
        pos += size
    return out


def parameters(priority: int | None, timeout_ms: int | None) -> dict[str, int]:
    """Triton's request parameters: ``priority`` as given (1 is the highest, 0 the default)
    and ``timeout`` in microseconds."""
    found = {}
    if priority is not None:
        found["priority"] = int(priority)
    if timeout_ms is not None:
        found["timeout"] = int(timeout_ms) * 1000
    return found


def results(elements: Sequence[bytes], rows: int) -> list[Any]:
    """The ``"result"`` elements as Python objects (the JSON each holds); ValueError unless one per input row."""
    if len(elements) != rows:
        raise ValueError(f"'{RESULT}' has {len(elements)} elements for {rows} inputs")
    return [json.loads(e) for e in elements]
