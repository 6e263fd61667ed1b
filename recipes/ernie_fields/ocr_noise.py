"""OCR-like corruptions of a clean document line, for training the field classifier.

PP-OCR reads a printed line the way :func:`ocr_noise` writes it: word spaces
dropped (``Invoice No.`` -> ``InvoiceNo.``) or, more rarely, added inside a
word; letters and digits of the same shape swapped (``I``/``l``/``1``,
``O``/``0``, ``S``/``5``); full-width and half-width punctuation mixed
(``：`` for ``:``); a character dropped or doubled. The rates are those of a
readable page, so a noisy line stays what it was: the label does not change.
Deterministic from the ``random.Random`` handed in.
"""

from __future__ import annotations

import random

__all__ = ["CONFUSABLE", "FULL_WIDTH", "ocr_noise"]

#: what a character may be read as, by shape
CONFUSABLE: dict[str, str] = {
    "I": "l1|",
    "l": "I1|",
    "1": "lI",
    "i": "l",
    "O": "0oD",
    "0": "OoD",
    "o": "0",
    "D": "0",
    "S": "5s",
    "5": "S",
    "B": "8",
    "8": "B",
    "Z": "2",
    "2": "Z",
    "G": "6",
    "6": "G",
    "g": "9",
    "9": "g",
    "C": "c",
    "c": "C",
    "s": "S",
    "v": "V",
    "w": "W",
    "x": "X",
    "z": "Z",
    ".": ",",
    ",": ".",
    ":": ";",
    ";": ":",
    "-": "一—",
    "/": "l",
    "¥": "Y羊",
    "$": "S",
    "日": "曰",
    "已": "己",
    "未": "末",
    "入": "人",
    "土": "士",
    "元": "无",
    "号": "弓",
}
#: half-width characters and their full-width forms, both ways
FULL_WIDTH: dict[str, str] = {
    ":": "：",
    ",": "，",
    "(": "（",
    ")": "）",
    ";": "；",
    "#": "＃",
    "-": "－",
    "/": "／",
    "$": "＄",
    "¥": "￥",
    ".": "。",
}
_HALF_WIDTH = {v: k for k, v in FULL_WIDTH.items()}


def _spaces(text: str, rng: random.Random) -> str:
    """All word spaces dropped, some dropped, a word split in two, or untouched."""
    r = rng.random()
    if r < 0.35:
        return text.replace(" ", "")
    if r < 0.6:
        return "".join(ch for ch in text if ch != " " or rng.random() < 0.5)
    if r < 0.7 and len(text) > 3:
        at = rng.randrange(1, len(text) - 1)
        if text[at - 1] != " " and text[at] != " ":
            return text[:at] + " " + text[at:]
    return text


def _widths(text: str, rng: random.Random) -> str:
    """Half-width punctuation read as full-width, or the other way round."""
    table = FULL_WIDTH if rng.random() < 0.5 else _HALF_WIDTH
    rate = rng.uniform(0.3, 1.0)
    return "".join(table[ch] if ch in table and rng.random() < rate else ch for ch in text)


def _characters(text: str, rng: random.Random) -> str:
    """Confusable characters swapped; now and then one dropped or doubled."""
    rate = rng.uniform(0.02, 0.15)
    out = []
    for ch in text:
        if ch in CONFUSABLE and rng.random() < rate:
            out.append(rng.choice(CONFUSABLE[ch]))
        elif ch != " " and rng.random() < 0.01:
            continue  # dropped
        elif ch != " " and rng.random() < 0.01:
            out.append(ch + ch)
        else:
            out.append(ch)
    return "".join(out) or text


def ocr_noise(text: str, rng: random.Random) -> str:
    """``text`` as an OCR pass might read it: each kind of corruption applied or not, at random."""
    if rng.random() < 0.2:  # PP-OCR's commonest confusion, often for every I of a line
        text = text.replace("I", rng.choice("l1|"))
    if rng.random() < 0.8:
        text = _spaces(text, rng)
    if rng.random() < 0.25:
        text = _widths(text, rng)
    if rng.random() < 0.6:
        text = _characters(text, rng)
    if rng.random() < 0.1:
        text = text.upper() if rng.random() < 0.5 else text.lower()
    return text
