"""Pixel scaling (``Div``) and per-channel mean/std normalization, with Paddle Serving's dtype rules: float32
results, the mean and std subtracted and divided in place as float64 arrays (so rounding matches theirs)."""

from collections.abc import Sequence

import numpy as np

from serving.paddle_serving.reader.types import Array, ImInfo


class Div:
    """``img.astype(float32) / value``."""

    def __init__(self, value: float) -> None:
        self.value = value

    def __call__(self, img: Array) -> Array:
        result: Array = img.astype("float32") / self.value
        return result

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.value})"


class Normalize:
    """``(img - mean) / std`` per channel, float32. Three channels: ``channel_first`` says whether ``img`` is CHW
    (else HWC, the default). Unlike torchvision's it does not divide by 255 first: chain a ``Div(255)``."""

    def __init__(self, mean: Sequence[float], std: Sequence[float], channel_first: bool = False) -> None:
        self.mean = mean
        self.std = std
        self.channel_first = channel_first

    def __call__(self, img: Array) -> Array:
        shape = (3, 1, 1) if self.channel_first else (1, 1, 3)
        out = np.array(img).astype("float32")
        out -= np.array(self.mean).reshape(shape)
        out /= np.array(self.std).reshape(shape)
        return out

    def __repr__(self) -> str:
        return f"{type(self).__name__}(mean={self.mean}, std={self.std})"


class DetectionNormalize:
    """Normalize in the Detection* form: an HWC image to float32 (``/ 255`` first when ``is_scale``), then
    ``(im - mean) / std``; ``(im, im_info) -> (im, im_info)``. As in Paddle Serving, a float32 input with
    ``is_scale=False`` is normalized in place."""

    def __init__(self, mean: Sequence[float], std: Sequence[float], is_scale: bool = True) -> None:
        self.mean = mean
        self.std = std
        self.is_scale = is_scale

    def __call__(self, im: Array, im_info: ImInfo | None = None) -> tuple[Array, ImInfo | None]:
        im = im.astype(np.float32, copy=False)
        if self.is_scale:
            im = im / 255.0
        im -= np.array(self.mean)[np.newaxis, np.newaxis, :]
        im /= np.array(self.std)[np.newaxis, np.newaxis, :]
        return im, im_info

    def __repr__(self) -> str:
        return f"{type(self).__name__}(mean={self.mean}, std={self.std})"
