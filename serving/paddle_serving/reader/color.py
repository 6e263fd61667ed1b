"""Channel order swaps (BGR <-> RGB): a reversed view of the last axis, as Paddle Serving gives (no copy)."""

from serving.paddle_serving.reader.types import Array, ImInfo


class _ReverseChannels:
    """``img[:, :, ::-1]``: an HWC image's channels reversed (a view of ``img``)."""

    def __call__(self, img: Array) -> Array:
        return img[:, :, ::-1]

    def __repr__(self) -> str:
        return type(self).__name__ + "()"


class RGB2BGR(_ReverseChannels):
    """RGB to BGR: the channels reversed (a view)."""


class BGR2RGB(_ReverseChannels):
    """BGR to RGB: the channels reversed (a view)."""


class DetectionBGR2RGB:
    """:class:`BGR2RGB` in the Detection* form: ``(img, img_info) -> (img reversed, img_info)``."""

    def __call__(self, img: Array, img_info: ImInfo | None = None) -> tuple[Array, ImInfo | None]:
        return img[:, :, ::-1], img_info

    def __repr__(self) -> str:
        return type(self).__name__ + "()"
