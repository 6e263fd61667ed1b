"""Shared image helpers for the OCR ops: normalisation, validation, crops, box order.

The HTTP layer hands a source op the image as decoded (``cv2.IMREAD_UNCHANGED``);
:func:`to_bgr` normalises it as PaddleOCR 2.10's ``check_img`` does (gray ->
BGR; BGRA -> composited on white with ``alpha_to_color``'s formula; 16 bit ->
8 bit), block by block: the conversions of a large image hold one uint8 output
and a few MB of float64 temporaries, not float64 copies of the whole image,
with PaddleOCR's values to the byte (tests/unit/test_image_blocks.py). The crop and box helpers are PaddleOCR 2.10's
(``tools/infer/utility.py``, ``predict_det.py``, ``predict_system.py``), ported
without Paddle in :mod:`ops.ppocr` (tests/unit/test_ppocr_port.py holds them to
PaddleOCR's own, to the byte).

Cheap to import: numpy only at module level; cv2 and ops.ppocr lazily.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from serving.op import BadRequest

MIN_IMAGE_SIDE = 2
# shadow agreement of boxes: every coordinate within this many pixels of the primary's,
# the bound tests/unit/test_ocr_ops.py holds a padded det batch to against each image
# alone -- drift that batching alone causes is not a disagreement
BOX_AGREE_PX = 2.0
# pixels per block in the blockwise conversions: float64 temporaries of ~2 MB each
BLOCK_PIXELS = 1 << 18
WHITE = (255, 255, 255)


# ---------------------------------------------------------------------------
# normalising and validating decoded images
# ---------------------------------------------------------------------------
def row_blocks(height: int, width: int, block_pixels: int = BLOCK_PIXELS) -> list[slice]:
    """Row ranges covering ``height`` rows, each of about ``block_pixels`` pixels (at least one row)."""
    rows = max(1, block_pixels // max(width, 1))
    return [slice(start, min(start + rows, height)) for start in range(0, height, rows)]


def _composite(img: np.ndarray, alpha_color: tuple[int, int, int], *, from_16_bit: bool = False) -> np.ndarray:
    """BGRA -> BGR on ``alpha_color`` (RGB): PaddleOCR's ``alpha_to_color``
    (``alpha = a / 255; (c * (1 - alpha) + x * alpha).astype(np.uint8)`` in
    float64), one block of rows at a time into one uint8 output. ``from_16_bit``:
    each block is first reduced as :func:`to_uint8` does."""
    height, width = img.shape[:2]
    out = np.empty((height, width, 3), np.uint8)
    for rows in row_blocks(height, width):
        block = img[rows]
        if from_16_bit:
            block = (block >> 8).astype(np.uint8)
        alpha = block[:, :, 3] / 255
        for channel, colour in ((2, alpha_color[0]), (1, alpha_color[1]), (0, alpha_color[2])):
            out[rows, :, channel] = (colour * (1 - alpha) + block[:, :, channel] * alpha).astype(np.uint8)
    return out


def alpha_to_color(img: np.ndarray, alpha_color: tuple[int, int, int] = WHITE) -> np.ndarray:
    """BGRA -> BGR composited on ``alpha_color`` (RGB), as PaddleOCR does (blockwise, same bytes)."""
    if img.ndim == 3 and img.shape[2] == 4:
        return _composite(img, alpha_color)
    return img


def to_uint8(img: np.ndarray) -> np.ndarray:
    """16 bit -> 8 bit as ``(img >> 8).astype(np.uint8)``, block by block into one output."""
    if img.ndim < 2:  # not an image: to_bgr refuses it next
        return (img >> 8).astype(np.uint8)
    out = np.empty(img.shape, np.uint8)
    for rows in row_blocks(img.shape[0], img.shape[1]):
        out[rows] = img[rows] >> 8
    return out


def to_bgr(img: Any) -> np.ndarray:
    """Normalise a decoded image (gray, BGR, BGRA; uint8 or uint16) to BGR uint8.

    Raises BadRequest for anything that is not an image array.
    """
    import cv2

    if not isinstance(img, np.ndarray):
        raise BadRequest(f"expected an image array, got {type(img).__name__}")
    if img.dtype == np.uint16:
        if img.ndim == 3 and img.shape[2] == 4:  # reduced and composited in one pass
            return check_image(_composite(img, WHITE, from_16_bit=True))
        img = to_uint8(img)
    elif img.dtype != np.uint8:
        if img.dtype.kind == "f" and img.size and np.isfinite(img).all() and img.min() >= 0 and img.max() <= 255:
            img = img.astype(np.uint8)
        else:
            raise BadRequest(f"unsupported image dtype {img.dtype}")
    if img.ndim == 3 and img.shape[2] == 1:
        img = img[:, :, 0]
    if img.ndim == 2:
        img = cv2.cvtColor(img, cv2.COLOR_GRAY2BGR)
    elif img.ndim == 3 and img.shape[2] == 4:
        img = alpha_to_color(img)
    elif not (img.ndim == 3 and img.shape[2] == 3):
        raise BadRequest(f"unsupported image shape {tuple(img.shape)}")
    return check_image(img)


def check_image(img: Any, *, min_side: int = MIN_IMAGE_SIDE) -> np.ndarray:
    """Validate a BGR uint8 (H, W, 3) image; BadRequest if it is not one or is tiny."""
    if not isinstance(img, np.ndarray):
        raise BadRequest(f"expected an image array, got {type(img).__name__}")
    if img.dtype != np.uint8 or img.ndim != 3 or img.shape[2] != 3:
        raise BadRequest(f"expected a BGR uint8 image (H, W, 3), got {img.dtype} {tuple(img.shape)}")
    h, w = img.shape[:2]
    if h < min_side or w < min_side:
        raise BadRequest(f"image too small: {w}x{h} (need at least {min_side}x{min_side})")
    return img


def check_crop(crop: Any, what: str = "text crop") -> np.ndarray:
    """A text crop must be an array of at least 1 x 1 pixels; else BadRequest naming ``what``."""
    if not isinstance(crop, np.ndarray) or crop.ndim < 2 or crop.shape[0] < 1 or crop.shape[1] < 1:
        raise BadRequest(f"degenerate {what} (shape {getattr(crop, 'shape', None)})")
    return crop


# ---------------------------------------------------------------------------
# boxes and crops: PaddleOCR 2.10's own functions, ported without Paddle (ops/ppocr)
# ---------------------------------------------------------------------------
def filter_tag_det_res(dt_boxes: Sequence[Any], image_shape: Sequence[int]) -> np.ndarray:
    """PaddleOCR: order each quad clockwise, clip to the image, drop boxes <= 3 px."""
    from ops.ppocr import det_boxes

    return det_boxes.filter_tag_det_res(dt_boxes, image_shape)


def filter_tag_det_res_only_clip(dt_boxes: Sequence[Any], image_shape: Sequence[int]) -> np.ndarray:
    """PaddleOCR's polygon variant: clip only."""
    from ops.ppocr import det_boxes

    return det_boxes.filter_tag_det_res_only_clip(dt_boxes, image_shape)


