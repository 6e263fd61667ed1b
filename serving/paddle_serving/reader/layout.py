"""Axis order (HWC -> CHW) and stride padding: the last steps before an image becomes a model's input."""

from collections.abc import Sequence

import numpy as np

from serving.paddle_serving.reader.types import Array, ImInfo


class Transpose:
    """``img.transpose(transpose_target)``, e.g. ``Transpose((2, 0, 1))`` for HWC -> CHW (a view)."""

    def __init__(self, transpose_target: Sequence[int]) -> None:
        self.transpose_target = transpose_target

    def __call__(self, img: Array) -> Array:
        return img.transpose(self.transpose_target)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.transpose_target})"


class DetectionTranspose(Transpose):
    """:class:`Transpose` in the Detection* form: ``(im, im_info) -> (im transposed, im_info)``."""

    def __call__(self, im: Array, im_info: ImInfo | None = None) -> tuple[Array, ImInfo | None]:  # type: ignore[override]
        return im.transpose(self.transpose_target), im_info


def pad_to_stride(img: Array, stride: int) -> Array:
    """A CHW image zero-padded at the bottom and right to multiples of ``stride``, float32."""
    channels, height, width = img.shape
    padded = np.zeros(
        (channels, int(np.ceil(float(height) / stride) * stride), int(np.ceil(float(width) / stride) * stride)),
        dtype=np.float32,
    )
    padded[:, :height, :width] = img
    return padded


class PadStride:
    """:func:`pad_to_stride` as a transform; ``stride`` 0 returns the image as it is."""

    def __init__(self, stride: int) -> None:
        self.coarsest_stride = stride

    def __call__(self, img: Array) -> Array:
        if self.coarsest_stride == 0:
            return img
        return pad_to_stride(img, self.coarsest_stride)


class DetectionPadStride:
    """:func:`pad_to_stride` in the Detection* form (for FPN models). As in Paddle Serving 0.9, a ``stride`` of 0
    or less returns the bare image, not an ``(im, im_info)`` pair."""

    def __init__(self, stride: int = 0) -> None:
        self.coarsest_stride = stride

    def __call__(self, im: Array, im_info: ImInfo | None = None) -> Array | tuple[Array, ImInfo | None]:
        if self.coarsest_stride <= 0:
            return im
        return pad_to_stride(im, self.coarsest_stride), im_info
