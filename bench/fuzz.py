"""Malformed-request fuzz against a real ``batchline serve`` process.

    python bench/fuzz.py --count 1000                      # fake-op image config (model-free)
    python bench/fuzz.py --config configs/ocr.yml --count 1000
    python bench/fuzz.py --url http://127.0.0.1:9999 --count 1000   # a server you started

A deterministic generator (``--seed``) cycles through categories of bad input
on both endpoints -- random bytes as images, truncated PNG/JPEG, 1x1 and
zero-size images, decompression bombs, bodies over ``max_body_size``, wrong
JSON types, missing/extra keys, non-UTF-8, huge key lists, bad options,
unknown pipelines and methods, multipart and raw ``image/*`` bodies. Each
request must get a 4xx with a JSON error message (a few lenient categories may
also answer 200; see ``LENIENT``); never a 5xx, never a dropped connection.
Afterwards ``/health/ready`` must be 200 and a valid request must answer
correctly.

Categories ``deep_json``, ``huge_int``, ``option_digits``, ``pixel_bomb_pil_bypass``
and ``pixel_bomb_hdr`` reproduce server bugs this fuzz found (once 500s or full
decodes; fixed, see docs/RELIABILITY.md "Bugs found and fixed"); they are ordinary
categories now and must get a 4xx like the rest. Exit code: 0 when every request
behaved, 1 otherwise.
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import random
import struct
import sys
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import requests  # noqa: E402

from bench.reliability_common import (  # noqa: E402
    FAKE,
    check_alive,
    peak_rss_bytes,
    pipeline_info,
    rss_bytes,
    start_server,
    valid_image,
)

# the fake-op server this bench starts by default (limits small enough to probe cheaply)
FAKE_SERVER = {"max_body_size": 4 << 20, "max_inputs_per_request": 8, "max_image_pixels": 4_000_000}
LENIENT = {"mutated_image", "extra_keys_paddle"}  # may answer 200: the input is still a decodable image


@dataclass
class Case:
    category: str
    method: str
    path: str
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    expect: tuple[int, ...] = ()  # exact statuses allowed; () = any 4xx


@dataclass
class Limits:
    max_body_size: int = 4 << 20  # FAKE_SERVER's
    max_inputs: int = 8
    max_image_pixels: int = 4_000_000
    priority_levels: int = 1


# ---------------------------------------------------------------------------
# image material
# ---------------------------------------------------------------------------
def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def png_with_header(w: int, h: int, *, bitdepth: int = 8, color: int = 2, rows: int | None = 1) -> bytes:
    """A PNG whose IHDR says ``w`` x ``h``; only ``rows`` rows of (zero) data follow
    (``None``: all of them, compressed -- a real decompression bomb)."""
    row = b"\x00" + b"\x00" * ((w * bitdepth * (3 if color == 2 else 1) + 7) // 8)
    comp = zlib.compressobj(9)
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


class Images:
    """Valid encodings to truncate or mutate, built once."""

    def __init__(self, rng: random.Random):
        import cv2
        import numpy as np

        nrng = np.random.default_rng(rng.randrange(1 << 30))
        noisy = nrng.integers(0, 256, size=(60, 90, 3), dtype=np.uint8)
        smooth = np.tile(np.linspace(0, 255, 90, dtype=np.uint8), (60, 1))[:, :, None].repeat(3, 2)
        self.valid: list[tuple[str, bytes]] = []
        for img in (noisy, smooth):
            for ext in (".png", ".jpg", ".webp", ".bmp", ".gif", ".tiff"):
                ok, buf = cv2.imencode(ext, img)
                if ok:
                    self.valid.append((ext, buf.tobytes()))
        self.tiny = [
            cv2.imencode(ext, np.zeros(shape, np.uint8))[1].tobytes()
            for ext in (".png", ".jpg", ".bmp")
            for shape in ((1, 1, 3), (1, 40, 3), (40, 1, 3), (1, 1))
        ]
        self.tiny += [png_with_header(0, 10), png_with_header(10, 0), png_with_header(0, 0)]


# ---------------------------------------------------------------------------
# the generator
# ---------------------------------------------------------------------------
class Generator:
    """Deterministic malformed requests for pipeline ``name`` (input kind image)."""

    def __init__(self, name: str, limits: Limits, seed: int = 0, heavy: bool = True):
        self.name = name
        self.limits = limits
        self.rng = random.Random(seed)
        self.images = Images(self.rng)
        self.builders: list[tuple[str, Callable[[], Case], int]] = [
            (n[len("c_") :], getattr(self, n), w) for n, w in self.WEIGHTS.items() if heavy or n not in self.HEAVY
        ]

    # category -> weight (relative frequency)
    WEIGHTS = {
        "c_random_bytes_paddle": 4,
        "c_random_bytes_native_json": 3,
        "c_random_bytes_multipart": 3,
        "c_random_bytes_raw": 3,
        "c_truncated_image": 6,
        "c_tiny_image": 4,
        "c_pixel_bomb_header": 4,
        "c_pixel_bomb_pil_bypass": 1,
        "c_pixel_bomb_hdr": 1,
        "c_body_over_limit": 3,
        "c_body_over_limit_raw": 2,
        "c_wrong_json_types": 6,
        "c_missing_keys": 3,
        "c_length_mismatch": 2,
        "c_extra_keys_paddle": 2,
        "c_non_utf8": 3,
        "c_invalid_json": 4,
        "c_huge_key_list": 2,
        "c_wrong_key_names": 3,
        "c_bad_options": 4,
        "c_bad_base64": 4,
        "c_unknown_pipeline": 3,
        "c_wrong_method": 2,
        "c_native_json_shape": 5,
        "c_multipart_shape": 4,
        "c_too_many_inputs": 2,
        "c_unsupported_content_type": 3,
        "c_bad_query_options": 2,
        "c_mutated_image": 4,
        "c_deep_json": 1,
        "c_huge_int": 1,
        "c_option_digits": 1,
    }
    # cost the server ~0.5-1 GB and seconds each before the fixes (full decode); now refused from the header
    HEAVY = {"c_pixel_bomb_pil_bypass", "c_pixel_bomb_hdr"}

    def cases(self, count: int) -> Iterator[Case]:
        names = [c for c, _, _ in self.builders]
        weights = [w for _, _, w in self.builders]
        fns = {c: fn for c, fn, _ in self.builders}
        # every category at least once, then weighted draws
        order = names[:count] + self.rng.choices(names, weights, k=max(0, count - len(names)))
        for category in order:
            case = fns[category]()
            case.category = category
            yield case

    # ---- helpers ---------------------------------------------------------
    def _bytes(self, lo: int = 0, hi: int = 4096) -> bytes:
        return self.rng.randbytes(self.rng.randint(lo, hi))

    def _b64(self, data: bytes) -> str:
        return base64.b64encode(data).decode()

    def _paddle(self, obj: Any, expect: tuple[int, ...] = (), name: str | None = None) -> Case:
        body = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
        return Case("", "POST", f"/{name or self.name}/prediction", body, {}, expect)

    def _paddle_image(self, data: bytes, expect: tuple[int, ...] = (400,)) -> Case:
        return self._paddle({"key": ["image"], "value": [self._b64(data)], "logid": self.rng.randint(0, 99)}, expect)

    def _native_json(self, obj: Any, expect: tuple[int, ...] = ()) -> Case:
        return Case(
            "", "POST", f"/{self.name}/predict", json.dumps(obj).encode(), {"Content-Type": "application/json"}, expect
        )

    def _multipart(
        self, parts: list[tuple[str, str | None, bytes]], expect: tuple[int, ...] = (), query: str = ""
    ) -> Case:
        boundary = f"----fuzz{self.rng.randrange(1 << 40):x}"
        out = io.BytesIO()
        for field_name, filename, data in parts:
            out.write(f"--{boundary}\r\n".encode())
            disp = f'Content-Disposition: form-data; name="{field_name}"'
            if filename is not None:
                disp += f'; filename="{filename}"'
            out.write(disp.encode() + b"\r\nContent-Type: application/octet-stream\r\n\r\n")
            out.write(data + b"\r\n")
        out.write(f"--{boundary}--\r\n".encode())
        return Case(
            "",
            "POST",
            f"/{self.name}/predict{query}",
            out.getvalue(),
            {"Content-Type": f"multipart/form-data; boundary={boundary}"},
            expect,
        )

    def _raw(self, data: bytes, ctype: str = "image/png", expect: tuple[int, ...] = (), query: str = "") -> Case:
        return Case("", "POST", f"/{self.name}/predict{query}", data, {"Content-Type": ctype}, expect)

    def _any_transport(self, data: bytes, expect: tuple[int, ...]) -> Case:
        pick = self.rng.randrange(4)
        if pick == 0:
            return self._paddle_image(data, expect)
        if pick == 1:
            return self._native_json({"inputs": [{"image": self._b64(data)}]}, expect)
        if pick == 2:
            return self._multipart([("image", "x.png", data)], expect)
        return self._raw(data, self.rng.choice(["image/png", "image/jpeg", "image/webp"]), expect)

    def _junk_json(self, depth: int = 0) -> Any:
        pick = self.rng.randrange(8 if depth < 3 else 5)
        if pick == 0:
            return None
        if pick == 1:
            return self.rng.choice([True, False])
        if pick == 2:
            return self.rng.choice([0, -1, 2**63, 1.5, -0.0, 1e308])
        if pick == 3:
            return self.rng.choice(["", "image", "x" * 100, "\u00e9\u4e16\u754c", "\x00"])
        if pick == 4:
            return "A" * self.rng.randint(1, 20)
        if pick == 5:
            return [self._junk_json(depth + 1) for _ in range(self.rng.randint(0, 3))]
        return {
            self.rng.choice(["key", "value", "a", ""]): self._junk_json(depth + 1)
            for _ in range(self.rng.randint(0, 3))
        }

    # ---- categories ------------------------------------------------------
    def c_random_bytes_paddle(self) -> Case:
        return self._paddle_image(self._bytes(0, 8192), (400,))

    def c_random_bytes_native_json(self) -> Case:
        return self._native_json({"inputs": [{"image": self._b64(self._bytes(1, 8192))}]}, (400,))

    def c_random_bytes_multipart(self) -> Case:
        return self._multipart([("image", "r.jpg", self._bytes(0, 8192))], (400,))

    def c_random_bytes_raw(self) -> Case:
        return self._raw(self._bytes(0, 8192), self.rng.choice(["image/png", "image/jpeg", "image/x-anything"]), (400,))

    def c_truncated_image(self) -> Case:
        ext, data = self.rng.choice(self.images.valid)
        cut = self.rng.randint(0, len(data) - 1)
        return self._any_transport(data[:cut], (400,))

    def c_tiny_image(self) -> Case:
        return self._any_transport(self.rng.choice(self.images.tiny), (400,))

    def c_pixel_bomb_header(self) -> Case:
        limit = self.limits.max_image_pixels
        w = self.rng.randint(int(limit**0.5) + 1, 12000)
        h = limit // w + self.rng.randint(1, 5000)
        return self._any_transport(png_with_header(w, h, rows=1), (413,))

    def c_pixel_bomb_pil_bypass(self) -> Case:
        # > 2 * PIL.Image.MAX_IMAGE_PIXELS: PIL raises DecompressionBombError from the header -> 413
        return self._any_transport(png_with_header(15000, 15000, bitdepth=1, color=0, rows=None), (413,))

    def c_pixel_bomb_hdr(self) -> Case:
        # a format PIL cannot size (Radiance HDR, 49 M float pixels if decoded): refused before decoding
        # (400 "cannot read the image header"; 413 would also do if the size were read)
        return self._raw(hdr_bomb(7000, 7000), "image/vnd.radiance", (400, 413))

    def c_body_over_limit(self) -> Case:
        size = self.limits.max_body_size + self.rng.randint(1, self.limits.max_body_size // 4 + 1)
        return self._paddle({"key": ["image"], "value": ["A" * size]}, (413,))

    def c_body_over_limit_raw(self) -> Case:
        size = self.limits.max_body_size + self.rng.randint(1, 4096)
        if self.rng.random() < 0.5:
            return self._raw(b"\x89PNG" + b"\x00" * size, "image/png", (413,))
        return self._multipart([("image", "big.png", b"\x00" * size)], (413,))

    def c_wrong_json_types(self) -> Case:
        valid = self._b64(self.rng.choice(self.images.valid)[1])
        options = [
            self._junk_json(),
            {"key": self._junk_json(), "value": [valid]},
            {"key": "image", "value": valid},
            {"key": ["image"], "value": valid},
            {"key": ["image"], "value": [self.rng.choice([1, None, True, [valid], {"b64": valid}, 2.5])]},
            {"key": [self.rng.choice([1, None, ["image"], {"image": 1}, True])], "value": [valid]},
            {"key": {"0": "image"}, "value": {"0": valid}},
        ]
        obj = self.rng.choice(options)
        if (
            isinstance(obj, dict)
            and obj.get("key") == ["image"]
            and isinstance(obj.get("value"), list)
            and len(obj["value"]) == 1
            and isinstance(obj["value"][0], str)
        ):
            obj["value"] = [None]  # _junk_json made a valid request by chance
        return self._paddle(obj, (400, 413))

    def c_missing_keys(self) -> Case:
        valid = self._b64(self.rng.choice(self.images.valid)[1])
        return self._paddle(
            self.rng.choice(
                [{}, {"key": ["image"]}, {"value": [valid]}, {"logid": 1}, {"keys": ["image"], "values": [valid]}]
            ),
            (400,),
        )

    def c_length_mismatch(self) -> Case:
        valid = self._b64(self.rng.choice(self.images.valid)[1])
        n = self.rng.randint(0, 3)
        return self._paddle({"key": ["image"] * n, "value": [valid] * (n + self.rng.randint(1, 3))}, (400,))

    def c_extra_keys_paddle(self) -> Case:
        # unknown top-level keys are ignored (as Paddle Serving does): 200 is fine
        ext, data = self.rng.choice([v for v in self.images.valid if v[0] in (".png", ".bmp")])
        return self._paddle(
            {
                "key": ["image"],
                "value": [self._b64(data)],
                "logid": 3,
                "fetch": ["res"],
                "extra": {"x": [1, 2]},
                "": None,
            },
            (200,),
        )

    def c_non_utf8(self) -> Case:
        junk = self.rng.choice([b"\xff\xfe", b"\xc3\x28", b"\x80" * 10, "é".encode("latin-1")])
        body = b'{"key": ["image"], "value": ["' + junk + b'"]}'
        if self.rng.random() < 0.5:
            return self._paddle(body, (400,))
        return Case("", "POST", f"/{self.name}/predict", body, {"Content-Type": "application/json"}, (400,))

    def c_invalid_json(self) -> Case:
        valid = json.dumps({"key": ["image"], "value": ["aGk="]})
        body = self.rng.choice(
            [
                b"",
                b" ",
                b"{",
                b"[",
                b"nul",
                b"{'key': 1}",
                b'{"key": ["image"],}',
                valid[: self.rng.randint(1, len(valid) - 1)].encode(),
                b"NaN",
                self._bytes(1, 200),
            ]
        )
        if self.rng.random() < 0.5:
            return self._paddle(body, (400,))
        return Case("", "POST", f"/{self.name}/predict", body, {"Content-Type": "application/json"}, (400,))

    def c_huge_key_list(self) -> Case:
        n = self.rng.randint(self.limits.max_inputs + 1, min(100_000, self.limits.max_body_size // 12))
        if self.rng.random() < 0.5:
            return self._paddle({"key": ["image"] * n, "value": ["x"] * n}, (413,))
        return self._paddle({"key": ["image"] * n, "value": ["x"] * (n - 1)}, (400, 413))  # 413: body limit

    def c_wrong_key_names(self) -> Case:
        valid = self._b64(self.rng.choice(self.images.valid)[1])
        key = self.rng.choice(["text", "images", "", "IMAGE", "\u56fe\u50cf", "image ", "x" * 1000])
        return self._paddle({"key": [key], "value": [valid]}, (400,))

    def c_bad_options(self) -> Case:
        valid = self._b64(self.rng.choice(self.images.valid)[1])
        name = self.rng.choice(["priority", "timeout_ms"])
        bad = {
            "priority": [-1, self.limits.priority_levels, 99, "x", 1.5, True, [], {}, "1.0"],
            "timeout_ms": [0, -5, "abc", 2.5, False, [1], {}, "1e3"],
        }[name]
        return self._paddle({"key": ["image"], "value": [valid], name: self.rng.choice(bad)}, (400,))

    def c_bad_base64(self) -> Case:
        value = self.rng.choice(
            [
                "@@@@",
                "aGk",
                "a",
                "====",
                "aGk=\n" * 3,
                "\u00e9\u00e9\u00e9\u00e9",
                "data:image/png;base64,%%%",
                "data:,",
                "aGVsbG8=aGVsbG8=x",
                " " * 8,
            ]
        )
        if self.rng.random() < 0.5:
            return self._paddle({"key": ["image"], "value": [value]}, (400,))
        return self._native_json({"inputs": [{"image": value}]}, (400,))

    def c_unknown_pipeline(self) -> Case:
        name = self.rng.choice(["ocr2", "x", "%2e%2e", "a" * 300, "\u00e9", "v2", "health"])
        route = self.rng.choice(["prediction", "predict"])
        if name == self.name:
            name += "x"
        return Case("", "POST", f"/{name}/{route}", b"{}", {"Content-Type": "application/json"}, (404,))

    def c_wrong_method(self) -> Case:
        return Case(
            "",
            self.rng.choice(["GET", "PUT", "DELETE", "PATCH"]),
            f"/{self.name}/{self.rng.choice(['prediction', 'predict'])}",
            b"",
            {},
            (405,),
        )

    def c_native_json_shape(self) -> Case:
        valid = self._b64(self.rng.choice(self.images.valid)[1])
        obj = self.rng.choice(
            [
                {},
                {"inputs": None},
                {"inputs": valid},
                {"inputs": {"image": valid}},
                {"inputs": []},
                {"inputs": [valid]},
                {"inputs": [{"image": valid, "text": "x"}]},
                {"inputs": [{}]},
                {"inputs": [{"text": "hello"}]},
                {"inputs": [{"image": 5}]},
                {"inputs": [{"image": None}]},
                {"inputs": [[valid]]},
                [{"image": valid}],
                {"image": valid},
            ]
        )
        return self._native_json(obj, (400,))

    def c_multipart_shape(self) -> Case:
        valid = self.rng.choice(self.images.valid)[1]
        pick = self.rng.randrange(5)
        if pick == 0:
            return self._multipart([("img", "x.png", valid)], (400,))  # wrong field name
        if pick == 1:
            return self._multipart([("image", "x.png", b"")], (400,))  # empty file
        if pick == 2:
            return self._multipart([("image", None, self._b64(valid).encode())], (400,))  # a form field, not a file
        if pick == 3:  # broken multipart framing
            return Case(
                "",
                "POST",
                f"/{self.name}/predict",
                b"--nope\r\n\r\n" + self._bytes(0, 500),
                {"Content-Type": "multipart/form-data; boundary=xyz"},
                (400,),
            )
        return Case(
            "", "POST", f"/{self.name}/predict", valid, {"Content-Type": "multipart/form-data"}, (400,)
        )  # no boundary

    def c_too_many_inputs(self) -> Case:
        n = self.limits.max_inputs + self.rng.randint(1, 4)
        tiny = self.images.tiny[0]
        if self.rng.random() < 0.5:
            return self._multipart([("image", f"{i}.png", tiny) for i in range(n)], (413,))
        return self._native_json({"inputs": [{"image": self._b64(tiny)}] * n}, (413,))

    def c_unsupported_content_type(self) -> Case:
        valid = self.rng.choice(self.images.valid)[1]
        ctype = self.rng.choice(
            [
                "application/octet-stream",
                "text/plain",
                "",
                "application/x-www-form-urlencoded",
                "video/mp4",
                "application/xml",
                "image",
            ]
        )
        headers = {"Content-Type": ctype} if ctype else {}
        return Case("", "POST", f"/{self.name}/predict", valid, headers, (400,))

    def c_bad_query_options(self) -> Case:
        valid = self.rng.choice(self.images.valid)[1]
        query = self.rng.choice(
            [
                "?priority=abc",
                "?priority=-1",
                "?priority=99",
                "?timeout_ms=0",
                "?timeout_ms=-3",
                "?timeout_ms=1.5",
                "?timeout_ms=x",
            ]
        )
        return self._raw(valid, "image/png", (400,), query=query)

    def c_mutated_image(self) -> Case:
        ext, data = self.rng.choice(self.images.valid)
        buf = bytearray(data)
        for _ in range(self.rng.randint(1, 20)):
            buf[self.rng.randrange(len(buf))] = self.rng.randrange(256)
        return self._any_transport(bytes(buf), ())  # LENIENT: 200 or 4xx

    # ---- once server bugs found by this fuzz (500s; fixed, see docs/RELIABILITY.md) ----
    def c_deep_json(self) -> Case:
        depth = self.rng.randint(5_000, 100_000)
        return self._paddle(b"[" * depth + b"]" * depth, (400,))

    def c_huge_int(self) -> Case:
        digits = b"9" * self.rng.randint(4_301, 20_000)
        return self._paddle(b'{"key": ["image"], "value": ["aGk="], "logid": ' + digits + b"}", (400,))

    def c_option_digits(self) -> Case:
        valid = self._b64(self.images.tiny[0])
        value = self.rng.choice(["--1", "\u00b2", "9" * 5000, "-\u00b3"])
        return self._paddle({"key": ["image"], "value": [valid], "priority": value}, (400,))


# ---------------------------------------------------------------------------
# sending and checking
# ---------------------------------------------------------------------------
def error_message(body: Any, path: str) -> str:
    if not isinstance(body, dict):
        return ""
    if path.endswith("/prediction") and "err_msg" in body:
        return str(body.get("err_msg") or "") if body.get("err_no") not in (0, None) else ""
    err = body.get("error")
    return str(err.get("message") or "") if isinstance(err, dict) else ""


def check(case: Case, status: int, body_text: str) -> str | None:
    """None when the answer is acceptable, else what is wrong."""
    if status >= 500:
        return f"{status} (server error)"
    if case.category in LENIENT or case.expect == (200,):
        if status == 200 or 400 <= status < 500:
            return None if status == 200 or _has_message(case, body_text) else f"{status} without a message"
        return f"unexpected {status}"
    if not 400 <= status < 500:
        return f"{status}, expected a 4xx"
    if case.expect and status not in case.expect:
        return f"{status}, expected {case.expect}"
    if not _has_message(case, body_text):
        return f"{status} without a JSON error message: {body_text[:120]!r}"
    return None


def _has_message(case: Case, body_text: str) -> bool:
    try:
        return bool(error_message(json.loads(body_text), case.path))
    except ValueError:
        return False


def send(session: requests.Session, url: str, case: Case, timeout: float = 60.0) -> tuple[int, str, float]:
    began = time.monotonic()
    try:
        r = session.request(case.method, url + case.path, data=case.body, headers=case.headers, timeout=timeout)
        return r.status_code, r.text, time.monotonic() - began
    except requests.RequestException as exc:
        return 0, f"no HTTP answer: {type(exc).__name__}: {exc}", time.monotonic() - began


@dataclass
class Report:
    counts: dict[str, dict[int, int]] = field(default_factory=dict)  # category -> status -> n
    failures: list[tuple[str, int, str, str]] = field(default_factory=list)  # category, status, problem, body
    slowest: dict[str, float] = field(default_factory=dict)  # category -> max latency s
    rss_peak: dict[str, int] = field(default_factory=dict)  # category -> max server RSS after a case
    alive_problems: list[str] = field(default_factory=list)
    rss_before: int = 0
    rss_after: int = 0
    elapsed_s: float = 0.0

    @property
    def total(self) -> int:
        return sum(sum(c.values()) for c in self.counts.values())

    def by_status(self) -> dict[int, int]:
        out: dict[int, int] = {}
        for c in self.counts.values():
            for s, n in c.items():
                out[s] = out.get(s, 0) + n
        return dict(sorted(out.items()))

    def ok(self) -> bool:
        return not self.failures and not self.alive_problems


def run_fuzz(
    url: str,
    name: str,
    limits: Limits,
    count: int,
    *,
    seed: int = 0,
    heavy: bool = True,
    pid: int | None = None,
    deadline_s: float = 900.0,
    progress: Callable[[str], None] | None = None,
    valid_image_path: str | None = None,
) -> Report:
    """Send ``count`` generated cases (bounded by ``deadline_s``), then check the server is healthy."""
    gen = Generator(name, limits, seed=seed, heavy=heavy)
    report = Report(rss_before=rss_bytes(pid) if pid else 0)
    began = time.monotonic()
    with requests.Session() as session:
        for i, case in enumerate(gen.cases(count)):
            if time.monotonic() - began > deadline_s:
                report.alive_problems.append(f"stopped after {i} cases: {deadline_s}s budget spent")
                break
            if pid:
                peak_rss_bytes(pid, reset=True)
            status, text, latency = send(session, url, case)
            cat = case.category
            report.counts.setdefault(cat, {})
            report.counts[cat][status] = report.counts[cat].get(status, 0) + 1
            report.slowest[cat] = max(report.slowest.get(cat, 0.0), latency)
            if pid:
                report.rss_peak[cat] = max(report.rss_peak.get(cat, 0), peak_rss_bytes(pid))
            problem = check(case, status, text)
            if problem:
                report.failures.append((cat, status, problem, text[:300]))
                if status == 0:  # the connection died: start a fresh one
                    session.close()
                    session = requests.Session()
            if progress and (i + 1) % 100 == 0:
                progress(f"{i + 1}/{count} sent, {len(report.failures)} problems")
    image, expected = valid_image(valid_image_path)
    report.alive_problems += check_alive(url, name, image, expected if _is_fake(url, name) else None)
    report.rss_after = rss_bytes(pid) if pid else 0
    report.elapsed_s = time.monotonic() - began
    return report


def _is_fake(url: str, name: str) -> bool:
    try:
        ops = requests.get(f"{url}/{name}/config", timeout=10).json().get("ops", [])
        return all("reliability_fakes" in str(op.get("class", "")) for op in ops)
    except (requests.RequestException, ValueError):
        return False


def limits_for(url: str, name: str, config_path: str | None) -> Limits:
    """The server's limits, read from its config file when we have it."""
    if not config_path:
        return Limits(max_body_size=64 << 20, max_inputs=64, max_image_pixels=40_000_000)
    from serving.config import load_config

    cfg = load_config(config_path)
    body = max(cfg.op[s].local_service_conf.max_body_size for s in cfg.dag_graph.sources)
    return Limits(
        max_body_size=body,
        max_inputs=cfg.max_inputs_per_request,
        max_image_pixels=cfg.max_image_pixels,
        priority_levels=cfg.dag.priority_levels,
    )


