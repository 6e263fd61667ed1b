"""A model-free image op for the reliability tests and benches.

``ImageStatsOp`` takes the real decoded image (``input_kind = "image"``: the
request goes through ``serving.service.decode.decode_input``, then the OCR ops'
``ops.image.to_bgr``, exactly as OCR does) and answers ``{"w", "h", "sum2"}`` where ``sum2`` is
twice the sum of the image's first row (the "predictor" doubles its input).

A batch costs ``delay_ms + per_item_ms * n`` (sleeping, like a predictor that
releases the GIL), so capacity is predictable: ``max_batch_size`` items per
``delay_ms + per_item_ms * max_batch_size`` ms per instance.

Fault injection is keyed on the image's top-left pixels, so a test sends a
poisoned image and every other request stays clean: pixel (0, 1) must be
``SIGNATURE`` and pixel (0, 0) holds the fault code (see :data:`FAULTS`).
"""

from __future__ import annotations

import json
import time
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from ops.image import to_bgr
from serving.errors import Overloaded
from serving.op import Op, SubBatch
from tests.support.engine_fakes import FakeRunner

SIGNATURE = (7, 77, 177)
FAULTS = {
    "postprocess": 11,  # postprocess raises ValueError -> that request fails (500)
    "run": 12,  # the predictor raises for any batch holding the item -> retried item by item
    "kill_instance": 13,  # the predictor raises a BaseException: the instance thread dies
    "slow": 14,  # the batch holding the item takes SLOW_S longer (occupies the instance)
    "overloaded": 15,  # preprocess raises Overloaded -> that request gets 503 + Retry-After
    # only the fault op's model acts on these (tests.support.fault_op)
    "hang": 16,  # the batch holding the item sleeps hang_s
    "kill_process": 17,  # the process running the model SIGKILLs itself
}
SLOW_S = 1.0


class WorkerKilled(BaseException):
    """Not an Exception: escapes every ``except Exception`` and kills the worker thread."""


def make_image(w: int = 32, h: int = 24, *, seed: int = 0, fault: str | None = None) -> np.ndarray:
    """A BGR test image; ``fault`` marks it with one of :data:`FAULTS`."""
    rng = np.random.default_rng(seed)
    img = rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)
    img[0, 0] = (0, 0, 0)
    img[0, 1] = (0, 0, 0)
    if fault is not None:
        img[0, 0] = (FAULTS[fault], 0, 0)
        img[0, 1] = SIGNATURE
    return img


def encode_png(img: np.ndarray) -> bytes:
    import cv2

    ok, buf = cv2.imencode(".png", img)
    assert ok
    return buf.tobytes()


def expected_answer(img: np.ndarray) -> dict[str, Any]:
    """What ImageStatsOp answers for ``img`` (decoded losslessly)."""
    return {"w": int(img.shape[1]), "h": int(img.shape[0]), "sum2": float(np.float32(img[0].sum()) * 2)}


def fault_of(img: np.ndarray) -> str | None:
    if img.shape[0] < 1 or img.shape[1] < 2 or tuple(int(v) for v in img[0, 1]) != SIGNATURE:
        return None
    code = int(img[0, 0, 0])
    return next((name for name, c in FAULTS.items() if c == code), None)


class ImageStatsParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    delay_ms: float = 0.0  # fixed cost per batch
    per_item_ms: float = 0.0  # extra cost per item in the batch


