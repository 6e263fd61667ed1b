"""Pipeline outputs -> JSON: a string per value for the Paddle Serving
endpoint (never a Python repr to ``eval``), plain JSON for the native one.
Both through :mod:`serving.service.jsonio` (orjson)."""

from __future__ import annotations

from typing import Any

from serving.service import jsonio


def to_json(obj: Any) -> str:
    """JSON text of a pipeline output (numpy values converted; UTF-8 kept)."""
    return jsonio.dumps_text(obj)


def plain(obj: Any) -> Any:
    """The output as plain JSON types (for embedding in a JSON answer)."""
    return jsonio.loads(jsonio.dumps(obj))
