"""numpy 1 spellings that Paddle Serving scripts use and numpy 2 removed, given back in a process that
runs a script, so the script runs as it was written for Paddle Serving 0.9 (whose users had numpy 1):

- ``np.fromstring(data, np.uint8)`` on bytes (its binary mode): half of the real scripts decode their
  base64 images so, and numpy 2 refuses every call (ValueError). It is ``np.frombuffer(...)`` copied,
  what numpy 1 returned (a writable array); text mode (``sep=...``) is numpy's own.
- ``np.float``, ``np.int``, ``np.complex``, ``np.object``, ``np.str``, ``np.unicode``: the builtins
  numpy 1 named so, where numpy no longer defines them.

Nothing numpy still does is changed, and a process that serves no script is left alone."""

from __future__ import annotations

import functools
import logging
import warnings
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

#: numpy 1's aliases of builtins (removed in numpy 1.24 and 2.0)
BUILTIN_ALIASES = {"float": float, "int": int, "complex": complex, "object": object, "str": str, "unicode": str}
_MARK = "__batchline_numpy_1__"  # on our fromstring: given back once per process


def _binary_fromstring_removed() -> bool:
    fromstring: Any = np.fromstring  # typed for text mode (sep=) only: binary mode is what is probed
    try:
        fromstring(b"\x00", dtype=np.uint8)
    except ValueError:
        return True
    return False


def _fromstring(original: Any) -> Any:
    @functools.wraps(original)
    def fromstring(string: Any, dtype: Any = float, count: int = -1, *, sep: str = "", like: Any = None) -> Any:
        if sep == "" and isinstance(string, (bytes, bytearray, memoryview)):
            return np.frombuffer(string, dtype=dtype, count=count).copy()
        return original(string, dtype, count, sep=sep, like=like)

    setattr(fromstring, _MARK, True)
    return fromstring


def give_back_numpy_1_spellings() -> list[str]:
    """Restore what this numpy lacks of the above; returns what it restored (empty: nothing to do, or done)."""
    restored = []
    if not getattr(np.fromstring, _MARK, False) and _binary_fromstring_removed():
        np.fromstring = _fromstring(np.fromstring)
        restored.append("np.fromstring on bytes")
    for name, value in BUILTIN_ALIASES.items():
        with warnings.catch_warnings():  # numpy warns that some of these names will come back
            warnings.simplefilter("ignore")
            present = hasattr(np, name)
        if not present:
            setattr(np, name, value)
            restored.append(f"np.{name}")
    if restored:
        log.info("numpy 1 spellings given back for Paddle Serving scripts (numpy %s): %s", np.__version__, restored)
    return restored
