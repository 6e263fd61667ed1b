"""Config files as plain data that travel to Ray Serve replicas and into a Ray Serve config
file; parsed exactly as files are, model paths resolved where parsed (on each node).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from serving.config.errors import ConfigError
from serving.config.file_set import RepositoryConfig, expand_sources, repository_from
from serving.config.load import parse_config, read_config
from serving.paths import PKG_SCHEME, resolve_pkg_path


@dataclass(frozen=True)
class ConfigDocument:
    source: str  # as the user named it (error messages)
    path: str  # resolved, where it was read (relative model paths resolve against its directory; see local_path)
    data: Any  # the YAML mapping as read

    def as_dict(self) -> dict[str, Any]:
        return {"source": self.source, "path": self.path, "data": self.data}

    @classmethod
    def from_dict(cls, value: Mapping[str, Any]) -> ConfigDocument:
        return cls(str(value["source"]), str(value["path"]), value["data"])


def read_documents(args: Sequence[str]) -> list[ConfigDocument]:
    """The config files named by ``args`` (files, directories, ``pkg://``), read but not validated."""
    documents, errors = [], []
    for file in expand_sources(args):
        try:
            path, data = read_config(file)
        except ConfigError as exc:
            errors.append(exc)
        else:
            documents.append(ConfigDocument(file, path, data))
    if errors:
        raise ConfigError.combine(errors)
    return documents


def local_path(doc: ConfigDocument) -> str:
    """Where relative paths resolve here: a ``pkg://`` source resolved again on this machine."""
    if doc.source.startswith(PKG_SCHEME):
        try:
            return resolve_pkg_path(doc.source)
        except ValueError:
            pass
    return doc.path


def parse_documents(documents: Sequence[ConfigDocument]) -> RepositoryConfig:
    """Validate and check a set of documents as one server would serve them (one ConfigError for all)."""
    configs, errors = [], []
    for doc in documents:
        try:
            configs.append((doc.source, parse_config(doc.data, doc.source, local_path(doc))))
        except ConfigError as exc:
            errors.append(exc)
    if errors:
        raise ConfigError.combine(errors)
    return repository_from([doc.source for doc in documents], configs)
