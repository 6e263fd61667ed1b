"""Text direction classification (0 / 180 degrees) between det and rec.

Hooks:
  expand      det output {"image", "boxes", "box_type"} -> crops (as
              ``predict_system.py``: ``get_rotate_crop_image`` for quads,
              ``get_minarea_rect_crop`` for polygons)
  preprocess  PaddleOCR's cls ``resize_norm_img`` to ``cls_image_shape``
              (3, 48, 192): every item has the same shape, so collate is a stack
  postprocess PaddleOCR's ``ClsPostProcess`` (ported in ops/ppocr); a crop labelled '180' with score
              > ``cls_thresh`` is rotated by 180 degrees
  merge       {"image", "boxes", "box_type", "crops", "angles": [[label, score]]}
  agree       (shadow traffic, when cls is a sink) the det op's rule for the
              boxes, and the same angle label per box
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from ops.image import BOX_AGREE_PX, boxes_agree, check_crop, crop_boxes, pad_batch, resize_norm_crop
from serving.op import Op, OpContext, SubBatch

logger = logging.getLogger(__name__)


class ClsParams(BaseModel):
    """``op.<cls>.params`` -- defaults are PaddleOCR 2.10's."""

    model_config = ConfigDict(extra="forbid")

    cls_thresh: float = Field(0.9, ge=0, le=1)
    cls_image_shape: tuple[int, int, int] = (3, 48, 192)
    label_list: list[str] = Field(default_factory=lambda: ["0", "180"])

    @field_validator("cls_image_shape")
    @classmethod
    def _shape(cls, value: tuple[int, int, int]) -> tuple[int, int, int]:
        if value[0] not in (1, 3) or value[1] < 8 or value[2] < 8:
            raise ValueError(f"expected (channels 1|3, height >= 8, width >= 8), got {value}")
        return value

    @field_validator("label_list")
    @classmethod
    def _labels(cls, value: list[str]) -> list[str]:
        if len(value) < 2:
            raise ValueError("need at least two labels")
        return value


@dataclass
class ClsItem:
    crop: np.ndarray  # the BGR crop (rotated in postprocess if needed)
    image: np.ndarray  # float32 (C, H, w) normalized, w <= cls_image_shape width


class OcrClsOp(Op):
    Params: ClassVar[type[BaseModel]] = ClsParams
    pad_unit: ClassVar[str | None] = "pixels"

    def __init__(self, ctx: OpContext):
        super().__init__(ctx)
        self._post: Any = None

    def load(self) -> None:
        from ops.ppocr.cls_postprocess import ClsPostProcess

        self._post = ClsPostProcess(label_list=list(self.params.label_list))

    def _require_loaded(self) -> None:
        if self._post is None:
            self.load()

    def warmup_items(self) -> list[ClsItem]:
        c, h, w = self.params.cls_image_shape
        return [ClsItem(np.zeros((h, w, c), np.uint8), np.zeros((c, h, w), np.float32))]

    # ---- per request --------------------------------------------------
    @staticmethod
    def _upstream(inputs: Mapping[str, Any], op_name: str) -> Mapping[str, Any]:
        if len(inputs) != 1:
            raise ValueError(f"op {op_name!r} expects exactly one upstream op (ocr_det), got {sorted(inputs)}")
        value = next(iter(inputs.values()))
        if not isinstance(value, Mapping) or "boxes" not in value or "image" not in value:
            raise ValueError(f"op {op_name!r} expects an ocr_det output with 'image' and 'boxes'")
        return value

    def expand(self, inputs: Mapping[str, Any]) -> Sequence[Any]:
        det = self._upstream(inputs, self.name)
        return crop_boxes(det["image"], det["boxes"], det.get("box_type", "quad"))

    def merge(self, inputs: Mapping[str, Any], results: list[Any]) -> Any:
        det = self._upstream(inputs, self.name)
        return {
            "image": det["image"],
            "boxes": list(det["boxes"]),
            "box_type": det.get("box_type", "quad"),
            "crops": [r[0] for r in results],
            "angles": [[r[1], r[2]] for r in results],
        }

    def agree(self, primary: Any, shadow: Any) -> bool:
        """Same boxes (each corner within ``BOX_AGREE_PX``) and the same angle label per box."""
        if not all(isinstance(v, Mapping) and "boxes" in v and "angles" in v for v in (primary, shadow)):
            return super().agree(primary, shadow)
        labels = [[angle[0] for angle in out["angles"]] for out in (primary, shadow)]
        return labels[0] == labels[1] and boxes_agree(primary["boxes"], shadow["boxes"], BOX_AGREE_PX)

    # ---- per item -------------------------------------------------------
    def preprocess(self, payload: Any) -> ClsItem:
        crop = check_crop(payload)
        return ClsItem(crop, resize_norm_crop(crop, self.params.cls_image_shape))

    def postprocess(self, item: ClsItem, output: Any) -> tuple[np.ndarray, str, float]:
        import cv2

        self._require_loaded()
        probs = np.asarray(output[0] if isinstance(output, (list, tuple)) else output)
        label, score = self._post(probs.reshape(1, -1))[0]
        score = float(score)
        crop = item.crop
        if "180" in str(label) and score > self.params.cls_thresh:
            crop = cv2.rotate(crop, 1)  # cv2.ROTATE_180
        return crop, str(label), score

    def pad_extent(self, item: ClsItem) -> tuple[int, int]:
        """Every crop is padded to the model's (height, width)."""
        _, h, w = self.params.cls_image_shape
        return h, w

    # ---- per batch --------------------------------------------------------
    def collate(self, items: Sequence[ClsItem]) -> list[SubBatch]:
        if not items:
            return []
        c, h, w = self.params.cls_image_shape
        feed = pad_batch([it.image for it in items], (c, h, w))
        real = sum(it.image.shape[2] for it in items) * h
        return [
            SubBatch(
                indices=list(range(len(items))), feed={"x": feed}, real_units=real, padded_units=w * h * len(items)
            )
        ]
