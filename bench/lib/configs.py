"""Bench configs: a repo config (configs/<name>.yml) with per-op overrides,
written to a temp YAML outside the repo for ``batchline serve`` or an
in-process op to load."""

from __future__ import annotations

import copy
import os
import tempfile
from collections.abc import Mapping
from typing import Any

from bench.lib.paths import CONFIG_DIR, cache_dir
from bench.lib.script import BenchError


def repo_config_path(name: str) -> str:
    path = os.path.join(CONFIG_DIR, name if name.endswith(".yml") else name + ".yml")
    if not os.path.isfile(path):
        raise BenchError(f"config {path} does not exist (yet)")
    return path


def load_yaml(path: str) -> dict:
    import yaml

    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def load_repo_config(name: str) -> dict:
    return load_yaml(repo_config_path(name))


def apply_overrides(
    config: Mapping[str, Any],
    ops: Mapping[str, Mapping[str, Any]] | None = None,
    all_ops: Mapping[str, Any] | None = None,
    top: Mapping[str, Any] | None = None,
    dag: Mapping[str, Any] | None = None,
    params: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict:
    """A deep copy of ``config`` with overrides applied.

    ``ops``: ``{op_name: {local_service_conf key: value}}``; ``all_ops``: keys
    set in every op's ``local_service_conf``; ``top``/``dag``: top-level and
    ``dag`` keys; ``params``: ``{op_name: {params key: value}}``. An unknown op name is an error (a typo would otherwise
    silently benchmark the unmodified config)."""
    out = copy.deepcopy(dict(config))
    op_section = out.setdefault("op", {})
    for conf in op_section.values():
        svc = conf.setdefault("local_service_conf", {}) or {}
        conf["local_service_conf"] = svc
        svc.update(all_ops or {})
    for name, keys in (ops or {}).items():
        if name not in op_section:
            raise BenchError(f"no op {name!r} in config (ops: {sorted(op_section)})")
        op_section[name]["local_service_conf"].update(keys)
    for name, keys in (params or {}).items():
        if name not in op_section:
            raise BenchError(f"no op {name!r} in config (ops: {sorted(op_section)})")
        op_section[name]["params"] = {**(op_section[name].get("params") or {}), **keys}
    out.update(top or {})
    if dag:
        out.setdefault("dag", {}).update(dag)
    return out


def write_config(config: Mapping[str, Any], tag: str = "bench") -> str:
    """Dump ``config`` to a temp YAML (under the configs' own tmp dir) and return its path."""
    import yaml

    fd, path = tempfile.mkstemp(prefix=f"batchline-{tag}-", suffix=".yml", dir=cache_dir("configs"))
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        yaml.safe_dump(dict(config), f, sort_keys=False, allow_unicode=True)
    return path


def derive_config(base: str, *, tag: str = "bench", **overrides: Any) -> str:
    """Temp YAML path: repo config ``base`` (e.g. "rec") with :func:`apply_overrides`."""
    return write_config(apply_overrides(load_repo_config(base), **overrides), tag=tag)


def pipeline_name(config_path: str) -> str:
    """The pipeline a config serves: its ``name``, else the file's base name."""
    data = load_yaml(config_path)
    return data.get("name") or os.path.splitext(os.path.basename(config_path))[0]
