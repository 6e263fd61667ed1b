"""Rec model outputs to text, the two ways Paddle Serving 0.9's ``OCRReader`` decodes them.

``LodIndexDecoder``: the PP-OCRv1 models' in-graph CTC greedy decoder gives character indices (the blank is the
last index, the dictionary has no space). ``CTCLabelDecoder``: PP-OCRv2 and later give per-step
probabilities; the blank is index 0 and ``char_type='ch'`` adds a space as the last character."""

from collections.abc import Sequence
from typing import Any

import numpy as np

from serving.paddle_serving.reader.char_dict import EN_CHARACTERS, read_characters
from serving.paddle_serving.reader.types import Array

SUPPORTED_CHAR_TYPES = ("ch", "en")


def _characters(char_type: str, char_dict_path: str | None) -> list[str]:
    if char_type == "en":
        return list(EN_CHARACTERS)
    if char_type == "ch":
        if char_dict_path is None:
            raise ValueError("char_dict_path is needed when char_type is 'ch'")
        return read_characters(char_dict_path)
    raise ValueError(f"char_type {char_type!r} is not supported: one of {', '.join(SUPPORTED_CHAR_TYPES)}")


class LodIndexDecoder:
    """Character indices to text (Paddle Serving's ``CharacterOps`` for CTC): index ``len(character)`` is the
    blank and is skipped."""

    def __init__(self, char_type: str, char_dict_path: str | None) -> None:
        self.character_type = char_type
        self.character = _characters(char_type, char_dict_path)
        self.dict = {char: i for i, char in enumerate(self.character)}

    def get_char_num(self) -> int:
        return len(self.character)

    def encode(self, text: str) -> Array:
        """The indices of ``text``'s characters (lower-cased for ``en``), those not in the dictionary left out."""
        if self.character_type == "en":
            text = text.lower()
        return np.array([self.dict[char] for char in text if char in self.dict])

    def decode(self, text_index: Sequence[Any] | Array, is_remove_duplicate: bool = False) -> str:
        blank = self.get_char_num()
        chars = []
        for idx in range(len(text_index)):
            if text_index[idx] == blank:
                continue
            if is_remove_duplicate and idx > 0 and text_index[idx - 1] == text_index[idx]:
                continue
            chars.append(self.character[text_index[idx]])
        return "".join(chars)


class CTCLabelDecoder:
    """Per-step probabilities (batch x steps x classes) to ``(text, mean probability)`` per line (Paddle Serving's
    ``CTCLabelDecode``): best class per step, repeats merged, the blank (0) skipped; the score is the mean of the
    kept steps' probabilities (NaN, with numpy's warning, when none is kept)."""

    def __init__(self, char_type: str, char_dict_path: str | None) -> None:
        characters = _characters(char_type, char_dict_path)
        if char_type == "ch":
            characters.append(" ")
        self.character_type = char_type
        self.character = ["blank", *characters]
        self.dict = {char: i for i, char in enumerate(self.character)}

    def get_ignored_tokens(self) -> list[int]:
        return [0]

    def decode(
        self, text_index: Array, text_prob: Array | None = None, is_remove_duplicate: bool = False
    ) -> list[tuple[str, Any]]:
        ignored = self.get_ignored_tokens()
        result = []
        for batch_idx in range(len(text_index)):
            indices = text_index[batch_idx]
            chars = []
            confidences = []
            for idx in range(len(indices)):
                if indices[idx] in ignored:
                    continue
                if is_remove_duplicate and idx > 0 and indices[idx - 1] == indices[idx]:
                    continue
                chars.append(self.character[int(indices[idx])])
                confidences.append(text_prob[batch_idx][idx] if text_prob is not None else 1)
            result.append(("".join(chars), np.mean(confidences)))
        return result

    def __call__(self, preds: Array, label: Array | None = None) -> Any:
        text = self.decode(preds.argmax(axis=2), preds.max(axis=2), is_remove_duplicate=True)
        if label is None:
            return text
        return text, self.decode(label)
