"""What the OCR example does with detected text boxes between det and rec, as Paddle Serving 0.9 does it:
drop small ones (``FilterBoxes``), put them in reading order (``SortedBoxes``), and cut each out of the image
upright (``GetRotateCropImage``)."""

from collections.abc import Iterable, Sequence

import cv2
import numpy as np

from serving.paddle_serving.reader.types import Array


def order_points_clockwise(pts: Array) -> Array:
    """A quadrilateral's four points (4 x 2) as top-left, top-right, bottom-right, bottom-left, float32: the
    two leftmost (by x) ordered by y, then the two rightmost by y (imutils' rule)."""
    by_x = pts[np.argsort(pts[:, 0]), :]
    left, right = by_x[:2, :], by_x[2:, :]
    top_left, bottom_left = left[np.argsort(left[:, 1]), :]
    top_right, bottom_right = right[np.argsort(right[:, 1]), :]
    return np.array([top_left, top_right, bottom_right, bottom_left], dtype="float32")


def clip_to_image(points: Array, img_height: int, img_width: int) -> Array:
    """``points`` (4 x 2) moved inside the image and truncated to whole pixels, in place (and returned)."""
    for pno in range(4):
        points[pno, 0] = int(min(max(points[pno, 0], 0), img_width - 1))
        points[pno, 1] = int(min(max(points[pno, 1], 0), img_height - 1))
    return points


class FilterBoxes:
    """Order and clip each box, and keep those wider than ``width`` and taller than ``height`` (pixels, the
    box's edge lengths truncated). Call with the boxes and the image's shape (height, width first); gives a
    float32 array (boxes x 4 x 2), or an empty float64 array where none is kept, as Paddle Serving does."""

    def __init__(self, width: int, height: int) -> None:
        self.filter_width = width
        self.filter_height = height

    def order_points_clockwise(self, pts: Array) -> Array:
        return order_points_clockwise(pts)

    def clip_det_res(self, points: Array, img_height: int, img_width: int) -> Array:
        return clip_to_image(points, img_height, img_width)

    def __call__(self, dt_boxes: Iterable[Array], image_shape: Sequence[int]) -> Array:
        img_height, img_width = image_shape[0:2]
        kept = []
        for raw in dt_boxes:
            box = clip_to_image(order_points_clockwise(raw), img_height, img_width)
            rect_width = int(np.linalg.norm(box[0] - box[1]))
            rect_height = int(np.linalg.norm(box[0] - box[3]))
            if rect_width > self.filter_width and rect_height > self.filter_height:
                kept.append(box)
        return np.array(kept)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(filter_width={self.filter_width}, filter_height={self.filter_height})"


class SortedBoxes:
    """Boxes (an array, boxes x 4 x 2) in reading order, as a list: by the first point's y then x, then one pass
    swapping neighbours whose first points are within 10 pixels in y and out of order in x."""

    def __call__(self, dt_boxes: Array) -> list[Array]:
        boxes = sorted(dt_boxes, key=lambda box: (box[0][1], box[0][0]))
        for i in range(dt_boxes.shape[0] - 1):
            if abs(boxes[i + 1][0][1] - boxes[i][0][1]) < 10 and boxes[i + 1][0][0] < boxes[i][0][0]:
                boxes[i], boxes[i + 1] = boxes[i + 1], boxes[i]
        return boxes

    def __repr__(self) -> str:
        return type(self).__name__ + "()"


class GetRotateCropImage:
    """The image under a box (4 x 2 float32, clockwise from top-left) warped upright to the box's edge lengths
    (truncated), borders replicated, and turned 90 degrees counter-clockwise when it comes out at least 1.5
    times taller than wide. As in Paddle Serving 0.9, ``points`` is shifted in place to the crop's origin:
    pass a copy to keep the box."""

    def __call__(self, img: Array, points: Array) -> Array:
        left = int(np.min(points[:, 0]))
        right = int(np.max(points[:, 0]))
        top = int(np.min(points[:, 1]))
        bottom = int(np.max(points[:, 1]))
        img_crop = img[top:bottom, left:right, :].copy()
        points[:, 0] = points[:, 0] - left
        points[:, 1] = points[:, 1] - top
        crop_width = int(np.linalg.norm(points[0] - points[1]))
        crop_height = int(np.linalg.norm(points[0] - points[3]))
        target = np.array([[0, 0], [crop_width, 0], [crop_width, crop_height], [0, crop_height]], dtype=np.float32)
        matrix = cv2.getPerspectiveTransform(points, target)
        dst = cv2.warpPerspective(img_crop, matrix, (crop_width, crop_height), borderMode=cv2.BORDER_REPLICATE)
        dst_height, dst_width = dst.shape[0:2]
        if dst_height * 1.0 / dst_width >= 1.5:
            dst = np.rot90(dst)
        return dst

    def __repr__(self) -> str:
        return type(self).__name__ + "()"
