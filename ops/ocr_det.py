"""Text detection (PP-OCR DB models): image -> text boxes in reading order.

Hooks:
  expand      {"input": BGR image} -> [image]
  preprocess  PaddleOCR's DetResizeForTest / NormalizeImage / ToCHWImage (ported
              without Paddle in ops/ppocr, built as ``tools/infer/predict_det.py``
              builds them) -> :class:`DetItem`
  collate     pad images of different sizes to the largest in the sub-batch,
              with padded sides rounded up to ``size_buckets`` (repeating shapes
              for oneDNN); an item joins a sub-batch only while the padding
              ratio stays <= ``max_padding_ratio``
              (with ``local_service_conf.mask_padding``, each item's unpadded size is
              fed as ``x_extent`` and the model masks the padding: an item reads as alone)
  uncollate   each item's probability map cropped back to its own size
  pad_extent  (height, width) after bucket rounding, in pixels: what ``max_batch_units``
              counts (a batch: images x largest height x largest width)
  postprocess ``DBPostProcess`` + ``filter_tag_det_res`` + ``sorted_boxes`` (ops/ppocr) as
              ``predict_system.py`` does -> :class:`DetBoxes` (boxes in
              original-image coordinates, with the normalised image)
  merge       {"image": image, "boxes": [[[x, y] x4], ...], "box_type": "quad"}
  output_for  leaving its process (Ray) for ocr_rec ops only: {"boxes", "box_type",
              "crops"}, the crops rec would cut itself, without the page image
  agree       (shadow traffic) the same number of boxes, each corner within
              ``BOX_AGREE_PX`` of the primary's; the image is the request's own
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from ops.image import (
    BOX_AGREE_PX,
    box_to_list,
    boxes_agree,
    crop_boxes,
    filter_tag_det_res,
    filter_tag_det_res_only_clip,
    pad_batch,
    round_up_to_bucket,
    sorted_boxes,
    to_bgr,
)
from ops.ocr_rec import OcrRecOp
from serving.op import BadRequest, Op, OpContext, SubBatch, extent_input

logger = logging.getLogger(__name__)

DET_STRIDE = 32  # DetResizeForTest rounds sides to multiples of 32


class DetParams(BaseModel):
    """``op.<det>.params`` -- defaults are PaddleOCR 2.10's for PP-OCRv4 det."""

    model_config = ConfigDict(extra="forbid")

    limit_side_len: int = Field(960, ge=32)
    limit_type: Literal["max", "min", "resize_long"] = "max"
    thresh: float = Field(0.3, gt=0, lt=1)
    box_thresh: float = Field(0.6, ge=0, le=1)
    unclip_ratio: float = Field(1.5, gt=0)
    max_candidates: int = Field(1000, ge=1)
    use_dilation: bool = False
    score_mode: Literal["fast", "slow"] = "fast"
    box_type: Literal["quad", "poly"] = "quad"
    mean: tuple[float, float, float] = (0.485, 0.456, 0.406)
    std: tuple[float, float, float] = (0.229, 0.224, 0.225)
    # Padded side lengths (multiples of 32, ascending); sides beyond the last bucket
    # round up to a multiple of bucket_step. Default: no buckets, step 32 -- a lone
    # image is not padded at all and gets PaddleOCR's exact boxes; a batch pads to
    # its largest image. Buckets give oneDNN repeating shapes, but any padding
    # changes DB's output a little (its backbone has global pooling): measured with
    # 64-px buckets, boxes move by up to 4-5 px on some lines (text unchanged).
    size_buckets: list[int] = Field(default_factory=list)
    bucket_step: int = Field(32, ge=32)
    # an item joins a sub-batch only if the sub-batch's padding ratio stays <= this
    max_padding_ratio: float = Field(0.0, ge=0, le=1)
    # "edge" repeats the border pixels (measured: boxes closer to the unpadded
    # result than "zero", which pads with 0 in normalized space = the mean colour)
    pad_mode: Literal["edge", "zero"] = "edge"

    @field_validator("size_buckets")
    @classmethod
    def _buckets(cls, value: list[int]) -> list[int]:
        bad = [v for v in value if v < DET_STRIDE or v % DET_STRIDE]
        if bad:
            raise ValueError(f"bucket sizes must be positive multiples of {DET_STRIDE}, got {bad}")
        return sorted(set(value))

    @field_validator("bucket_step")
    @classmethod
    def _step(cls, value: int) -> int:
        if value % DET_STRIDE:
            raise ValueError(f"must be a multiple of {DET_STRIDE}, got {value}")
        return value