def sorted_boxes(dt_boxes: np.ndarray) -> list[np.ndarray]:
    """PaddleOCR's reading order: top to bottom, then left to right within ~10 px rows."""
    from ops.ppocr import det_boxes

    return det_boxes.sorted_boxes(dt_boxes)


def get_rotate_crop_image(img: np.ndarray, points: np.ndarray) -> np.ndarray:
    """PaddleOCR's perspective crop of a quad (tall crops rotated 90 degrees)."""
    from ops.ppocr import crop

    return crop.get_rotate_crop_image(img, points)


def get_minarea_rect_crop(img: np.ndarray, points: Any) -> np.ndarray:
    """PaddleOCR's crop of the minimum-area rectangle around a polygon."""
    from ops.ppocr import crop

    return crop.get_minarea_rect_crop(img, points)


def box_to_list(box: Any) -> list[list[float]]:
    """A box (ndarray or nested list) -> JSON-friendly [[x, y], ...].

    Values are python ints when every coordinate is integral (the usual case:
    PaddleOCR clips quads to whole pixels), else python floats.
    """
    arr = np.asarray(box, dtype=np.float64).reshape(-1, 2)
    if np.all(arr == np.round(arr)):
        return [[int(x), int(y)] for x, y in arr]
    return [[float(x), float(y)] for x, y in arr]


def boxes_agree(a: Sequence[Any], b: Sequence[Any], tol_px: float = BOX_AGREE_PX) -> bool:
    """Same number of boxes, in the same order, each with the same number of
    points and every coordinate within ``tol_px`` pixels of the other's (the
    max-abs-difference the det tests measure box drift with)."""
    try:
        if len(a) != len(b):
            return False
    except TypeError:  # no list of boxes at all (e.g. None)
        return False
    for box_a, box_b in zip(a, b):
        try:
            pa = np.asarray(box_a, dtype=np.float64).reshape(-1, 2)
            pb = np.asarray(box_b, dtype=np.float64).reshape(-1, 2)
        except (TypeError, ValueError):  # not a list of [x, y] points
            return False
        # written so that NaN never agrees
        if pa.shape != pb.shape or not bool(np.all(np.abs(pa - pb) <= tol_px)):
            return False
    return True


