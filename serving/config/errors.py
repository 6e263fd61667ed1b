"""``ConfigError`` (lines ``<file>: <key.path>: <message>``) and pydantic's errors in that form."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from types import MappingProxyType, UnionType
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic.dataclasses import is_pydantic_dataclass
from pydantic.fields import FieldInfo

FILE_KEY = "(file)"
ROOT_KEY = "(top level)"


class ConfigError(ValueError):
    """An invalid config. Each line of the message is ``<file>: <key.path>: <message>``.

    ``problems``: every ``(key path, message)``; ``by_source``: them per file, in order;
    ``source``: the (first) file.
    """

    def __init__(self, source: str, key: str, message: str):
        self.source = source
        self.problems: list[tuple[str, str]] = [(key, message)]
        self.by_source: dict[str, list[tuple[str, str]]] = {source: list(self.problems)}
        super().__init__(f"{source}: {key}: {message}")

    @classmethod
    def many(cls, source: str, problems: list[tuple[str, str]]) -> ConfigError:
        return cls._of({source: list(problems)})

    @classmethod
    def combine(cls, errors: Sequence[ConfigError]) -> ConfigError:
        """One error holding every problem of ``errors``, grouped by file (files in first-seen order)."""
        by_source: dict[str, list[tuple[str, str]]] = {}
        for error in errors:
            for source, problems in error.by_source.items():
                by_source.setdefault(source, []).extend(problems)
        return cls._of(by_source)

    @classmethod
    def _of(cls, by_source: dict[str, list[tuple[str, str]]]) -> ConfigError:
        source, problems = next(iter(by_source.items()))
        err = cls(source, *problems[0])
        err.by_source = by_source
        err.problems = [problem for group in by_source.values() for problem in group]
        err.args = ("\n".join(f"{s}: {k}: {m}" for s, group in by_source.items() for k, m in group),)
        return err

    @property
    def key(self) -> str:
        return self.problems[0][0]


class FieldProblem(ValueError):
    """Raised by a model validator to pin a message on one of the model's fields."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


def _unwrap_optional(tp: Any) -> Any:
    if get_origin(tp) in (Union, UnionType):  # Optional[X] and X | None
        args = [a for a in get_args(tp) if a is not type(None)]
        return args[0] if len(args) == 1 else tp
    return tp


def model_fields(tp: Any) -> dict[str, FieldInfo] | None:
    """The fields of a pydantic model or pydantic dataclass (None: ``tp`` is neither)."""
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return dict(tp.model_fields)
    if is_pydantic_dataclass(tp):
        return dict(tp.__pydantic_fields__)
    return None


def _yaml_fields(tp: Any) -> dict[str, Any] | None:
    fields = model_fields(tp)
    return None if fields is None else {(f.alias or n): f.annotation for n, f in fields.items()}


def _known_keys(root: type, loc: tuple) -> list[str]:
    """The keys allowed where the unknown key ``loc[-1]`` was found."""
    tp: Any = root
    for part in loc[:-1]:
        tp = _unwrap_optional(tp)
        fields = _yaml_fields(tp)
        if fields is not None:
            if part not in fields:
                return []
            tp = fields[part]
        elif get_origin(tp) in (dict, Mapping):
            tp = get_args(tp)[1]
        elif get_origin(tp) is list:
            tp = get_args(tp)[0]
        else:
            return []
    tp = _unwrap_optional(tp)
    fields = _yaml_fields(tp)
    if fields is None:
        return []
    hidden: frozenset[str] = getattr(tp, "yaml_hidden_keys", frozenset())
    extra: frozenset[str] = getattr(tp, "yaml_extra_keys", frozenset())
    return [k for k in fields if k not in hidden] + sorted(extra)


# config keys whose values are secrets: never in a message
SECRET_KEYS = frozenset({"auth_token", "admin_token"})


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _unknown_key_message(key: Any, known: list[str]) -> str:
    close = difflib.get_close_matches(str(key), known, n=1)
    if close:
        return f"unknown key (did you mean {close[0]!r}?)"
    if known:
        return f"unknown key (known keys: {', '.join(known)})"
    return "unknown key"


_TYPE_NAMES = MappingProxyType(
    {
        "int": "an integer",
        "float": "a number",
        "bool": "true or false",
        "string": "a string",
        "list": "a list",
        "dict": "a mapping",
        "model": "a mapping",
        "model_attributes": "a mapping",
        "dataclass": "a mapping",
        "dataclass_exact": "a mapping",
    }
)
_BOUNDS = MappingProxyType({"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<=", "less_than": "<"})


def _error_message(err: Mapping[str, Any], root: type) -> tuple[tuple, str]:
    """``(loc, message)`` for one pydantic error dict."""
    loc = tuple(err["loc"])
    kind = err["type"]
    ctx = err.get("ctx") or {}
    got = "a value not shown (a secret)" if SECRET_KEYS.intersection(map(str, loc)) else _show(err.get("input"))
    if kind in ("extra_forbidden", "unexpected_keyword_argument"):
        return loc, _unknown_key_message(loc[-1], _known_keys(root, loc))
    if kind in ("missing", "missing_argument", "missing_keyword_only_argument"):
        return loc, "required key missing"
    if loc and loc[-1] == "[key]":
        key = loc[-2] if len(loc) > 1 else None
        return loc[:-2] + (str(key),), f"key must be a string, got {_show(key)}"
    base = kind.rsplit("_", 1)[0] if kind.endswith(("_type", "_parsing", "_from_float")) else None
    if kind == "int_from_float":
        base = "int"
    if base is not None and base in _TYPE_NAMES:
        return loc, f"must be {_TYPE_NAMES[base]}, got {got}"
    if kind in _BOUNDS:
        limit = next(iter(ctx.values()), "?")
        if isinstance(limit, float) and limit.is_integer():
            limit = int(limit)
        return loc, f"must be {_BOUNDS[kind]} {limit}, got {got}"
    if kind == "literal_error":
        return loc, f"must be one of {ctx.get('expected', '?')}, got {got}"
    if kind == "string_pattern_mismatch":
        return loc, f"must match {ctx.get('pattern', '?')}, got {got}"
    if kind in ("value_error", "assertion_error") and "error" in ctx:
        error = ctx["error"]
        if isinstance(error, FieldProblem):
            return loc + (error.field,), str(error)
        return loc, str(error)
    return loc, str(err.get("msg", kind))


def _dotted(prefix: str, loc: tuple) -> str:
    path = prefix
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path = f"{path}.{part}" if path else str(part)
    return path or ROOT_KEY


def validation_problems(exc: ValidationError, root: type, prefix: str = "") -> list[tuple[str, str]]:
    """A pydantic ``ValidationError`` -> ``[(key path, message)]`` (``prefix`` prepended)."""
    problems = []
    for err in exc.errors(include_url=False):
        loc, message = _error_message(err, root)
        problems.append((_dotted(prefix, loc), message))
    return problems
