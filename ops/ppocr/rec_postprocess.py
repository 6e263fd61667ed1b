"""Ported from PaddleOCR 2.10.0 ``ppocr/postprocess/rec_postprocess.py``: the dictionary
of ``CTCLabelDecode`` (``BaseRecLabelDecode.__init__``, ``add_special_char``,
``pred_reverse``). Copyright (c) 2020 PaddlePaddle Authors, Apache License 2.0
(http://www.apache.org/licenses/LICENSE-2.0).

Ported because importing ``ppocr.postprocess`` imports Paddle, which a GPU host running
``engine: torch`` does not carry. Only what the rec op reads is here: the characters
(one a line, the space appended with ``use_space_char``, the blank at index 0),
``reverse`` for arabic dictionaries and ``pred_reverse``. The decode itself is
ops/ctc.py's (the same numbers in one pass; tests/unit/test_ctc.py holds it to
PaddleOCR's ``CTCLabelDecode``).
"""

from __future__ import annotations

import re


class CtcDictionary:
    """PaddleOCR's ``CTCLabelDecode`` dictionary: ``character[0]`` is the CTC blank."""

    def __init__(self, character_dict_path: str | None = None, use_space_char: bool = False) -> None:
        self.reverse = False
        if character_dict_path is None:
            dict_character = list("0123456789abcdefghijklmnopqrstuvwxyz")
        else:
            character_str: list[str] = []
            with open(character_dict_path, "rb") as fin:
                lines = fin.readlines()
                for raw in lines:
                    line = raw.decode("utf-8").strip("\n").strip("\r\n")
                    character_str.append(line)
            if use_space_char:
                character_str.append(" ")
            dict_character = list(character_str)
            if "arabic" in character_dict_path:
                self.reverse = True
        self.character = ["blank"] + dict_character

    def pred_reverse(self, pred: str) -> str:
        pred_re = []
        c_current = ""
        for c in pred:
            if not bool(re.search("[a-zA-Z0-9 :*./%+-]", c)):
                if c_current != "":
                    pred_re.append(c_current)
                pred_re.append(c)
                c_current = ""
            else:
                c_current += c
        if c_current != "":
            pred_re.append(c_current)

        return "".join(pred_re[::-1])
