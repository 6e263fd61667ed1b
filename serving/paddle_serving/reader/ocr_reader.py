"""Paddle Serving 0.9's ``OCRReader``: the rec model's input batch from cropped text lines, and its outputs
back to text.

Rec input height: Paddle Serving's ``resize_norm_img`` makes the batch ``int(32 * max_wh_ratio)`` wide for
``char_type='ch'`` whatever ``image_shape`` says, which fits the PP-OCRv1/v2 rec models (height 32). PP-OCRv3
and v4 rec models want height 48 and width ``48 * max_wh_ratio``: there, pass
``OCRReader(image_shape=[3, 48, 320], width_from_height=True)`` (a keyword of ours; its default, False, keeps
Paddle Serving's 32). ``image_shape=[3, 48, 320]`` alone would give height 48 but the width of 32, squeezing
each line to two thirds of its width, as it does in Paddle Serving."""

import math
from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any

import cv2
import numpy as np

from serving.paddle_serving.reader.char_dict import DEFAULT_CHAR_DICT
from serving.paddle_serving.reader.ctc import CTCLabelDecoder, LodIndexDecoder
from serving.paddle_serving.reader.types import Array

V1_INDICES = "ctc_greedy_decoder_0.tmp_0"
V1_PROBS = "softmax_0.tmp_0"
V2_OUTPUT = "save_infer_model/scale_0.tmp_1"


class OCRReader:
    """Arguments as Paddle Serving 0.9's (``algorithm`` and ``batch_num`` kept, unused there too), plus
    ``width_from_height`` (see the module's docstring). ``char_type``: ``'ch'`` (the dictionary at
    ``char_dict_path``) or ``'en'`` (digits and lower-case letters); others raise ``ValueError``."""

    def __init__(
        self,
        algorithm: str = "CRNN",
        image_shape: Sequence[int] = (3, 32, 320),
        char_type: str = "ch",
        batch_num: int = 1,
        char_dict_path: str = DEFAULT_CHAR_DICT,
        *,
        width_from_height: bool = False,
    ) -> None:
        self.algorithm = algorithm
        self.rec_image_shape = image_shape
        self.character_type = char_type
        self.rec_batch_num = batch_num
        self.width_from_height = width_from_height
        self.char_ops = LodIndexDecoder(char_type, char_dict_path)
        self.label_ops = CTCLabelDecoder(char_type, char_dict_path)

    def resize_norm_img(self, img: Array, max_wh_ratio: float) -> Array:
        """One HWC line image as the rec model's CHW float32 input: resized to the input height keeping its
        aspect (at most the batch width), scaled to [-1, 1], zero-padded on the right to the batch width."""
        channels, height, width = self.rec_image_shape
        if self.character_type == "ch":
            width = int((height if self.width_from_height else 32) * max_wh_ratio)
        ratio = img.shape[1] / float(img.shape[0])
        resized_w = width if math.ceil(height * ratio) > width else int(math.ceil(height * ratio))
        resized = cv2.resize(img, (resized_w, height)).astype("float32").transpose((2, 0, 1)) / 255
        resized -= 0.5
        resized /= 0.5
        padded = np.zeros((channels, height, width), dtype=np.float32)
        padded[:, :, 0:resized_w] = resized
        return padded

    def preprocess(self, img_list: Sequence[Array]) -> Array:
        """The first image of ``img_list`` as :meth:`resize_norm_img` makes it for the widest aspect in the list
        (Paddle Serving 0.9 returns only that one; ``ValueError`` when the list is empty)."""
        max_wh_ratio = 0.0
        for img in img_list:
            h, w = img.shape[0:2]
            max_wh_ratio = max(max_wh_ratio, w * 1.0 / h)
        batch = np.concatenate([self.resize_norm_img(img, max_wh_ratio)[np.newaxis, :] for img in img_list])
        return batch.copy()[0]

    def postprocess(self, outputs: MutableMapping[str, Any], with_score: bool = False) -> list[list[Any]]:
        """PP-OCRv1 rec outputs (the CTC decoder's indices and, ``with_score``, the softmax, each with its
        ``.lod``) to ``[text]`` or ``[text, score]`` per line; the score is the mean best probability of the
        steps whose best class is not the blank (the last). As in Paddle Serving, a softmax given as a list is
        replaced in ``outputs`` by its float32 array."""
        lod = outputs[V1_INDICES + ".lod"]
        indices = outputs[V1_INDICES]
        probs_lod: Any = outputs[V1_PROBS + ".lod"] if with_score else None
        result: list[list[Any]] = []
        for rno in range(len(lod) - 1):
            begin, end = lod[rno], lod[rno + 1]
            if isinstance(indices, list):
                line = [x[0] for x in indices[begin:end]]
            else:
                line = indices[begin:end, 0]
            text = self.char_ops.decode(line)
            if not with_score:
                result.append([text])
                continue
            if isinstance(outputs[V1_PROBS], list):
                outputs[V1_PROBS] = np.array(outputs[V1_PROBS]).astype(np.float32)
            probs = outputs[V1_PROBS][probs_lod[rno] : probs_lod[rno + 1], :]
            best = np.argmax(probs, axis=1)
            valid = np.where(best != (probs.shape[1] - 1))[0]
            result.append([text, np.mean(probs[valid, best[valid]])])
        return result

    def postprocess_ocrv2(self, outputs: Mapping[str, Any], with_score: bool = False) -> list[tuple[str, Any]]:
        """PP-OCRv2 and later rec output (``save_infer_model/scale_0.tmp_1``: lines x steps x classes, a numpy
        array or anything with ``.numpy()``) to ``(text, score)`` per line. ``with_score`` is accepted and
        ignored, as in Paddle Serving 0.9: the score is always there."""
        preds = outputs[V2_OUTPUT]
        if hasattr(preds, "numpy"):
            preds = preds.numpy()
        result: list[tuple[str, Any]] = self.label_ops(preds)
        return result
