"""The corners of OpenCV's minimum-area rectangle in PaddleOCR's order (top-left,
top-right, bottom-right, bottom-left): the step ``DBPostProcess.get_mini_boxes``
(``ppocr/postprocess/db_postprocess.py``) and ``get_minarea_rect_crop``
(``tools/infer/utility.py``) of PaddleOCR 2.10 each write out, written once here.
Copyright (c) 2020 PaddlePaddle Authors, Apache License 2.0; ported so that no
Paddle is needed (ops/ppocr/__init__.py)."""

from __future__ import annotations

from typing import Any

import cv2


def ordered_box_points(bounding_box: Any) -> list[Any]:
    """``cv2.boxPoints(bounding_box)`` ordered as PaddleOCR orders them."""
    points = sorted(list(cv2.boxPoints(bounding_box)), key=lambda x: x[0])
    index_1, index_2, index_3, index_4 = 0, 1, 2, 3
    if points[1][1] > points[0][1]:
        index_1 = 0
        index_4 = 1
    else:
        index_1 = 1
        index_4 = 0
    if points[3][1] > points[2][1]:
        index_2 = 2
        index_3 = 3
    else:
        index_2 = 3
        index_3 = 2
    return [points[index_1], points[index_2], points[index_3], points[index_4]]
