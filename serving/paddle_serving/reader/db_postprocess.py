"""DB (Differentiable Binarization) text detection's post-processing as Paddle Serving 0.9 does it: the
probability map thresholded, each contour's minimum-area box scored on the map, expanded ("unclipped") by
``area * unclip_ratio / perimeter`` with pyclipper (a dependency already, for the OCR ops), boxed again and
scaled back to the image. Boxes come out int16, as there; ``params['min_size']`` is ignored (3, as there).

The polygon's area and perimeter are computed as GEOS (shapely) computes them, in the same order of operations,
so the unclip distance is the same float without importing shapely."""

import math
from collections.abc import Mapping, Sequence
from typing import Any

import cv2
import numpy as np
import pyclipper

from serving.paddle_serving.reader.types import Array


def ring_area_and_length(points: Array) -> tuple[float, float]:
    """The area and perimeter of the closed polygon through ``points`` (N x 2), as shapely's ``Polygon(points)``
    gives them: GEOS's shoelace relative to the first x, and the sum of ``sqrt(dx*dx + dy*dy)``."""
    xs = [float(x) for x in points[:, 0]] + [float(points[0, 0])]
    ys = [float(y) for y in points[:, 1]] + [float(points[0, 1])]
    n = len(xs)
    if n < 4:
        return 0.0, 0.0
    x0 = xs[0]
    twice_area = 0.0
    for i in range(1, n - 1):
        twice_area += (xs[i] - x0) * (ys[i - 1] - ys[i + 1])
    length = 0.0
    for i in range(1, n):
        dx = xs[i] - xs[i - 1]
        dy = ys[i] - ys[i - 1]
        length += math.sqrt(dx * dx + dy * dy)
    return abs(twice_area / 2.0), length


def mini_box(contour: Array) -> tuple[list[Array], float]:
    """The minimum-area rectangle of ``contour``: its corners as top-left, top-right, bottom-right, bottom-left
    (Paddle Serving's order: the two leftmost, by a stable sort on x, then by y), and its shorter side."""
    rect = cv2.minAreaRect(contour)
    points = sorted(cv2.boxPoints(rect), key=lambda point: point[0])
    top_left, bottom_left = (points[0], points[1]) if points[1][1] > points[0][1] else (points[1], points[0])
    top_right, bottom_right = (points[2], points[3]) if points[3][1] > points[2][1] else (points[3], points[2])
    return [top_left, top_right, bottom_right, bottom_left], min(rect[1])


def box_score(bitmap: Array, box: Array) -> float:
    """The mean of ``bitmap`` inside the polygon ``box`` (N x 2, float), over the box's bounding window."""
    h, w = bitmap.shape[:2]
    box = box.copy()
    xmin = np.clip(np.floor(box[:, 0].min()).astype(np.int32), 0, w - 1)
    xmax = np.clip(np.ceil(box[:, 0].max()).astype(np.int32), 0, w - 1)
    ymin = np.clip(np.floor(box[:, 1].min()).astype(np.int32), 0, h - 1)
    ymax = np.clip(np.ceil(box[:, 1].max()).astype(np.int32), 0, h - 1)
    mask = np.zeros((ymax - ymin + 1, xmax - xmin + 1), dtype=np.uint8)
    box[:, 0] = box[:, 0] - xmin
    box[:, 1] = box[:, 1] - ymin
    cv2.fillPoly(mask, [box.reshape(-1, 2).astype(np.int32)], 1)
    score: float = cv2.mean(bitmap[ymin : ymax + 1, xmin : xmax + 1], mask)[0]
    return score


class DBPostProcess:
    """``params``: ``thresh`` (binarization), ``box_thresh`` (a box's least mean score), ``max_candidates``
    (contours looked at) and ``unclip_ratio``. Call with the model's map ``pred`` (N x 1 x H x W) and one
    ``(ratio_h, ratio_w)`` per image (resized / original): a list, per image, of an int16 array
    (boxes x 4 x 2, x then y, in the original image) or, where no box is left, an empty list."""

    min_size = 3

    def __init__(self, params: Mapping[str, Any]) -> None:
        self.thresh = params["thresh"]
        self.box_thresh = params["box_thresh"]
        self.max_candidates = params["max_candidates"]
        self.unclip_ratio = params["unclip_ratio"]

    def unclip(self, box: Array) -> Array:
        """``box`` expanded by ``area * unclip_ratio / perimeter`` (pyclipper, round joins)."""
        area, length = ring_area_and_length(np.asarray(box))
        distance = area * self.unclip_ratio / length
        offset = pyclipper.PyclipperOffset()
        offset.AddPath(box, pyclipper.JT_ROUND, pyclipper.ET_CLOSEDPOLYGON)
        return np.array(offset.Execute(distance))

    def boxes_from_bitmap(self, pred: Array, bitmap: Array, dest_width: int, dest_height: int) -> tuple[Array, Array]:
        """Boxes (int16, candidates x 4 x 2, zero where a candidate was dropped) and their scores (float32)
        found in one binarized map, scaled to ``dest_width`` x ``dest_height``."""
        height, width = bitmap.shape
        found = cv2.findContours((bitmap * 255).astype(np.uint8), cv2.RETR_LIST, cv2.CHAIN_APPROX_SIMPLE)
        contours = found[-2]
        count = min(len(contours), self.max_candidates)
        boxes = np.zeros((count, 4, 2), dtype=np.int16)
        scores = np.zeros((count,), dtype=np.float32)
        for index in range(count):
            corners, short_side = mini_box(contours[index])
            if short_side < self.min_size:
                continue
            points = np.array(corners)
            score = box_score(pred, points.reshape(-1, 2))
            if self.box_thresh > score:
                continue
            corners, short_side = mini_box(self.unclip(points).reshape(-1, 1, 2))
            if short_side < self.min_size + 2:
                continue
            box = np.array(corners)
            box[:, 0] = np.clip(np.round(box[:, 0] / width * dest_width), 0, dest_width)
            box[:, 1] = np.clip(np.round(box[:, 1] / height * dest_height), 0, dest_height)
            boxes[index, :, :] = box.astype(np.int16)
            scores[index] = score
        return boxes, scores

    def __call__(self, pred: Array, ratio_list: Sequence[Sequence[float]]) -> list[Array | list[Array]]:
        pred = pred[:, 0, :, :]
        segmentation = pred > self.thresh
        height, width = pred.shape[-2:]
        result: list[Array | list[Array]] = []
        for batch_index in range(pred.shape[0]):
            found, scores = self.boxes_from_bitmap(pred[batch_index], segmentation[batch_index], width, height)
            kept = [found[k] for k in range(len(found)) if scores[k] > self.box_thresh]
            if not kept:
                result.append([])
                continue
            boxes = np.array(kept)
            ratio_h, ratio_w = ratio_list[batch_index]
            boxes[:, :, 0] = boxes[:, :, 0] / ratio_w
            boxes[:, :, 1] = boxes[:, :, 1] / ratio_h
            result.append(boxes)
        return result

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(thresh={self.thresh}, box_thresh={self.box_thresh}, "
            f"max_candidates={self.max_candidates}, unclip_ratio={self.unclip_ratio}, min_size={self.min_size})"
        )