@dataclass
class DetItem:
    """A preprocessed image: normalized CHW tensor + PaddleOCR's shape_list row."""

    image: np.ndarray  # float32 (3, h, w), h and w multiples of 32
    shape: np.ndarray  # [src_h, src_w, ratio_h, ratio_w]
    src_hw: tuple[int, int]  # original image (h, w)
    source: np.ndarray | None = None  # the BGR image itself, handed on to crop from (None in warm-up)


@dataclass
class DetBoxes:
    """One image's result: its boxes in reading order, and the BGR image they lie in."""

    boxes: list[list[list[float]]]
    image: np.ndarray | None


class OcrDetOp(Op):
    Params: ClassVar[type[BaseModel]] = DetParams
    input_kind: ClassVar[str | None] = "image"
    pad_unit: ClassVar[str | None] = "pixels"
    feeds_extents: ClassVar[bool] = True

    def __init__(self, ctx: OpContext):
        super().__init__(ctx)
        # the model masks each page's padding: it takes the pages' unpadded sizes too
        self._feeds_extents = ctx.conf.local_service_conf.mask_padding
        self._pre_ops: Any = None
        self._transform: Any = None
        self._post: Any = None

    # ---- life cycle -------------------------------------------------
    def load(self) -> None:
        from ops.ppocr.db_postprocess import DBPostProcess
        from ops.ppocr.det_preprocess import det_operators, transform

        p = self.params
        self._pre_ops = det_operators(p.limit_side_len, p.limit_type, p.mean, p.std)
        self._transform = transform
        self._post = DBPostProcess(
            thresh=p.thresh,
            box_thresh=p.box_thresh,
            max_candidates=p.max_candidates,
            unclip_ratio=p.unclip_ratio,
            use_dilation=p.use_dilation,
            score_mode=p.score_mode,
            box_type=p.box_type,
        )

    def _require_loaded(self) -> None:
        if self._pre_ops is None:
            self.load()

    def bucket_side(self, side: int) -> int:
        """Padded length for an image side (a multiple of 32)."""
        return round_up_to_bucket(side, self.params.size_buckets, self.params.bucket_step)

    def warmup_items(self) -> list[DetItem]:
        """Items of the padded shapes seen most: one side at the largest bucket
        (limit_type "max" resizes big images so), the other at every bucket.
        Without buckets: the square sizes 320..limit_side_len step 160."""
        sizes = self.params.size_buckets or list(range(320, self.params.limit_side_len + 1, 160))
        if not sizes:
            return []
        top = sizes[-1]
        shapes = sorted({(top, s) for s in sizes} | {(s, top) for s in sizes})
        return [DetItem(np.zeros((3, h, w), np.float32), np.array([h, w, 1.0, 1.0]), (h, w)) for h, w in shapes]

    # ---- per request --------------------------------------------------
    @staticmethod
    def request_image(inputs: Mapping[str, Any]) -> np.ndarray:
        value = inputs.get("input")
        if value is None:
            raise BadRequest("ocr_det needs an image input")
        return to_bgr(value)

    def expand(self, inputs: Mapping[str, Any]) -> Sequence[Any]:
        return [self.request_image(inputs)]

    def merge(self, inputs: Mapping[str, Any], results: list[DetBoxes]) -> Any:
        # expand gives one image, so one result: it carries the image normalised
        # once in expand (a gray or BGRA upload is not converted a second time)
        (found,) = results
        return {"image": found.image, "boxes": found.boxes, "box_type": self.params.box_type}

    def output_for(self, output: Any, consumers: Sequence[type[Op]]) -> Any:
        """For rec ops only, the crops in place of the page: a fraction of its pixels
        to copy, and rec reads given crops as the ones it would cut (``upstream_crops``)."""
        if not consumers or not all(issubclass(c, OcrRecOp) for c in consumers):
            return output
        crops = crop_boxes(output["image"], output["boxes"], output["box_type"])
        return {"boxes": output["boxes"], "box_type": output["box_type"], "crops": crops}

    def agree(self, primary: Any, shadow: Any) -> bool:
        """Same boxes in the same order, each corner within ``BOX_AGREE_PX``."""
        if isinstance(primary, Mapping) and isinstance(shadow, Mapping) and "boxes" in primary and "boxes" in shadow:
            return boxes_agree(primary["boxes"], shadow["boxes"], BOX_AGREE_PX)
        return super().agree(primary, shadow)

    # ---- per item -------------------------------------------------------
    def preprocess(self, payload: Any) -> DetItem:
        self._require_loaded()
        img = to_bgr(payload)
        try:
            out = self._transform({"image": img}, self._pre_ops)
        except Exception as exc:  # noqa: BLE001 - whatever PaddleOCR's transforms raise, the image is at fault
            raise BadRequest(f"cannot preprocess image {img.shape[1]}x{img.shape[0]}: {exc}") from None
        if out is None or out[0] is None:
            raise BadRequest(f"cannot resize image {img.shape[1]}x{img.shape[0]} for detection")
        tensor, shape = out
        return DetItem(np.ascontiguousarray(tensor, dtype=np.float32), np.asarray(shape), tuple(img.shape[:2]), img)

    def postprocess(self, item: DetItem, output: Any) -> DetBoxes:
        self._require_loaded()
        prob = output[0] if isinstance(output, (list, tuple)) else output
        if prob.ndim == 3:
            prob = prob[None]
        post = self._post({"maps": prob}, np.asarray([item.shape]))
        points = post[0]["points"]
        if self.params.box_type == "poly":
            boxes = filter_tag_det_res_only_clip(points, item.src_hw)
        else:
            boxes = filter_tag_det_res(points, item.src_hw)
        if len(boxes) == 0:
            return DetBoxes([], item.source)
        return DetBoxes([box_to_list(b) for b in sorted_boxes(np.asarray(boxes))], item.source)

    def pad_extent(self, item: DetItem) -> tuple[int, int]:
        """(height, width) rounded up to the size buckets: what collate pads the image to at least."""
        _, h, w = item.image.shape
        return self.bucket_side(h), self.bucket_side(w)

    # ---- per batch --------------------------------------------------------
    def collate(self, items: Sequence[DetItem]) -> list[SubBatch]:
        """Greedy packing, largest first: an item joins the first sub-batch whose
        padding ratio stays <= ``max_padding_ratio`` with it, else opens a new one."""
        order = sorted(range(len(items)), key=lambda i: -items[i].image.shape[1] * items[i].image.shape[2])
        groups: list[list[int]] = []
        shapes: list[tuple[int, int]] = []
        reals: list[int] = []
        limit = self.params.max_padding_ratio
        for i in order:
            _, h, w = items[i].image.shape
            bh, bw = self.pad_extent(items[i])
            placed = False
            for g, (gh, gw) in enumerate(shapes):
                nh, nw = max(gh, bh), max(gw, bw)
                real = reals[g] + h * w
                if 1 - real / (nh * nw * (len(groups[g]) + 1)) <= limit + 1e-9:
                    groups[g].append(i)
                    shapes[g] = (nh, nw)
                    reals[g] = real
                    placed = True
                    break
            if not placed:
                groups.append([i])
                shapes.append((bh, bw))
                reals.append(h * w)
        subs = []
        for idx, (ph, pw), real in zip(groups, shapes, reals):
            idx = sorted(idx)
            feed = {"x": pad_batch([items[i].image for i in idx], (3, ph, pw), mode=self.params.pad_mode)}
            if self._feeds_extents:
                feed[extent_input("x")] = np.asarray([items[i].image.shape[1:] for i in idx], dtype=np.int64)
            subs.append(
                SubBatch(
                    indices=idx,
                    feed=feed,
                    real_units=real,
                    padded_units=ph * pw * len(idx),
                    meta=[items[i].image.shape[1:] for i in idx],
                )
            )
        return subs

    def uncollate(self, sub: SubBatch, outputs: list[np.ndarray]) -> list[Any]:
        prob = outputs[0]
        return [prob[k : k + 1, :, :h, :w] for k, (h, w) in enumerate(sub.meta)]
