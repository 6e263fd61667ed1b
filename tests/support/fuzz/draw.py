"""Random request material for one fuzz run, drawn from one seeded rng (so a
seed gives the same requests every run): sample images, random bytes and
JSON, and the four ways to send an image (Paddle ``/prediction`` JSON,
native ``/predict`` JSON, multipart, raw ``image/*`` body)."""

from __future__ import annotations

import base64
import io
import json
import random
from typing import Any

from tests.support.fuzz.case import Limits, Request
from tests.support.fuzz.malformed import png_with_header


class SampleImages:
    """Valid encodings to truncate or mutate, and tiny or zero-size images; built once."""

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


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


class Draw:
    """Request material for pipeline ``name`` (input kind image) under ``limits``.

    Every random choice goes through ``rng``, in the order the case builders
    make them: changing that order changes what a seed generates."""

    def __init__(self, name: str, limits: Limits, rng: random.Random):
        self.name = name
        self.limits = limits
        self.rng = rng
        self.images = SampleImages(rng)

    # ---- material ----------------------------------------------------------
    def bytes(self, lo: int = 0, hi: int = 4096) -> bytes:
        return self.rng.randbytes(self.rng.randint(lo, hi))

    def valid_image(self) -> bytes:
        return self.rng.choice(self.images.valid)[1]

    def valid_b64(self) -> str:
        return b64(self.valid_image())

    def junk_json(self, depth: int = 0) -> Any:
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
            return [self.junk_json(depth + 1) for _ in range(self.rng.randint(0, 3))]
        return {
            self.rng.choice(["key", "value", "a", ""]): self.junk_json(depth + 1) for _ in range(self.rng.randint(0, 3))
        }

    # ---- requests ----------------------------------------------------------
    def paddle(self, obj: Any, expect: tuple[int, ...] | None = None) -> Request:
        """POST /{name}/prediction with ``obj`` as JSON (bytes: as they are)."""
        body = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
        return Request("POST", f"/{self.name}/prediction", body, {}, expect)

    def paddle_image(self, data: bytes) -> Request:
        return self.paddle({"key": ["image"], "value": [b64(data)], "logid": self.rng.randint(0, 99)})

    def native_json(self, obj: Any) -> Request:
        return Request("POST", f"/{self.name}/predict", json.dumps(obj).encode(), {"Content-Type": "application/json"})

    def native(self, body: bytes, headers: dict[str, str]) -> Request:
        """POST /{name}/predict with ``body`` and ``headers`` as they are."""
        return Request("POST", f"/{self.name}/predict", body, headers)

    def multipart(self, parts: list[tuple[str, str | None, bytes]], query: str = "") -> Request:
        """``parts``: (field name, file name or None for a plain form field, content)."""
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
        return Request(
            "POST",
            f"/{self.name}/predict{query}",
            out.getvalue(),
            {"Content-Type": f"multipart/form-data; boundary={boundary}"},
        )

    def raw(self, data: bytes, ctype: str = "image/png", query: str = "") -> Request:
        return Request("POST", f"/{self.name}/predict{query}", data, {"Content-Type": ctype})

    def any_transport(self, data: bytes) -> Request:
        """Image bytes ``data`` sent one of the four ways."""
        pick = self.rng.randrange(4)
        if pick == 0:
            return self.paddle_image(data)
        if pick == 1:
            return self.native_json({"inputs": [{"image": b64(data)}]})
        if pick == 2:
            return self.multipart([("image", "x.png", data)])
        return self.raw(data, self.rng.choice(["image/png", "image/jpeg", "image/webp"]))
