"""Model-free ops shaped like the real OCR and ERNIE pipelines, and configs
serving them, for testing the client against the real app
(:mod:`tests.support.live_app`).

OCR-shaped (:func:`ocr_config`): ``det`` -> ``rec``.

* ``det`` (:class:`FakeDetOp`) is :class:`~tests.support.image_fakes.ImageStatsOp`
  (the real image decoding path; the image faults of ``make_image(fault=...)``)
  finding two "lines" in every image: the first reads ``"{w}x{h}"`` (so a test
  can tell which image arrived), the second ``"你好 world"``. It pads each image
  to multiples of 32 pixels per side, so its padding ratio is known
  (:func:`padded_pixels`).
* ``rec`` (:class:`FakeRecOp`) "recognises" each line as one item, batched
  across requests like OCR's rec, and answers ``{"text", "score", "box"}``
  (scores 0.99 and 0.875): an OCR result, a list per image.

Text-shaped (:func:`text_config`): ``cls`` (:class:`FakeLabelOp`) labels a text
``positive`` when it holds "good" or "好", else ``negative``:
``{"label", "score": 0.9, "probs"}``. These texts trigger failures:

* ``BAD`` -> preprocess raises BadRequest (400);
* ``BOOM`` -> the predictor raises for any batch holding it (500 after the
  item-by-item retry);
* ``OVERLOADED`` -> preprocess raises Overloaded (503 + Retry-After);
* ``HOLD`` -> the predictor holds its batch until the op's :meth:`FakeLabelOp.release`
  (at most ``HOLD_LIMIT_S``): a test occupies the only instance, and an
  admission slot, for exactly as long as it needs, whatever the machine's speed.

``params: {hold_load: true}`` makes ``cls``'s ``load()`` wait for ``release()``
too, so a test can look at a server that listens but is not ready yet.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from serving.errors import BadRequest, Overloaded
from serving.op import Op, SubBatch
from tests.support.engine_fakes import FakeRunner
from tests.support.image_fakes import ImageStatsOp

BAD = "__bad__"
BOOM = "__boom__"
OVERLOADED = "__overloaded__"
HOLD = "__hold__"
HOLD_LIMIT_S = 60.0  # a held batch or load gives up after this (a test forgot to release)
_CODES = {BOOM: 1, HOLD: 2}

LINE2 = "你好 world"
SCORES = (0.99, 0.875)


def padded_sides(w: int, h: int) -> tuple[int, int]:
    """(height, width) of a ``w`` x ``h`` image once ``det`` padded it (each side to a multiple of 32)."""
    return -(-h // 32) * 32, -(-w // 32) * 32


def padded_pixels(w: int, h: int) -> int:
    """Pixels of a ``w`` x ``h`` image once ``det`` padded it."""
    ph, pw = padded_sides(w, h)
    return ph * pw


def ocr_lines(w: int, h: int) -> list[dict[str, Any]]:
    """What the OCR-shaped pipeline answers for a ``w`` x ``h`` image."""
    mid = h // 2
    return [
        {"text": f"{w}x{h}", "score": SCORES[0], "box": [[0, 0], [w - 1, 0], [w - 1, mid - 1], [0, mid - 1]]},
        {"text": LINE2, "score": SCORES[1], "box": [[0, mid], [w - 1, mid], [w - 1, h - 1], [0, h - 1]]},
    ]


class FakeDetOp(ImageStatsOp):
    """ImageStatsOp whose output is two text regions (see the module docstring)."""

    def collate(self, items):
        subs = super().collate(items)
        for sub in subs:
            sub.real_units = sum(items[i][0] * items[i][1] for i in sub.indices)
            sub.padded_units = sum(padded_pixels(items[i][0], items[i][1]) for i in sub.indices)
        return subs

    def pad_extent(self, item):
        return padded_sides(item[0], item[1])

    def postprocess(self, item, output):
        stats = super().postprocess(item, output)  # raises for the "postprocess" fault
        return ocr_lines(stats["w"], stats["h"])


class FakeRecOp(Op):
    """One item per det region; answers the region (text, score, box) back."""

    needs_model = False

    def create_runners(self, count: int) -> list[FakeRunner]:
        return [FakeRunner() for _ in range(count)]

    def expand(self, inputs):
        (regions,) = inputs.values()
        return list(regions)

    def collate(self, items):
        x = np.array([float(len(it["text"])) for it in items], dtype=np.float32)
        return [SubBatch(indices=list(range(len(items))), feed={"x": x})]

    def postprocess(self, item, output):
        return {"text": item["text"], "score": item["score"], "box": item["box"]}

    def merge(self, inputs, results):
        return list(results)

    def warmup_items(self):
        return [{"text": "warm", "score": 1.0, "box": [[0, 0]] * 4}]


class LabelParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    hold_load: bool = False  # load() waits for release()


class _LabelRunner:
    """probs per text: [0.1, 0.9] when x is 1 (positive), else [0.9, 0.1]."""

    input_names = ["x", "code"]

    def __init__(self, released: threading.Event):
        self.released = released

    def close(self) -> None:
        pass

    def run(self, feed):
        codes = set(feed["code"].tolist())
        if _CODES[HOLD] in codes:
            self.released.wait(HOLD_LIMIT_S)
        if _CODES[BOOM] in codes:
            raise RuntimeError("injected predictor failure")
        positive = feed["x"][:, None] > 0.5
        return [np.where(positive, [[0.1, 0.9]], [[0.9, 0.1]])]


class FakeLabelOp(Op):
    """Text classifier shaped like the ERNIE pipeline (see the module docstring)."""

    Params = LabelParams
    input_kind = "text"
    needs_model = False

    @classmethod
    def answer_fields(cls, *, source):
        return {"label": "BYTES", "score": "FP32"} if source else {}

    def __init__(self, ctx):
        super().__init__(ctx)
        self.released = threading.Event()

    def release(self) -> None:
        """Let every held batch (and a held load) go on, now and from now on."""
        self.released.set()

    def load(self) -> None:
        if self.params.hold_load and not self.released.wait(HOLD_LIMIT_S):
            raise RuntimeError("load() held for HOLD_LIMIT_S and never released")

    def create_runners(self, count: int) -> list[_LabelRunner]:
        return [_LabelRunner(self.released) for _ in range(count)]

    def preprocess(self, payload: str) -> str:
        if payload == BAD:
            raise BadRequest(f"text {BAD!r} rejected by the op")
        if payload == OVERLOADED:
            raise Overloaded("injected: the op refused the item (overloaded)")
        return payload

    def collate(self, items):
        x = np.array([1.0 if ("good" in t or "好" in t) else 0.0 for t in items])
        codes = np.array([_CODES.get(t, 0) for t in items], dtype=np.int32)
        lengths = [len(t) for t in items]
        return [
            SubBatch(
                indices=list(range(len(items))),
                feed={"x": x, "code": codes},
                real_units=sum(lengths),
                padded_units=len(items) * max(lengths),  # padded to the longest, like ERNIE's tokens
            )
        ]

    def uncollate(self, sub, outputs):
        return [outputs[0][i] for i in range(len(sub.indices))]

    def postprocess(self, item, output):
        probs = [round(float(p), 4) for p in output]
        positive = probs[1] > probs[0]
        return {"label": "positive" if positive else "negative", "score": max(probs), "probs": probs}

    def warmup_items(self):
        return ["warm"]


def _service(max_batch_size: int, max_body_size: int) -> dict[str, Any]:
    return {"max_batch_size": max_batch_size, "max_queue_delay": 2, "max_body_size": max_body_size}


def ocr_config(
    *,
    name: str = "ocr",
    max_queue_size: int = 16,
    max_inputs_per_request: int = 4,
    max_image_pixels: int = 100_000,
    max_body_size: int = 1 << 20,
    auth_token: str | None = None,
) -> dict[str, Any]:
    """Config dict (for ``serving.config.parse_config``) of the OCR-shaped pipeline."""
    config: dict[str, Any] = {
        "name": name,
        "worker_num": 4,
        "max_inputs_per_request": max_inputs_per_request,
        "max_image_pixels": max_image_pixels,
        "dag": {"request_timeout_ms": 30000, "max_queue_size": max_queue_size, "shutdown_timeout_s": 10},
        "op": {
            "det": {
                "class": "tests.support.client_fakes:FakeDetOp",
                "params": {"delay_ms": 0, "per_item_ms": 0},
                "local_service_conf": _service(4, max_body_size),
            },
            "rec": {
                "class": "tests.support.client_fakes:FakeRecOp",
                "input_ops": ["det"],
                "local_service_conf": _service(8, max_body_size),
            },
        },
    }
    if auth_token is not None:
        config["auth_token"] = auth_token
    return config


def text_config(
    *,
    name: str = "ernie",
    max_queue_size: int = 16,
    max_inputs_per_request: int = 4,
    max_body_size: int = 1 << 20,
    hold_load: bool = False,
    auth_token: str | None = None,
) -> dict[str, Any]:
    """Config dict (for ``serving.config.parse_config``) of the text-shaped pipeline."""
    config: dict[str, Any] = {
        "name": name,
        "worker_num": 4,
        "max_inputs_per_request": max_inputs_per_request,
        "dag": {
            "request_timeout_ms": 30000,
            "max_queue_size": max_queue_size,
            "priority_levels": 2,
            "shutdown_timeout_s": 10,
        },
        "op": {
            "cls": {
                "class": "tests.support.client_fakes:FakeLabelOp",
                "params": {"hold_load": hold_load},
                "local_service_conf": _service(4, max_body_size),
            }
        },
    }
    if auth_token is not None:
        config["auth_token"] = auth_token
    return config
