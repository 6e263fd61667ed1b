"""Ported from PaddleOCR 2.10.0 ``tools/infer/predict_det.py`` (``TextDetector.order_points_clockwise``,
``pad_polygons``, ``clip_det_res``, ``filter_tag_det_res``, ``filter_tag_det_res_only_clip``) and
``tools/infer/predict_system.py`` (``sorted_boxes``). Copyright (c) 2020 PaddlePaddle Authors,
Apache License 2.0 (http://www.apache.org/licenses/LICENSE-2.0).

Ported because ``tools.infer`` imports Paddle, which a GPU host running ``engine: torch``
does not carry. ``TextDetector``'s methods use no instance state: here they are plain
functions; their bodies are PaddleOCR's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def order_points_clockwise(pts: np.ndarray) -> np.ndarray:
    rect = np.zeros((4, 2), dtype="float32")
    s = pts.sum(axis=1)
    rect[0] = pts[np.argmin(s)]
    rect[2] = pts[np.argmax(s)]
    tmp = np.delete(pts, (np.argmin(s), np.argmax(s)), axis=0)
    diff = np.diff(np.array(tmp), axis=1)
    rect[1] = tmp[np.argmin(diff)]
    rect[3] = tmp[np.argmax(diff)]
    return rect


def pad_polygons(polygon: np.ndarray, max_points: int) -> np.ndarray:
    padding_size = max_points - len(polygon)
    if padding_size == 0:
        return polygon
    last_point = polygon[-1]
    padding = np.repeat([last_point], padding_size, axis=0)
    return np.vstack([polygon, padding])


def clip_det_res(points: np.ndarray, img_height: int, img_width: int) -> np.ndarray:
    for pno in range(points.shape[0]):
        points[pno, 0] = int(min(max(points[pno, 0], 0), img_width - 1))
        points[pno, 1] = int(min(max(points[pno, 1], 0), img_height - 1))
    return points


def filter_tag_det_res(dt_boxes: Any, image_shape: Sequence[int]) -> np.ndarray:
    img_height, img_width = image_shape[0:2]
    dt_boxes_new = []
    for box in dt_boxes:
        if type(box) is list:
            box = np.array(box)
        box = order_points_clockwise(box)
        box = clip_det_res(box, img_height, img_width)
        rect_width = int(np.linalg.norm(box[0] - box[1]))
        rect_height = int(np.linalg.norm(box[0] - box[3]))
        if rect_width <= 3 or rect_height <= 3:
            continue
        dt_boxes_new.append(box)
    dt_boxes = np.array(dt_boxes_new)
    return dt_boxes


def filter_tag_det_res_only_clip(dt_boxes: Any, image_shape: Sequence[int]) -> np.ndarray:
    img_height, img_width = image_shape[0:2]
    dt_boxes_new = []
    for box in dt_boxes:
        if type(box) is list:
            box = np.array(box)
        box = clip_det_res(box, img_height, img_width)
        dt_boxes_new.append(box)

    if len(dt_boxes_new) > 0:
        max_points = max(len(polygon) for polygon in dt_boxes_new)
        dt_boxes_new = [pad_polygons(polygon, max_points) for polygon in dt_boxes_new]

    dt_boxes = np.array(dt_boxes_new)
    return dt_boxes


def sorted_boxes(dt_boxes: np.ndarray) -> list[np.ndarray]:
    """
    Sort text boxes in order from top to bottom, left to right
    args:
        dt_boxes(array):detected text boxes with shape [4, 2]
    return:
        sorted boxes(array) with shape [4, 2]
    """
    num_boxes = dt_boxes.shape[0]
    sorted_boxes = sorted(dt_boxes, key=lambda x: (x[0][1], x[0][0]))
    _boxes = list(sorted_boxes)

    for i in range(num_boxes - 1):
        for j in range(i, -1, -1):
            if abs(_boxes[j + 1][0][1] - _boxes[j][0][1]) < 10 and (_boxes[j + 1][0][0] < _boxes[j][0][0]):
                tmp = _boxes[j]
                _boxes[j] = _boxes[j + 1]
                _boxes[j + 1] = tmp
            else:
                break
    return _boxes