class StatsRunner(FakeRunner):
    """y = 2x; a batch sleeps delay + per_item * n. Refuses concurrent use."""

    def __init__(self, delay_s: float, per_item_s: float):
        super().__init__(delay_s)
        self.per_item_s = per_item_s

    def compute(self, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        x, codes = feed["x"], set(feed["fault"].tolist())
        cost = self.delay_s + self.per_item_s * len(x) + (SLOW_S if FAULTS["slow"] in codes else 0.0)
        if cost:
            time.sleep(cost)
        if FAULTS["kill_instance"] in codes:
            raise WorkerKilled("injected: instance thread killed")
        if FAULTS["run"] in codes:
            raise RuntimeError("injected predictor failure")
        return [x * 2]


class ImageStatsOp(Op):
    Params = ImageStatsParams
    input_kind = "image"
    needs_model = False
    pad_unit = "pixels"  # a batch counts as padded to its largest image, as collate reports it

    def create_runners(self, count: int) -> list[StatsRunner]:
        self.runners = [
            StatsRunner(self.params.delay_ms / 1000.0, self.params.per_item_ms / 1000.0) for _ in range(count)
        ]
        return self.runners

    def preprocess(self, payload: np.ndarray) -> tuple[int, int, float, str | None]:
        payload = to_bgr(payload)
        fault = fault_of(payload)
        if fault == "overloaded":
            raise Overloaded("injected: the op refused the item (overloaded)")
        return (int(payload.shape[1]), int(payload.shape[0]), float(np.float32(payload[0].sum())), fault)

    def pad_extent(self, item):
        return (item[1], item[0])  # (h, w)

    def collate(self, items):
        x = np.array([it[2] for it in items], dtype=np.float32)
        codes = np.array([FAULTS.get(it[3], 0) for it in items], dtype=np.int32)
        return [
            SubBatch(
                indices=list(range(len(items))),
                feed={"x": x, "fault": codes},
                real_units=sum(it[0] * it[1] for it in items),
                padded_units=len(items) * max(it[1] for it in items) * max(it[0] for it in items),
            )
        ]

    def uncollate(self, sub, outputs):
        return [outputs[0][i] for i in range(len(sub.indices))]

    def postprocess(self, item, output):
        if item[3] == "postprocess":
            raise ValueError("injected postprocess failure")
        return {"w": item[0], "h": item[1], "sum2": float(output)}

    def warmup_items(self):
        return [(2, 2, 1.0, None)]


def stats_config_dict(
    name: str, *, max_inputs: int, max_body_size: int, max_image_pixels: int | None = None
) -> dict[str, Any]:
    """Config dict (for ``serving.config.parse_config``) of a one-op ImageStatsOp pipeline
    with no model cost: what the in-process HTTP tests serve."""
    config: dict[str, Any] = {
        "name": name,
        "max_inputs_per_request": max_inputs,
        "dag": {"request_timeout_ms": 10000, "max_queue_size": 64},
        "op": {
            "stats": {
                "class": "tests.support.image_fakes:ImageStatsOp",
                "local_service_conf": {"max_batch_size": 4, "max_queue_delay": 1, "max_body_size": max_body_size},
            }
        },
    }
    if max_image_pixels is not None:
        config["max_image_pixels"] = max_image_pixels
    return config


def image_config(
    *,
    name: str = "img",
    delay_ms: float = 10,
    per_item_ms: float = 1,
    max_batch_size: int = 16,
    max_queue_delay: float = 5,
    instance_num: int = 1,
    concurrency: int = 2,
    request_timeout_ms: int = 10000,
    max_queue_size: int = 256,
    worker_num: int = 8,
    max_body_size: int = 1 << 20,
    max_image_pixels: int = 4_000_000,
    max_inputs_per_request: int = 8,
    extra: str = "",
    op_class: str = "tests.support.image_fakes:ImageStatsOp",
    params: dict[str, Any] | None = None,
    service: dict[str, Any] | None = None,
) -> str:
    """YAML text of a one-op image pipeline built on ImageStatsOp (or ``op_class``,
    with ``params`` added to its params and ``service`` to its local_service_conf)."""
    op_params = json.dumps({"delay_ms": delay_ms, "per_item_ms": per_item_ms, **(params or {})})
    more_service = "".join(f"\n      {k}: {json.dumps(v)}" for k, v in (service or {}).items())
    return f"""\
name: {name}
worker_num: {worker_num}
max_image_pixels: {max_image_pixels}
max_inputs_per_request: {max_inputs_per_request}
{extra}
dag: {{request_timeout_ms: {request_timeout_ms}, max_queue_size: {max_queue_size}}}
op:
  stats:
    class: {op_class}
    params: {op_params}
    local_service_conf:
      max_batch_size: {max_batch_size}
      max_queue_delay: {max_queue_delay}
      instance_num: {instance_num}
      concurrency: {concurrency}
      max_body_size: {max_body_size}{more_service}
"""
