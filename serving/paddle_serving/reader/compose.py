"""Chaining transforms as Paddle Serving's ``Sequential`` and ``DetectionSequential`` do: user files build
their whole preprocessing with them."""

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from serving.paddle_serving.reader.types import Array, ImInfo


def _listing(name: str, transforms: Sequence[object]) -> str:
    return name + "(" + "".join(f"\n    {t}" for t in transforms) + "\n)"


class Sequential:
    """Apply ``transforms`` in order, each to what the one before gave."""

    def __init__(self, transforms: Sequence[Callable[[Any], Any]]) -> None:
        self.transforms = transforms

    def __call__(self, img: Any) -> Any:
        for transform in self.transforms:
            img = transform(img)
        return img

    def __repr__(self) -> str:
        return _listing(type(self).__name__, self.transforms)


class DetectionSequential:
    """Apply ``(im, im_info) -> (im, im_info)`` transforms in order, starting from Paddle Serving's
    ``im_info`` (``scale_factor`` [1, 1] float32, ``im_shape`` None); returns ``(im, im_info)``."""

    def __init__(self, transforms: Sequence[Callable[[Any, ImInfo], tuple[Any, ImInfo]]]) -> None:
        self.transforms = transforms

    def __call__(self, im: Array) -> tuple[Any, ImInfo]:
        im_info: ImInfo = {"scale_factor": np.array([1.0, 1.0], dtype=np.float32), "im_shape": None}
        result: Any = im
        for transform in self.transforms:
            result, im_info = transform(result, im_info)
        return result, im_info

    def __repr__(self) -> str:
        return _listing(type(self).__name__, self.transforms)
