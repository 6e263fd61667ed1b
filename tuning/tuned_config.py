"""Writing the tuned config: the user's own file, comments and order kept
(ruamel.yaml round trip), with each changed key set and a comment beside it
saying why, with the predicted numbers."""

from __future__ import annotations

import io
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap


@dataclass(frozen=True)
class Change:
    """``op.<op>.local_service_conf.<key>`` becomes ``value`` (None: the key is removed), because ``why``."""

    op: str
    key: str
    value: Any
    why: str


def tuned_text(source_path: str, changes: list[Change], out_dir: str) -> str:
    """The YAML text of ``source_path`` with ``changes`` applied. Relative model
    paths are made absolute when the tuned file lives in another directory."""
    yaml = YAML()
    yaml.preserve_quotes = True
    yaml.width = 4096  # keep long flow lists on one line, as the user wrote them
    with open(source_path, encoding="utf-8") as f:
        data = yaml.load(f)
    src_dir = os.path.dirname(os.path.abspath(source_path))
    for op in (data.get("op") or {}).values():
        svc = op.get("local_service_conf")
        if isinstance(svc, Mapping) and os.path.abspath(out_dir) != src_dir:
            _absolute_model_dir(svc, src_dir)
    for change in changes:
        op = data["op"][change.op]
        if op.get("local_service_conf") is None:
            op["local_service_conf"] = CommentedMap()
        svc = op["local_service_conf"]
        if change.value is None:
            svc.pop(change.key, None)
            continue
        svc[change.key] = _plain(change.value)
        svc.yaml_add_eol_comment(f"tuned: {change.why}", change.key, column=32)
    out = io.StringIO()
    yaml.dump(data, out)
    return out.getvalue()


def _absolute_model_dir(svc: Any, src_dir: str) -> None:
    model = svc.get("model_config")
    if isinstance(model, str) and "://" not in model and not os.path.isabs(model):
        svc["model_config"] = os.path.normpath(os.path.join(src_dir, model))


def _plain(value: Any) -> Any:
    """A YAML-friendly value: lists as flow lists, like the shipped configs write them."""
    if isinstance(value, (list, tuple)):
        from ruamel.yaml.comments import CommentedSeq

        seq = CommentedSeq(value)
        seq.fa.set_flow_style()
        return seq
    return value
