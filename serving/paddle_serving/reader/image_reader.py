"""Paddle Serving 0.9's ``ImageReader``: the ImageNet classification preprocessing in one object (decode, short
side resized, cropped, RGB, CHW, mean/std normalized), for the image classification examples."""

import logging
from collections.abc import Sequence

import cv2
import numpy as np

from serving.paddle_serving.reader.decode import decode_image
from serving.paddle_serving.reader.types import Array

_LOGGER = logging.getLogger(__name__)


class ImageReader:
    """``process_image(encoded bytes)`` gives a CHW float32 image of ``image_shape`` (a center crop when
    ``crop_center``, else a random one), or ``None`` when the bytes do not decode (logged)."""

    def __init__(
        self,
        image_shape: Sequence[int] = (3, 224, 224),
        image_mean: Sequence[float] = (0.485, 0.456, 0.406),
        image_std: Sequence[float] = (0.229, 0.224, 0.225),
        resize_short_size: int = 256,
        interpolation: int | None = None,
        crop_center: bool = True,
    ) -> None:
        self.image_mean = image_mean
        self.image_std = image_std
        self.image_shape = image_shape
        self.resize_short_size = resize_short_size
        self.interpolation = interpolation
        self.crop_center = crop_center

    def resize_short(self, img: Array, target_size: int, interpolation: int | None = None) -> Array:
        """``img`` scaled so its short side is ``target_size`` (sides rounded); a falsy ``interpolation``
        means OpenCV's default."""
        percent = float(target_size) / min(img.shape[0], img.shape[1])
        size = (int(round(img.shape[1] * percent)), int(round(img.shape[0] * percent)))
        if interpolation:
            return cv2.resize(img, size, interpolation=interpolation)
        return cv2.resize(img, size)

    def crop_image(self, img: Array, target_size: int, center: bool) -> Array:
        """A ``target_size`` square of ``img``: the central one, or a random one (numpy's global generator)."""
        height, width = img.shape[:2]
        if center:
            w_start = (width - target_size) // 2
            h_start = (height - target_size) // 2
        else:
            w_start = np.random.randint(0, width - target_size + 1)
            h_start = np.random.randint(0, height - target_size + 1)
        return img[h_start : h_start + target_size, w_start : w_start + target_size, :]

    def process_image(self, sample: bytes) -> Array | None:
        img = decode_image(sample)
        if img is None:
            _LOGGER.warning("ImageReader: the image does not decode, passing it")
            return None
        crop_size = self.image_shape[1]
        if crop_size > 0:
            img = self.resize_short(img, self.resize_short_size, interpolation=self.interpolation)
            img = self.crop_image(img, target_size=crop_size, center=self.crop_center)
        chw = img[:, :, ::-1].astype("float32").transpose((2, 0, 1)) / 255
        chw -= np.array(self.image_mean).reshape((3, 1, 1))
        chw /= np.array(self.image_std).reshape((3, 1, 1))
        return chw
