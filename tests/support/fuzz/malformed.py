"""Image bytes whose header promises more than the server should decode."""

from __future__ import annotations

import struct
import zlib

# samples per pixel of each PNG colour type (gray, RGB, palette, gray + alpha, RGBA)
PNG_CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def png_with_header(
    w: int, h: int, *, bitdepth: int = 8, color: int = 2, rows: int | None = 1, level: int = 9
) -> bytes:
    """A PNG whose IHDR says ``w`` x ``h``; only ``rows`` rows of (zero) data follow
    (``None``: all of them, compressed at zlib ``level`` -- 9: a real decompression
    bomb; 0: stored, a body as large as the pixels)."""
    row = b"\x00" + b"\x00" * ((w * bitdepth * PNG_CHANNELS[color] + 7) // 8)
    comp = zlib.compressobj(level)
    idat = b"".join(comp.compress(row) for _ in range(h if rows is None else min(rows, h))) + comp.flush()
    ihdr = struct.pack(">IIBBBBB", w, h, bitdepth, color, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", ihdr) + _png_chunk(b"IDAT", idat) + _png_chunk(b"IEND", b"")


def hdr_bomb(w: int, h: int) -> bytes:
    """A Radiance HDR (a format cv2 decodes and PIL cannot read) of ``w`` x ``h`` run-length-encoded pixels."""
    head = b"#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n" + f"-Y {h} +X {w}\n".encode()
    line = bytearray(b"\x02\x02" + struct.pack(">H", w))
    for comp in range(4):
        left = w
        while left:
            n = min(127, left)
            line += bytes([128 + n, 128 if comp == 3 else 1])
            left -= n
    return head + bytes(line) * h