def format_report(report: Report) -> str:
    lines = [
        f"{report.total} requests in {report.elapsed_s:.1f}s",
        "",
        f"{'category':28s} {'statuses':34s} {'max latency':>11s} {'peak RSS':>9s}",
    ]
    for cat in sorted(report.counts):
        statuses = " ".join(f"{s}x{n}" for s, n in sorted(report.counts[cat].items()))
        rss = f"{report.rss_peak[cat] / (1 << 20):.0f} MB" if cat in report.rss_peak else "-"
        lines.append(f"{cat:28s} {statuses:34s} {report.slowest[cat] * 1000:9.0f}ms {rss:>9s}")
    lines += ["", f"by status: {report.by_status()}"]
    if report.rss_before:
        lines.append(
            f"server RSS before {report.rss_before / (1 << 20):.1f} MB, after {report.rss_after / (1 << 20):.1f} MB"
        )
    lines.append(f"problems: {len(report.failures)}")
    seen = set()
    for cat, status, problem, body in report.failures:
        if (cat, status) in seen:
            continue
        seen.add((cat, status))
        lines.append(f"  {cat}: {problem}: {body[:160]!r}")
    lines += [f"  after the fuzz: {p}" for p in report.alive_problems] or [
        "after the fuzz: /health/ready 200, valid request answered correctly"
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default=FAKE, help="config to serve (default: a fake-op image config)")
    ap.add_argument("--url", help="fuzz an already running server instead of starting one")
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--no-heavy",
        action="store_true",
        help="skip the decompression-bomb cases (their bodies are 27 KB-3 MB; before the fixes each cost ~1 GB)",
    )
    ap.add_argument("--valid-image", help="image file for the after-fuzz valid request (default: a generated PNG)")
    ap.add_argument("--json", help="write the report as JSON here")
    args = ap.parse_args(argv)

    server = None
    try:
        if args.url:
            url, pid, config_path = args.url.rstrip("/"), None, None
        else:
            server = start_server(args.config, **FAKE_SERVER)
            url, pid = server.url, server.proc.pid
            config_path = None if args.config == FAKE else args.config
        name, kind = pipeline_info(url)
        if kind != "image":
            print(f"pipeline {name!r} takes {kind!r} input; this fuzz targets image pipelines", file=sys.stderr)
            return 2
        if args.config == FAKE and not args.url:
            limits = Limits()  # image_config() defaults
        else:
            limits = limits_for(url, name, config_path)
        report = run_fuzz(
            url,
            name,
            limits,
            args.count,
            seed=args.seed,
            heavy=not args.no_heavy,
            pid=pid,
            progress=lambda m: print(m, file=sys.stderr),
            valid_image_path=args.valid_image,
        )
        print(format_report(report))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(
                    {
                        "counts": report.counts,
                        "by_status": report.by_status(),
                        "failures": report.failures,
                        "alive_problems": report.alive_problems,
                        "rss_before": report.rss_before,
                        "rss_after": report.rss_after,
                    },
                    f,
                    indent=1,
                )
        return 0 if report.ok() else 1
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    sys.exit(main())