def crop_boxes(img: np.ndarray, boxes: Sequence[Any], box_type: str = "quad") -> list[np.ndarray]:
    """Crops for ``boxes`` (as predict_system.py does: quad -> rotate crop, else min-area rect).

    A box that cannot be cropped (degenerate: zero width/height, NaN) raises BadRequest.
    """
    crops = []
    for i, box in enumerate(boxes):
        pts = np.array(box, dtype=np.float32)
        if not np.isfinite(pts).all():
            raise BadRequest(f"box {i} has non-finite coordinates")
        if pts.ndim != 2 or pts.shape[1] != 2 or len(pts) < 4 or (box_type == "quad" and len(pts) != 4):
            raise BadRequest(f"box {i} must be a list of [x, y] points (4 for quads), got shape {pts.shape}")
        if box_type == "quad":
            # cv2 would treat a 0 x 0 output size as "same as the input": refuse it
            w = int(max(np.linalg.norm(pts[0] - pts[1]), np.linalg.norm(pts[2] - pts[3])))
            h = int(max(np.linalg.norm(pts[0] - pts[3]), np.linalg.norm(pts[1] - pts[2])))
            if w < 1 or h < 1:
                raise BadRequest(f"box {i} is degenerate ({w}x{h} px)")
        try:
            crop = get_rotate_crop_image(img, pts) if box_type == "quad" else get_minarea_rect_crop(img, pts)
        except Exception as exc:  # noqa: BLE001 - cv2.error, AssertionError, ZeroDivision...: all bad input
            raise BadRequest(f"cannot crop box {i}: {type(exc).__name__}: {exc}") from None
        if crop.size == 0 or min(crop.shape[:2]) < 1:
            raise BadRequest(f"box {i} gives an empty crop")
        crops.append(crop)
    return crops


def resize_norm_crop(img: np.ndarray, image_shape: Sequence[int], max_width: int | None = None) -> np.ndarray:
    """PaddleOCR's rec/cls ``resize_norm_img`` without the padding step.

    Resizes the crop to height ``imgH`` keeping its aspect ratio (width
    ``ceil(imgH * w / h)``, capped at ``max_width`` -- default ``imgW``) and
    normalises to [-1, 1]. Returns float32 (C, imgH, resized_w); pad on the
    right with zeros to the batch width.
    """
    import cv2

    img_c, img_h, img_w = (int(v) for v in image_shape)
    cap = img_w if max_width is None else int(max_width)
    h, w = img.shape[:2]
    if h < 1 or w < 1:
        raise BadRequest(f"empty crop {w}x{h}")
    ratio = w / float(h)
    if math.ceil(img_h * ratio) > cap:
        resized_w = cap
    else:
        resized_w = int(math.ceil(img_h * ratio))
    resized = cv2.resize(img, (resized_w, img_h)).astype("float32")
    if img_c == 1:
        if resized.ndim == 3:
            raise BadRequest("expected a single-channel crop for a 1-channel model")
    elif resized.ndim != 3 or resized.shape[2] != img_c:
        raise BadRequest(f"expected a {img_c}-channel crop, got shape {tuple(img.shape)}")
    # PaddleOCR's arithmetic (/ 255, - 0.5, / 0.5 in float32), done in place on the
    # HWC array; the one copy is the transpose to CHW
    resized /= 255
    resized -= 0.5
    resized /= 0.5
    if img_c == 1:
        return resized[np.newaxis, :]
    return np.ascontiguousarray(resized.transpose((2, 0, 1)))


def pad_batch(arrays: Sequence[np.ndarray], shape: Sequence[int], mode: str = "zero") -> np.ndarray:
    """Stack (C, h, w) arrays into (N, C, H, W) padded at the bottom/right.

    ``mode`` "zero" pads with 0; "edge" repeats each array's last row/column.
    """
    out = np.zeros((len(arrays), *shape), dtype=np.float32)
    for i, a in enumerate(arrays):
        h, w = a.shape[1], a.shape[2]
        out[i, :, :h, :w] = a
        if mode == "edge":
            if w < shape[2]:
                out[i, :, :h, w:] = a[:, :, w - 1 : w]
            if h < shape[1]:
                out[i, :, h:, :] = out[i, :, h - 1 : h, :]
        elif mode != "zero":
            raise ValueError(f"unknown pad mode {mode!r}")
    return out


def round_up_to_bucket(value: int, buckets: Sequence[int], step: int) -> int:
    """Smallest bucket >= value; above the largest, round up to a multiple of ``step``."""
    for b in buckets:
        if b >= value:
            return int(b)
    return int(math.ceil(value / step) * step)
