"""A repository: several config files served by one process on one port. Each file is
validated alone, then the set is checked; every problem is raised in one :class:`ConfigError`.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from serving.config.errors import FILE_KEY, SECRET_KEYS, ConfigError
from serving.config.load import load_config
from serving.config.schema import HttpConf, RoutingConf, SecurityConf, ServingConfig, ShadowConf
from serving.paths import model_files, resolve_pkg_path

CONFIG_SUFFIXES = (".yml", ".yaml")
ARGUMENTS_SOURCE = "(arguments)"
# server-wide keys, and why two files cannot disagree on them
SERVER_KEYS = MappingProxyType(
    {
        "host": "one server binds one address",
        "http_port": "one server listens on one port",
        "rpc_port": "one server listens for gRPC on one port",
        "worker_num": "one server has one pool of HTTP threads",
        "auth_token": "one server checks one token",
        "admin_token": "one server checks one admin token",
        "http": "one server has one HTTP front",
        "security": "one server has one access policy",
        "decode_budget_mb": "one server has one decode budget",
    }
)
# server keys a reload applies to the running server (the others need a restart)
RELOADABLE_SERVER_KEYS = frozenset({"decode_budget_mb"})
# what of the pipeline's dag a shared stage depends on: its queue and priorities
SHARED_DAG_KEYS = ("channel_size", "priority_levels", "priority_max_wait_ms")


@dataclass(frozen=True)
class Route:
    """The versions of one pipeline name and how ``/{name}/prediction`` picks among them
    (``weights``: the versions that take routed traffic; see :func:`_route`)."""

    name: str
    versions: dict[int, ServingConfig]  # effective version -> config, ascending
    default: int
    weights: dict[int, int]
    key_header: str
    shadow: ShadowConf | None

    def config(self, version: int) -> ServingConfig:
        """The config of ``version`` (KeyError naming the versions when there is none)."""
        try:
            return self.versions[version]
        except KeyError:
            raise KeyError(
                f"pipeline {self.name!r} has no version {version} (versions: {_listed(self.versions)})"
            ) from None


@dataclass(frozen=True)
class SharedOp:
    """The ops of several pipelines that declare one share name: they run on one stage,
    built from the first of ``users`` (``(pipeline config, op name)``, in file order)."""

    name: str
    users: list[tuple[ServingConfig, str]]


@dataclass(frozen=True)
class RepositoryConfig:
    """A validated set of pipelines served together."""

    sources: list[str]  # the arguments as given (a reload re-reads these)
    files: list[str]  # the file of each pipeline, as expanded from sources (parallel to pipelines)
    pipelines: list[ServingConfig]  # in file order
    routes: dict[str, Route]  # pipeline name -> route, names in file order
    shares: dict[str, SharedOp]  # share name -> ops, in file order
    host: str
    http_port: int
    rpc_port: int | None  # gRPC (serving/grpc); None: none
    worker_num: int
    auth_token: str | None
    admin_token: str | None
    http: HttpConf
    security: SecurityConf
    decode_budget_mb: int | None
    max_queue_size: int  # sum of every pipeline's dag.max_queue_size (sizes the HTTP thread pool)

    def pipeline(self, name: str, version: int) -> ServingConfig:
        """The config of pipeline ``name`` at ``version`` (KeyError when there is none)."""
        if name not in self.routes:
            raise KeyError(f"no pipeline {name!r} (pipelines: {', '.join(self.routes)})")
        return self.routes[name].config(version)


def _expand(args: Sequence[str]) -> tuple[list[str], list[ConfigError]]:
    files: list[str] = []
    errors: list[ConfigError] = []
    seen: set[str] = set()
    for arg in args:
        try:
            resolved: str | None = resolve_pkg_path(arg)
        except ValueError:
            resolved = None  # load_config names the problem
        if resolved is not None and os.path.isdir(resolved):
            names = sorted(
                n
                for n in os.listdir(resolved)
                if n.endswith(CONFIG_SUFFIXES) and not n.startswith(".") and os.path.isfile(os.path.join(resolved, n))
            )
            if not names:
                errors.append(ConfigError(arg, FILE_KEY, "no *.yml or *.yaml file in this directory"))
            candidates: list[tuple[str, str | None]] = [
                (os.path.join(arg, n), os.path.join(resolved, n)) for n in names
            ]
        else:
            candidates = [(arg, resolved)]
        for path, real in candidates:
            # one file reached twice (a file and its directory) is read once
            identity = os.path.realpath(real) if real is not None else path
            if identity not in seen:
                seen.add(identity)
                files.append(path)
    return files, errors


def expand_sources(args: Sequence[str]) -> list[str]:
    """Config files named by ``args``: files as given, a directory as every ``*.yml`` and
    ``*.yaml`` in it (sorted, not recursive, no hidden files), each listed once. A directory
    without a config file raises :class:`ConfigError`; a missing file is the loader's to report.
    """
    files, errors = _expand(args)
    if errors:
        raise ConfigError.combine(errors)
    return files


def _digest(payload: Any) -> str:
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _class_name(config: ServingConfig, op_name: str) -> str:
    op = config.op[op_name]
    cls = op.op_class
    return f"{cls.__module__}:{cls.__qualname__}" if cls is not None else op.cls


def _op_identity(config: ServingConfig, op_name: str) -> dict[str, Any]:
    """What two ops must agree on to share one stage, flattened to dotted keys in a fixed order."""
    op = config.op[op_name]
    dumped = config.model_dump(mode="json", by_alias=True)["op"][op_name]
    # validated params: a default written out equals the default left out
    params = op.params_model.model_dump(mode="json") if op.params_model is not None else dumped["params"]
    identity = {
        "class": _class_name(config, op_name),
        "params": params,
        "local_service_conf": dumped["local_service_conf"],
        "input_ops": dumped["input_ops"],
        "timeout_ms": dumped["timeout_ms"],
        "retry": dumped["retry"],
        "dag": {key: getattr(config.dag, key) for key in SHARED_DAG_KEYS},
    }
    return _flat(identity, "")


def _flat(value: Any, prefix: str) -> dict[str, Any]:
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(_flat(item, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: value}


def op_fingerprint(config: ServingConfig, op_name: str) -> str:
    """A digest of what must be equal for two ops to share one stage (:func:`_op_identity`)."""
    return _digest(_op_identity(config, op_name))


def _model_stamp(model_dir: str) -> Any:
    try:
        files = model_files(model_dir)
    except FileNotFoundError as exc:
        return str(exc)
    stamps: list[list[Any]] = []
    for path in files:
        try:
            stat = os.stat(path)
        except OSError as exc:
            stamps.append([path, str(exc)])
        else:
            stamps.append([path, stat.st_size, stat.st_mtime_ns])
    return stamps


def pipeline_fingerprint(config: ServingConfig) -> str:
    """A digest of everything a built pipeline depends on; equal digests mean a reload can keep it.

    Model files count by size and mtime (weights replaced in place are a change);
    ``routing`` is left out: it belongs to the name's :class:`Route`.
    """
    payload = {
        "config": config.model_dump(mode="json", by_alias=True, exclude={"routing"}),
        "classes": {op.name: _class_name(config, op.name) for op in config.ops},
        "models": {
            op.name: _model_stamp(op.local_service_conf.model_config)
            for op in config.ops
            if op.local_service_conf.model_config is not None
        },
    }
    return _digest(payload)


def _listed(versions: Iterable[int]) -> str:
    return ", ".join(str(v) for v in sorted(versions))


@dataclass(frozen=True)
class _Entry:
    config: ServingConfig
    file: str


def _server_entry(entries: list[_Entry], key: str) -> _Entry:
    """The first file that sets server key ``key`` (else the first file: its default)."""
    return next((e for e in entries if key in e.config.model_fields_set), entries[0])


def _check_versions(entries: list[_Entry]) -> list[ConfigError]:
    errors = []
    first: dict[tuple[str, int], _Entry] = {}
    for entry in entries:
        key = (entry.config.name, entry.config.effective_version)
        if key in first:
            name, version = key
            message = f"pipeline {name!r} version {version} is already defined in {first[key].file}"
            errors.append(ConfigError(entry.file, "name", message))
        else:
            first[key] = entry
    return errors


def _check_body_budget(entries: list[_Entry]) -> list[ConfigError]:
    """``http.max_buffered_mb`` must hold the largest body served, else it would get 503 for ever."""
    chosen = _server_entry(entries, "http")
    budget_mb = chosen.config.http.max_buffered_mb
    if budget_mb is None:
        return []
    body, entry, op = max(
        ((e.config.op[s].local_service_conf.max_body_size, e, s) for e in entries for s in e.config.dag_graph.sources),
        key=lambda found: found[0],
    )
    if budget_mb << 20 >= body:
        return []
    where = f"op {op!r}" + ("" if entry is chosen else f" in {entry.file}")
    message = (
        f"{budget_mb} MiB is less than one request body of max_body_size {body} bytes ({where}): "
        f"at least {math.ceil(body / (1 << 20))}, or null (4 x the largest max_body_size)"
    )
    return [ConfigError(chosen.file, "http.max_buffered_mb", message)]


def _check_server_keys(entries: list[_Entry]) -> list[ConfigError]:
    errors = []
    for key, why in SERVER_KEYS.items():
        first: _Entry | None = None
        for entry in entries:
            if key not in entry.config.model_fields_set:
                continue
            if first is None:
                first = entry
                continue
            mine, theirs = getattr(entry.config, key), getattr(first.config, key)
            if mine == theirs:
                continue
            if key in SECRET_KEYS:  # never in a message
                message = f"differs from the {key} in {first.file} ({why})"
            else:
                message = f"{mine} conflicts with {theirs} in {first.file} ({why})"
            errors.append(ConfigError(entry.file, key, message))
    return errors


def _routing_problems(name: str, routing: RoutingConf, versions: set[int]) -> list[tuple[str, str]]:
    problems = []

    def missing(version: int) -> str:
        return f"version {version} of {name!r} does not exist (versions: {_listed(versions)})"

    if routing.default is not None and routing.default not in versions:
        problems.append(("routing.default", missing(routing.default)))
    for version in routing.weights or {}:
        if version not in versions:
            problems.append((f"routing.weights.{version}", missing(version)))
    if routing.shadow is not None:
        shadow = routing.shadow.version
        if shadow not in versions:
            problems.append(("routing.shadow.version", missing(shadow)))
        elif versions == {shadow}:
            message = f"version {shadow} is the only version of {name!r}: the shadow needs another version to serve"
            problems.append(("routing.shadow.version", message))
    return problems


def _check_routing(entries: list[_Entry]) -> list[ConfigError]:
    errors = []
    versions: dict[str, set[int]] = {}
    for entry in entries:
        versions.setdefault(entry.config.name, set()).add(entry.config.effective_version)
    owner: dict[str, _Entry] = {}
    for entry in entries:
        config = entry.config
        if config.routing is None:
            continue
        if config.name in owner:
            message = f"pipeline {config.name!r} already has a routing section in {owner[config.name].file}"
            errors.append(ConfigError(entry.file, "routing", message + " (one per pipeline name)"))
            continue
        owner[config.name] = entry
        problems = _routing_problems(config.name, config.routing, versions[config.name])
        if problems:
            errors.append(ConfigError.many(entry.file, problems))
    return errors


def _check_input_kinds(entries: list[_Entry]) -> list[ConfigError]:
    """Versions of one name share its URL, so they must take the same input (image or text)."""
    errors = []
    first: dict[str, _Entry] = {}
    for entry in entries:
        name = entry.config.name
        if name not in first:
            first[name] = entry
            continue
        mine, theirs = entry.config.input_kind, first[name].config.input_kind
        if mine != theirs:
            message = (
                f"version {entry.config.effective_version} of {name!r} takes {mine or 'mixed'} input, "
                f"but {first[name].file} takes {theirs or 'mixed'}: versions of one pipeline share its URL"
            )
            errors.append(ConfigError(entry.file, "op", message))
    return errors


def _first_difference(mine: dict[str, Any], theirs: dict[str, Any]) -> tuple[str, Any, Any] | None:
    for key in [*mine, *(k for k in theirs if k not in mine)]:
        a, b = mine.get(key, "(unset)"), theirs.get(key, "(unset)")
        if a != b:
            return key, a, b
    return None


def _check_shares(entries: list[_Entry]) -> list[ConfigError]:
    errors = []
    first: dict[str, tuple[_Entry, str]] = {}
    for entry in entries:
        in_this: dict[str, str] = {}
        for op in entry.config.ops:
            share = op.share_name
            if share is None:
                continue
            key = f"op.{op.name}.share"
            if share in in_this:
                message = f"share {share!r} is already op {in_this[share]!r} of this pipeline (one op per pipeline)"
                errors.append(ConfigError(entry.file, key, message))
                continue
            in_this[share] = op.name
            if share not in first:
                first[share] = (entry, op.name)
                continue
            other, other_op = first[share]
            diff = _first_difference(_op_identity(entry.config, op.name), _op_identity(other.config, other_op))
            if diff is not None:
                what, mine, theirs = diff
                message = (
                    f"share {share!r} needs one op everywhere, but {what} is {_shown(mine)} here and "
                    f"{_shown(theirs)} in op {other_op!r} of {other.file}"
                )
                errors.append(ConfigError(entry.file, key, message))
    return errors


def _shown(value: Any) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _route(name: str, entries: list[_Entry]) -> Route:
    versions = {e.config.effective_version: e.config for e in sorted(entries, key=lambda e: e.config.effective_version)}
    routing = next((e.config.routing for e in entries if e.config.routing is not None), None)
    if routing is None:
        top = max(versions)
        return Route(name, versions, top, {top: 1}, RoutingConf().key_header, None)
    shadow = routing.shadow.version if routing.shadow is not None else None
    weights = {v: w for v, w in sorted((routing.weights or {}).items()) if w > 0}
    if routing.default is not None:
        default = routing.default
    elif weights:  # the version most traffic goes to (ties: the highest)
        default = max(weights, key=lambda v: (weights[v], v))
    else:
        default = max(v for v in versions if v != shadow)
    return Route(name, versions, default, weights or {default: 1}, routing.key_header, routing.shadow)


def _build(sources: list[str], entries: list[_Entry]) -> RepositoryConfig:
    errors = (
        _check_versions(entries)
        + _check_server_keys(entries)
        + _check_body_budget(entries)
        + _check_routing(entries)
        + _check_shares(entries)
        + _check_input_kinds(entries)
    )
    if errors:
        raise ConfigError.combine(errors)
    by_name: dict[str, list[_Entry]] = {}
    shares: dict[str, SharedOp] = {}
    for entry in entries:
        by_name.setdefault(entry.config.name, []).append(entry)
        for op in entry.config.ops:
            if op.share_name is not None:
                shares.setdefault(op.share_name, SharedOp(op.share_name, [])).users.append((entry.config, op.name))
    return RepositoryConfig(
        sources=sources,
        files=[e.file for e in entries],
        pipelines=[e.config for e in entries],
        routes={name: _route(name, group) for name, group in by_name.items()},
        shares=shares,
        **{key: getattr(_server_entry(entries, key).config, key) for key in SERVER_KEYS},
        max_queue_size=sum(e.config.dag.max_queue_size for e in entries),
    )


def load_repository(args: Sequence[str]) -> RepositoryConfig:
    """Read, validate and check the config files named by ``args`` (see :func:`expand_sources`)."""
    sources = list(args)
    if not sources:
        raise ConfigError(ARGUMENTS_SOURCE, FILE_KEY, "no config file or directory given")
    files, errors = _expand(sources)
    entries = []
    for file in files:
        try:
            entries.append(_Entry(load_config(file), file))
        except ConfigError as exc:
            errors.append(exc)
    if errors:
        raise ConfigError.combine(errors)
    return _build(sources, entries)


def repository_from(sources: Sequence[str], parsed: Sequence[tuple[str, ServingConfig]]) -> RepositoryConfig:
    """A repository of configs already parsed, each with the file name its errors name; checked as a set."""
    return _build(list(sources), [_Entry(config, file) for file, config in parsed])


def repository_of(config: ServingConfig) -> RepositoryConfig:
    """A repository of one already-parsed config (its routing is checked against its one version)."""
    return _build([config.source_path], [_Entry(config, config.source_path)])
