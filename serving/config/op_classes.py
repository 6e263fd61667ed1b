"""Op class lookup: a config's ``class`` (a builtin name or an import path, imported only when
resolved) -> a :class:`serving.op.Op` subclass.
"""

from __future__ import annotations

import difflib
import importlib
from types import MappingProxyType, ModuleType

from serving.op import Op

BUILTIN_OPS = MappingProxyType(
    {
        "ocr_det": "ops.ocr_det:OcrDetOp",
        "ocr_cls": "ops.ocr_cls:OcrClsOp",
        "ocr_rec": "ops.ocr_rec:OcrRecOp",
        "ernie_cls": "ops.ernie:ErnieClsOp",
    }
)


class OpClassError(ValueError):
    """An op class spec that cannot be resolved (unknown, import failure, not an Op)."""


def _split(spec: str) -> tuple[str, str]:
    """``"a.b:C"`` or ``"a.b.C"`` -> ``("a.b", "C")``."""
    if ":" in spec:
        module, _, attr = spec.partition(":")
    else:
        module, _, attr = spec.rpartition(".")
    if not module or not attr:
        close = difflib.get_close_matches(spec, list(BUILTIN_OPS), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise OpClassError(
            f"unknown op class {spec!r}: {hint}expected a builtin op ({', '.join(BUILTIN_OPS)}) "
            "or a dotted path 'package.module:Class'"
        )
    return module, attr


def _import(module: str, spec: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if missing and (module == missing or module.startswith(missing + ".")):
            raise OpClassError(f"cannot resolve op class {spec!r}: no module named {missing!r}") from exc
        raise OpClassError(f"cannot import {module!r} for op class {spec!r}: {exc}") from exc
    except Exception as exc:  # the module itself failed while importing
        raise OpClassError(f"importing {module!r} for op class {spec!r} failed: {type(exc).__name__}: {exc}") from exc


def resolve_op_class(spec: str) -> type[Op]:
    """The :class:`Op` subclass named by ``spec``; :class:`OpClassError` naming ``spec`` otherwise."""
    if not isinstance(spec, str) or not spec.strip():
        raise OpClassError(f"op class must be a non-empty string, got {spec!r}")
    spec = spec.strip()
    target = BUILTIN_OPS.get(spec, spec)
    module_name, attr_path = _split(target)
    obj = _import(module_name, spec)
    for part in attr_path.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise OpClassError(
                f"cannot resolve op class {spec!r}: {module_name!r} has no attribute {attr_path!r}"
            ) from None
    if not (isinstance(obj, type) and issubclass(obj, Op)):
        raise OpClassError(f"op class {spec!r} resolves to {obj!r}, which is not a subclass of serving.op.Op")
    return obj
