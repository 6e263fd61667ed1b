"""Pipeline outputs -> JSON: a string per value for the Paddle Serving
endpoint (never a Python repr to ``eval``), plain JSON for the native one."""

from __future__ import annotations

import json
from typing import Any

import numpy as np


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")


def to_json(obj: Any) -> str:
    """JSON text of a pipeline output (numpy values converted; UTF-8 kept)."""
    return json.dumps(obj, ensure_ascii=False, default=_jsonable)


def plain(obj: Any) -> Any:
    """The output as plain JSON types (for embedding in a JSON answer)."""
    return json.loads(to_json(obj))
