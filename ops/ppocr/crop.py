"""Ported from PaddleOCR 2.10.0 ``tools/infer/utility.py`` (``get_rotate_crop_image``,
``get_minarea_rect_crop``). Copyright (c) 2020 PaddlePaddle Authors, Apache License 2.0
(http://www.apache.org/licenses/LICENSE-2.0).

Ported because ``tools.infer`` imports Paddle, which a GPU host running ``engine: torch``
does not carry. The bodies are PaddleOCR's.
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np

from ops.ppocr.quad import ordered_box_points


def get_rotate_crop_image(img: np.ndarray, points: np.ndarray) -> np.ndarray:
    """
    img_height, img_width = img.shape[0:2]
    left = int(np.min(points[:, 0]))
    right = int(np.max(points[:, 0]))
    top = int(np.min(points[:, 1]))
    bottom = int(np.max(points[:, 1]))
    img_crop = img[top:bottom, left:right, :].copy()
    points[:, 0] = points[:, 0] - left
    points[:, 1] = points[:, 1] - top
    """
    assert len(points) == 4, "shape of points must be 4*2"
    img_crop_width = int(max(np.linalg.norm(points[0] - points[1]), np.linalg.norm(points[2] - points[3])))
    img_crop_height = int(max(np.linalg.norm(points[0] - points[3]), np.linalg.norm(points[1] - points[2])))
    # PaddleOCR writes np.float32([...]): the same float32 array
    pts_std = np.array(
        [
            [0, 0],
            [img_crop_width, 0],
            [img_crop_width, img_crop_height],
            [0, img_crop_height],
        ],
        dtype=np.float32,
    )
    M = cv2.getPerspectiveTransform(points, pts_std)
    dst_img = cv2.warpPerspective(
        img,
        M,
        (img_crop_width, img_crop_height),
        borderMode=cv2.BORDER_REPLICATE,
        flags=cv2.INTER_CUBIC,
    )
    dst_img_height, dst_img_width = dst_img.shape[0:2]
    if dst_img_height * 1.0 / dst_img_width >= 1.5:
        dst_img = np.rot90(dst_img)
    return dst_img


def get_minarea_rect_crop(img: np.ndarray, points: Any) -> np.ndarray:
    bounding_box = cv2.minAreaRect(np.array(points).astype(np.int32))
    box = ordered_box_points(bounding_box)
    crop_img = get_rotate_crop_image(img, np.array(box))
    return crop_img
