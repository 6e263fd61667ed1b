"""Value rules several blocks of the config file share."""

from __future__ import annotations

from typing import Any

NAME_PATTERN = r"^[A-Za-z0-9_.-]+$"


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def none_as_empty(value: Any) -> Any:
    """A block written with no value (``tracer:``): its defaults."""
    return {} if value is None else value
