"""Ported from PaddleOCR 2.10.0 ``ppocr/data/imaug/operators.py`` (``DetResizeForTest``,
``NormalizeImage``, ``ToCHWImage``, ``KeepKeys``) and ``ppocr/data/imaug/__init__.py``
(``transform``). Copyright (c) 2020 PaddlePaddle Authors, Apache License 2.0
(http://www.apache.org/licenses/LICENSE-2.0).

Ported because importing ``ppocr.data`` imports Paddle, which a GPU host running
``engine: torch`` does not carry. Kept: ``DetResizeForTest`` as ``predict_det.py``
builds it (``limit_side_len`` + ``limit_type`` max / min / resize_long: resize type
0), the padding of images under 64 px (sum of sides). Dropped: resize types 1 and 2
(``image_shape``, ``resize_long`` keys: the ops never pass them) and the PIL-image
branches (the ops hand numpy arrays). The arithmetic is PaddleOCR's, unchanged; where
PaddleOCR exits the process on a failed resize, this raises BadRequest (that image's request).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import cv2
import numpy as np

from serving.op import BadRequest


class DetResizeForTest:
    """Resize so that sides are multiples of 32, as ``limit_type`` says (PaddleOCR's resize type 0)."""

    def __init__(self, limit_side_len: int = 736, limit_type: str = "min") -> None:
        self.limit_side_len = limit_side_len
        self.limit_type = limit_type

    def __call__(self, data: dict[str, Any]) -> dict[str, Any]:
        img = data["image"]
        src_h, src_w, _ = img.shape
        if sum([src_h, src_w]) < 64:
            img = self.image_padding(img)

        img, [ratio_h, ratio_w] = self.resize_image_type0(img)
        data["image"] = img
        data["shape"] = np.array([src_h, src_w, ratio_h, ratio_w])
        return data

    def image_padding(self, im: np.ndarray, value: int = 0) -> np.ndarray:
        h, w, c = im.shape
        im_pad = np.zeros((max(32, h), max(32, w), c), np.uint8) + value
        im_pad[:h, :w, :] = im
        return im_pad

    def resize_image_type0(self, img: np.ndarray) -> tuple[Any, list[Any]]:
        """
        resize image to a size multiple of 32 which is required by the network
        args:
            img(array): array with shape [h, w, c]
        return(tuple):
            img, (ratio_h, ratio_w)
        """
        limit_side_len = self.limit_side_len
        h, w, c = img.shape

        # limit the max side
        if self.limit_type == "max":
            if max(h, w) > limit_side_len:
                if h > w:
                    ratio = float(limit_side_len) / h
                else:
                    ratio = float(limit_side_len) / w
            else:
                ratio = 1.0
        elif self.limit_type == "min":
            if min(h, w) < limit_side_len:
                if h < w:
                    ratio = float(limit_side_len) / h
                else:
                    ratio = float(limit_side_len) / w
            else:
                ratio = 1.0
        elif self.limit_type == "resize_long":
            ratio = float(limit_side_len) / max(h, w)
        else:
            raise Exception("not support limit type, image ")
        resize_h = int(h * ratio)
        resize_w = int(w * ratio)

        resize_h = max(int(round(resize_h / 32) * 32), 32)
        resize_w = max(int(round(resize_w / 32) * 32), 32)

        if int(resize_w) <= 0 or int(resize_h) <= 0:
            return None, [None, None]
        try:
            img = cv2.resize(img, (int(resize_w), int(resize_h)))
        except cv2.error as exc:
            # PaddleOCR prints and calls sys.exit(0) here; a server fails this image's request instead
            raise BadRequest(f"cannot resize a {img.shape} image to {int(resize_w)}x{int(resize_h)}") from exc
        ratio_h = resize_h / float(h)
        ratio_w = resize_w / float(w)
        return img, [ratio_h, ratio_w]


class NormalizeImage:
    """normalize image such as subtract mean, divide std"""

    def __init__(
        self,
        scale: float | None = None,
        mean: Sequence[float] | None = None,
        std: Sequence[float] | None = None,
        order: str = "chw",
    ) -> None:
        # PaddleOCR takes scale as a string to eval ("1./255."); the ops pass the number
        self.scale = np.float32(scale if scale is not None else 1.0 / 255.0)
        mean = mean if mean is not None else [0.485, 0.456, 0.406]
        std = std if std is not None else [0.229, 0.224, 0.225]

        shape = (3, 1, 1) if order == "chw" else (1, 1, 3)
        self.mean = np.array(mean).reshape(shape).astype("float32")
        self.std = np.array(std).reshape(shape).astype("float32")

    def __call__(self, data: dict[str, Any]) -> dict[str, Any]:
        img = data["image"]
        assert isinstance(img, np.ndarray), "invalid input 'img' in NormalizeImage"
        data["image"] = (img.astype("float32") * self.scale - self.mean) / self.std
        return data


class ToCHWImage:
    """convert hwc image to chw image"""

    def __call__(self, data: dict[str, Any]) -> dict[str, Any]:
        img = data["image"]
        data["image"] = img.transpose((2, 0, 1))
        return data


class KeepKeys:
    def __init__(self, keep_keys: Sequence[str]) -> None:
        self.keep_keys = keep_keys

    def __call__(self, data: dict[str, Any]) -> list[Any]:
        data_list = []
        for key in self.keep_keys:
            data_list.append(data[key])
        return data_list


def transform(data: Any, ops: Sequence[Any] | None = None) -> Any:
    """transform"""
    if ops is None:
        ops = []
    for op in ops:
        data = op(data)
        if data is None:
            return None
    return data


def det_operators(limit_side_len: int, limit_type: str, mean: Sequence[float], std: Sequence[float]) -> list[Any]:
    """The operators ``tools/infer/predict_det.py`` builds for DB models (its ``pre_process_list``
    with the det params the ops take), as ``create_operators`` would."""
    return [
        DetResizeForTest(limit_side_len=limit_side_len, limit_type=limit_type),
        NormalizeImage(std=list(std), mean=list(mean), scale=1.0 / 255.0, order="hwc"),
        ToCHWImage(),
        KeepKeys(keep_keys=["image", "shape"]),
    ]
