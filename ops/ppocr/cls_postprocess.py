"""Ported from PaddleOCR 2.10.0 ``ppocr/postprocess/cls_postprocess.py`` (``ClsPostProcess``).
Copyright (c) 2020 PaddlePaddle Authors, Apache License 2.0 (http://www.apache.org/licenses/LICENSE-2.0).

Ported because importing ``ppocr.postprocess`` imports Paddle, which a GPU host running
``engine: torch`` does not carry. Dropped: the ``paddle.Tensor`` input and the label
branch (the cls op hands numpy probabilities and no label).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class ClsPostProcess:
    """Convert between text-label and text-index"""

    def __init__(self, label_list: Sequence[Any] | None = None, key: Any = None) -> None:
        self.label_list = label_list
        self.key = key

    def __call__(self, preds: Any) -> list[tuple[Any, Any]]:
        if self.key is not None:
            preds = preds[self.key]

        label_list: Any = self.label_list
        if label_list is None:
            label_list = {idx: idx for idx in range(preds.shape[-1])}

        pred_idxs = preds.argmax(axis=1)
        decode_out = [(label_list[idx], preds[i, idx]) for i, idx in enumerate(pred_idxs)]
        return decode_out
