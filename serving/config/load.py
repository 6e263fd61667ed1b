"""config.yml -> a validated :class:`ServingConfig`: YAML without duplicate keys, the Paddle
Serving pass (compat.py), pydantic validation (schema/), then op classes, ``params`` and the
DAG; every problem a :class:`ConfigError` line ``<file>: <key.path>: <message>``.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from serving.config.compat import Notes, normalize
from serving.config.dag import Dag, DagError
from serving.config.errors import FILE_KEY, ROOT_KEY, ConfigError, validation_problems
from serving.config.op_classes import resolve_op_class
from serving.config.schema import NAME_PATTERN, ServingConfig
from serving.paths import resolve_pkg_path

logger = logging.getLogger(__name__)


class _DuplicateKey(yaml.YAMLError):
    def __init__(self, path: str, message: str):
        super().__init__(message)
        self.path = path
        self.message = message


def _check_duplicates(node: yaml.Node, path: str, seen_nodes: set[int]) -> None:
    if id(node) in seen_nodes:
        return
    seen_nodes.add(id(node))
    if isinstance(node, yaml.MappingNode):
        lines: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else None
            child = f"{path}.{key}" if path else str(key)
            if key is not None and key != "<<":
                line = key_node.start_mark.line + 1
                if key in lines:
                    raise _DuplicateKey(child, f"duplicate key {key!r} (lines {lines[key]} and {line})")
                lines[key] = line
            _check_duplicates(value_node, child, seen_nodes)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _check_duplicates(item, f"{path}[{i}]", seen_nodes)


class UniqueKeyLoader(yaml.SafeLoader):
    """A SafeLoader that raises on a duplicate mapping key anywhere in the document."""

    def get_single_data(self) -> Any:
        node = self.get_single_node()
        if node is None:
            return None
        _check_duplicates(node, "", set())
        return self.construct_document(node)


def load_yaml(text: str, source: str) -> Any:
    try:
        return yaml.load(text, Loader=UniqueKeyLoader)  # noqa: S506 - SafeLoader subclass
    except _DuplicateKey as exc:
        raise ConfigError(source, exc.path, exc.message) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else FILE_KEY
        what = " ".join(str(p) for p in (exc.context, exc.problem) if p) or "invalid YAML"
        raise ConfigError(source, where, f"invalid YAML: {what}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(source, FILE_KEY, f"invalid YAML: {exc}") from None


def _bind_ops(config: ServingConfig) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    for op in config.ops:
        path = f"op.{op.name}"
        try:
            op_class = resolve_op_class(op.cls)
        except ValueError as exc:
            problems.append((f"{path}.class", str(exc)))
            continue
        op._op_class = op_class
        try:
            op._params_model = op_class.Params.model_validate(op.params)
        except ValidationError as exc:
            problems.extend(validation_problems(exc, op_class.Params, f"{path}.params"))
        if op_class.needs_model and op.local_service_conf.model_config is None:
            problems.append((f"{path}.local_service_conf.model_config", f"required by op class {op.cls!r}"))
        if op.local_service_conf.max_batch_units is not None and op_class.pad_unit is None:
            problems.append(
                (
                    f"{path}.local_service_conf.max_batch_units",
                    f"op class {op.cls!r} gives no item sizes (pad_unit, pad_extent), so the batcher cannot "
                    "count units: drop max_batch_units (or give the class pad_unit and pad_extent)",
                )
            )
        if op.local_service_conf.mask_padding and not op_class.feeds_extents:
            problems.append(
                (
                    f"{path}.local_service_conf.mask_padding",
                    f"op class {op.cls!r} does not feed its items' extents (feeds_extents), which a model with "
                    "masked padding takes: drop mask_padding",
                )
            )
    if problems:
        return problems
    try:
        config._dag_graph = Dag({op.name: op.input_ops for op in config.ops})
    except DagError as exc:
        key = f"op.{exc.op}.input_ops" if exc.op else "op"
        problems.append((key, str(exc)))
    return problems


def _default_name(stem: str) -> str:
    return stem if re.fullmatch(NAME_PATTERN, stem or "") else "pipeline"


def _parse(data: Any, source: str, base_dir: str, default_name: str, source_path: str) -> ServingConfig:
    if data is None:
        raise ConfigError(source, ROOT_KEY, "the file is empty; expected a mapping with an 'op:' section")
    if not isinstance(data, dict):
        raise ConfigError(source, ROOT_KEY, f"must be a mapping, got {type(data).__name__}")
    notes = Notes()
    data = normalize(data, default_name, notes)
    problems = notes.problems
    config = None
    try:
        config = ServingConfig.model_validate(data, context={"base_dir": base_dir})
    except ValidationError as exc:
        problems.extend(
            (notes.renamed.get(key, key), message) for key, message in validation_problems(exc, ServingConfig)
        )
    if problems:
        raise ConfigError.many(source, problems)
    assert config is not None
    config._source_path = source_path
    problems = _bind_ops(config)
    if problems:
        raise ConfigError.many(source, problems)
    if notes.ignored:
        logger.info(
            "%s: ignored Paddle Serving key(s) that have no meaning in batchline: %s", source, ", ".join(notes.ignored)
        )
    for key, message in notes.notices:
        logger.warning("%s: %s: %s", source, key, message)
    return config


def parse_config(data: Any, source: str = "<config>", path: str | None = None) -> ServingConfig:
    """Validate an already-loaded config mapping. ``source`` names it in errors; ``path``
    (default: ``source`` unless ``<...>``) gives the directory relative model paths resolve
    against, and the default ``name`` (its stem)."""
    if path is None and source.startswith("<"):
        return _parse(data, source, os.getcwd(), "pipeline", source)
    path = os.path.abspath(source if path is None else path)
    return _parse(data, source, os.path.dirname(path), _default_name(Path(path).stem), path)


def read_config(path: str | os.PathLike) -> tuple[str, Any]:
    """A config file's resolved path and its YAML data, not validated yet."""
    source = os.fspath(path)
    try:
        resolved = resolve_pkg_path(source)
    except ValueError as exc:
        raise ConfigError(source, FILE_KEY, str(exc)) from None
    try:
        text = Path(resolved).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(source, FILE_KEY, f"no such file: {resolved}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(source, FILE_KEY, f"cannot read: {exc}") from None
    return resolved, load_yaml(text, source)


def load_config(path: str | os.PathLike) -> ServingConfig:
    """Read, validate and resolve a config file (plain path or ``pkg://package/file.yml``)."""
    resolved, data = read_config(path)
    return parse_config(data, os.fspath(path), resolved)
