"""YAML for config files: a SafeLoader that rejects duplicate mapping keys
anywhere, and YAML errors reported as ConfigErrors with line and column."""

from __future__ import annotations

from typing import Any

import yaml

from serving.config.errors import FILE_KEY, ConfigError


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
