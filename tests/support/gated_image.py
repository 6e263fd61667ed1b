"""An image op that holds each request until a test lets it go, so that a
test keeps requests in flight (admission, the decode budget) for as long as
it needs, without timing: ``preprocess`` normalises the decoded image as the
OCR ops do (``ops.image.to_bgr``), then waits until ``<gate>/go`` exists."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict

from ops.image import to_bgr
from serving.op import Op, SubBatch
from tests.support.engine_fakes import FakeRunner

GATE_TIMEOUT_S = 60.0


class GatedImageParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    gate: str  # a directory; requests wait in preprocess until <gate>/go exists


class GatedImageOp(Op):
    """Answers ``{"w", "h"}`` of the image once the gate opens."""

    Params = GatedImageParams
    input_kind = "image"
    needs_model = False

    def create_runners(self, count: int) -> list[FakeRunner]:
        return [FakeRunner() for _ in range(count)]

    def preprocess(self, payload: np.ndarray) -> tuple[int, int]:
        img = to_bgr(payload)
        go = Path(self.params.gate) / "go"
        end = time.monotonic() + GATE_TIMEOUT_S
        while not go.exists() and time.monotonic() < end:
            time.sleep(0.01)
        return int(img.shape[1]), int(img.shape[0])

    def collate(self, items: list[tuple[int, int]]) -> list[SubBatch]:
        x = np.array([w for w, _ in items], dtype=np.float32)
        return [SubBatch(indices=list(range(len(items))), feed={"x": x})]

    def uncollate(self, sub: SubBatch, outputs: list[np.ndarray]) -> list[float]:
        return [float(v) for v in outputs[0]]

    def postprocess(self, item: tuple[int, int], output: float) -> dict[str, int]:
        return {"w": item[0], "h": item[1]}
