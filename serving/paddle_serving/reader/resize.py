"""Resizing and cropping with Paddle Serving's size arithmetic (Python ``round``, ``int`` truncation, its
multiple-of-factor rule), so a model sees the same input shape it saw there."""

from collections.abc import Sequence

import cv2
import numpy as np

from serving.paddle_serving.reader.types import Array, ImInfo

_INTERPOLATION_NAMES = {cv2.INTER_LINEAR: "cv2.INTER_LINEAR", None: "None"}


def resize(
    img: Array, target_size: int | tuple[int, int], max_size: int = 2147483647, interpolation: int | None = None
) -> Array:
    """``target_size`` a tuple: the output's (width, height), each at most ``max_size``; otherwise the short
    side becomes ``target_size`` (the long side capped at ``max_size``). A falsy ``interpolation`` (``None``,
    and so ``cv2.INTER_NEAREST``, which is 0) means OpenCV's default, bilinear."""
    if isinstance(target_size, tuple):
        width = min(target_size[0], max_size)
        height = min(target_size[1], max_size)
    else:
        long_side = max(img.shape[0], img.shape[1])
        percent = float(target_size) / min(img.shape[0], img.shape[1])
        if np.round(percent * long_side) > max_size:
            percent = float(max_size) / float(long_side)
        width = int(round(img.shape[1] * percent))
        height = int(round(img.shape[0] * percent))
    if interpolation:
        return cv2.resize(img, (width, height), interpolation=interpolation)
    return cv2.resize(img, (width, height))


def center_crop(img: Array, size: int) -> Array:
    """The central ``size`` x ``size`` window of an HWC image (offsets floor-divided, as Paddle Serving's)."""
    height, width = img.shape[:2]
    top = (height - size) // 2
    left = (width - size) // 2
    return img[top : top + size, left : left + size, :]


class Resize:
    """:func:`resize` as a transform: ``size`` an int (the short side) or a ``(width, height)`` tuple."""

    def __init__(
        self, size: int | tuple[int, int], max_size: int = 2147483647, interpolation: int | None = None
    ) -> None:
        self.size = size
        self.max_size = max_size
        self.interpolation = interpolation

    def __call__(self, img: Array) -> Array:
        return resize(img, self.size, self.max_size, self.interpolation)

    def __repr__(self) -> str:
        interpolation = _INTERPOLATION_NAMES.get(self.interpolation, str(self.interpolation))
        return f"{type(self).__name__}(size={self.size}, max_size={self.max_size}, interpolation={interpolation})"


class CenterCrop:
    """:func:`center_crop` as a transform (``size`` an int: a square crop)."""

    def __init__(self, size: int) -> None:
        self.size = size

    def __call__(self, img: Array) -> Array:
        return center_crop(img, self.size)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(size={self.size})"


def _down_to_multiple(side: int, factor: int, step: int) -> int:
    # Paddle Serving's rule, quirks kept: a side not a multiple of factor goes to factor when it is under
    # 2 * factor, else one step below its floor multiple of `step` (32 for the height whatever factor is)
    if side % factor == 0:
        return side
    if side // factor <= 1:
        return factor
    return (side // step - 1) * step


class ResizeByFactor:
    """Resize an HWC image so both sides are multiples of ``factor`` (DB text detection's input rule), the long
    side first scaled down to ``max_side_len``. As in Paddle Serving 0.9, the height's rounding uses 32 whatever
    ``factor`` is, and a side that would come out 0 or less gives ``(None, (None, None))`` instead of an image."""

    def __init__(self, factor: int = 32, max_side_len: int = 2400) -> None:
        self.factor = factor
        self.max_side_len = max_side_len

    def __call__(self, img: Array) -> Array | tuple[None, tuple[None, None]]:
        h, w, _ = img.shape
        ratio = 1.0
        if max(h, w) > self.max_side_len:
            ratio = float(self.max_side_len) / (h if h > w else w)
        resize_h = _down_to_multiple(int(h * ratio), self.factor, 32)
        resize_w = _down_to_multiple(int(w * ratio), self.factor, self.factor)
        if resize_w <= 0 or resize_h <= 0:
            return None, (None, None)
        return cv2.resize(img, (resize_w, resize_h))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(factor={self.factor}, max_side_len={self.max_side_len})"


class DetectionResize:
    """Resize in the Detection* form. ``keep_ratio``: one scale, the short side to ``min(target_size)`` unless
    the long side would pass ``max(target_size)``; otherwise ``target_size`` is (height, width). Sets
    ``im_info['im_shape']`` and ``im_info['scale_factor']`` (float32, [y, x]) where ``im_info`` is given."""

    def __init__(
        self, target_size: int | Sequence[int], keep_ratio: bool = True, interpolation: int = cv2.INTER_LINEAR
    ) -> None:
        self.target_size: Sequence[int] = [target_size, target_size] if isinstance(target_size, int) else target_size
        self.keep_ratio = keep_ratio
        self.interpolation = interpolation

    def __call__(self, im: Array, im_info: ImInfo | None = None) -> tuple[Array, ImInfo | None]:
        if len(self.target_size) != 2 or not (self.target_size[0] > 0 and self.target_size[1] > 0):
            raise ValueError(f"DetectionResize target_size must be two positive sizes, not {self.target_size!r}")
        scale_y, scale_x = self.generate_scale(im)
        im = cv2.resize(im, None, None, fx=scale_x, fy=scale_y, interpolation=self.interpolation)
        if im_info is not None:
            im_info["im_shape"] = np.array(im.shape[:2]).astype("float32")
            im_info["scale_factor"] = np.array([scale_y, scale_x]).astype("float32")
        return im, im_info

    def generate_scale(self, im: Array) -> tuple[float, float]:
        """The (y, x) scales the image is resized by."""
        origin_shape = im.shape[:2]
        if not self.keep_ratio:
            resize_h, resize_w = self.target_size
            return resize_h / float(origin_shape[0]), resize_w / float(origin_shape[1])
        size_max = np.max(origin_shape)
        target_max = np.max(self.target_size)
        scale = float(np.min(self.target_size)) / float(np.min(origin_shape))
        if np.round(scale * size_max) > target_max:
            scale = float(target_max) / float(size_max)
        return scale, scale

    def __repr__(self) -> str:
        return f"{type(self).__name__}(target_size={self.target_size}, keep_ratio={self.keep_ratio})"
